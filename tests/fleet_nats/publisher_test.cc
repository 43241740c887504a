// The agent's fleet publisher against a real nats-server: the store buffers while NATS is
// down, everything arrives once and in order afterwards, a restart loses nothing.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "daemon/fleet_publisher.h"
#include "daemon/log.h"
#include "fleet/wire.h"
#include "nats_server.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {

using fleet::nats::Connection;
using fleet::nats::ConsumerConfig;
using fleet::nats::StreamConfig;
using fleet::nats::testing::ConnectOrFail;
using fleet::nats::testing::EnsureStreamRetrying;
using fleet::nats::testing::NatsServer;
using fleet::nats::testing::OptionsFor;
using fleet::nats::testing::TempDir;
using fleet::nats::testing::WaitUntil;

constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;

Observation Reading(int i, const std::string& node = "gpu-07") {
  Observation o;
  o.time_ns = kT0 + int64_t{i} * 1'000'000'000;
  o.node = node;
  o.layer = Layer::kGpu;
  o.component = ComponentRef{ComponentType::kGpu, std::to_string(i % 8), {{"uuid", "GPU-" + std::to_string(i % 8)}}};
  o.kind = ObsKind::kPower;
  o.value = 300.0 + i;  // each one distinct: stored as its own row
  o.source = Source::kNvml;
  o.text = "power " + std::to_string(i);
  return o;
}

// Everything the stream holds for the publisher, decoded, in stream order.
struct Received {
  std::vector<int64_t> observation_ids;
  std::vector<fleet::Envelope> records;  // findings, diagnoses, actions
  size_t messages = 0;
};

Received ReadStream(Connection& c, const std::string& durable, size_t expect_observations, size_t expect_records) {
  ConsumerConfig cc;
  cc.stream = "FAULTLINE";
  cc.durable = durable;
  auto consumer = c.BindPullConsumer(cc);
  EXPECT_TRUE(consumer.ok()) << consumer.status().ToString();
  Received out;
  if (!consumer.ok()) return out;
  auto take = [&](int64_t timeout_ns) {
    auto msgs = (*consumer)->Fetch(100, timeout_ns);
    if (!msgs.ok()) return;
    for (auto& m : *msgs) {
      ++out.messages;
      auto e = fleet::Decode(m.data());
      EXPECT_TRUE(e.ok()) << e.status().ToString();
      if (e.ok()) {
        EXPECT_EQ(m.msg_id(), e->msg_id);
        EXPECT_EQ(m.subject(), fleet::Subject(e->place, e->kind));
        if (e->kind == fleet::RecordKind::kObservations) {
          out.observation_ids.insert(out.observation_ids.end(), e->observation_ids.begin(), e->observation_ids.end());
        } else {
          out.records.push_back(*e);
        }
      }
      EXPECT_TRUE(m.Ack().ok());
    }
  };
  WaitUntil([&] {
    take(200'000'000);
    return out.observation_ids.size() >= expect_observations && out.records.size() >= expect_records;
  });
  take(300'000'000);  // anything beyond: a duplicate would show here
  return out;
}

// The default stream, with a limit this machine's disk can reserve.
StreamConfig SmallStream() {
  StreamConfig c;
  c.max_bytes = 256 << 20;
  return c;
}

std::vector<int64_t> Iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i <= to; ++i) v.push_back(i);
  return v;
}

class FleetPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NATS_SERVER();
    server_ = std::make_unique<NatsServer>(dir_.File("srv"), "s1");
    auto s = Store::Open(dir_.File("agent.db"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
  }

  FleetPublisherOptions Options() {
    FleetPublisherOptions o;
    o.connect = OptionsFor({server_->url()});
    o.site = "lab";
    o.rack = "r12";
    o.node = "gpu-07";
    o.interval_ns = 50'000'000;
    o.max_backoff_ns = 200'000'000;
    o.max_observations_per_envelope = 40;
    o.ack_timeout_ns = 2'000'000'000;
    return o;
  }

  void StoreReadings(int from, int to) {
    std::vector<Observation> batch;
    for (int i = from; i <= to; ++i) batch.push_back(Reading(i));
    ASSERT_TRUE(store_->Append(batch).ok());
  }

  void StoreRecords(int n) {
    for (int i = 0; i < n; ++i) {
      Finding f;
      f.layer = Layer::kGpu;
      f.fault_class = FaultClass::kGpuThermal;
      f.first_ns = kT0;
      f.last_ns = kT0 + i;
      f.summary = "hot " + std::to_string(i);
      ASSERT_TRUE(store_->PutFinding("gpu-07", f).ok());
    }
    Diagnosis d;
    d.fault_class = FaultClass::kGpuThermal;
    d.action = Action::kDrain;
    d.summary = "gpu 3 too hot";
    auto id = store_->PutDiagnosis("gpu-07", d, kT0);
    ASSERT_TRUE(id.ok());
    ActionRecord a;
    a.node = "gpu-07";
    a.time_ns = kT0;
    a.action = Action::kDrain;
    a.diagnosis_id = *id;
    a.outcome = "ok";
    ASSERT_TRUE(store_->PutAction(a).ok());
  }

  // The saved cursor, or "" while none is saved yet: a wait polls before the first
  // round commits one, and an empty optional must not be dereferenced.
  std::string Cursor(const std::string& name) {
    auto c = store_->GetCursor("gpu-07", "fleet", name);
    return c.ok() && c->has_value() ? **c : std::string();
  }

  std::unique_ptr<Connection> StartServerWithStream() {
    EXPECT_TRUE(server_->Start());
    auto c = ConnectOrFail(OptionsFor({server_->url()}));
    if (c) {
      EXPECT_TRUE(EnsureStreamRetrying(*c, SmallStream()).ok());
    }
    return c;
  }

  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
  std::unique_ptr<Store> store_;
  FakeClock clock_{kT0};
};

TEST_F(FleetPublisherTest, WhileNatsIsDownTheStoreBuffersThenEverythingArrivesOnceInOrder) {
  StoreReadings(1, 150);
  StoreRecords(3);
  FleetPublisher pub(*store_, Options(), clock_, nullptr);
  auto down = pub.PublishOnce();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status().ToString();
  EXPECT_FALSE(store_->GetCursor("gpu-07", "fleet", "obs_after_id")->has_value());

  auto c = StartServerWithStream();
  ASSERT_NE(c, nullptr);
  StoreReadings(151, 200);  // more while catching up
  ASSERT_TRUE(WaitUntil([&] { return pub.PublishOnce().ok(); }));
  auto got = ReadStream(*c, "check", 200, 5);
  EXPECT_EQ(got.observation_ids, Iota(1, 200));
  ASSERT_EQ(got.records.size(), 5u);
  EXPECT_EQ(got.records[0].kind, fleet::RecordKind::kFinding);
  EXPECT_EQ(got.records[0].finding->summary, "hot 0");
  EXPECT_EQ(got.records[0].place, (fleet::NodePlace{"lab", "r12", "gpu-07"}));
  EXPECT_EQ(got.records[3].kind, fleet::RecordKind::kDiagnosis);
  EXPECT_EQ(got.records[3].diagnosis->summary, "gpu 3 too hot");
  EXPECT_EQ(got.records[4].kind, fleet::RecordKind::kAction);
  EXPECT_EQ(got.records[4].action->diagnosis_id, got.records[3].row_id);
  EXPECT_EQ(pub.stats().observations, 200u);
  EXPECT_EQ(pub.stats().records, 5u);
  EXPECT_EQ(Cursor("obs_after_id"), "200");
  // Nothing new: a round publishes nothing and the stream holds no more.
  EXPECT_EQ(*pub.PublishOnce(), 0u);
  EXPECT_EQ(c->GetStream("FAULTLINE")->messages, got.messages);
}

TEST_F(FleetPublisherTest, AServerCrashMidStreamLosesNothingAndTheThreadCatchesUp) {
  auto c = StartServerWithStream();
  ASSERT_NE(c, nullptr);
  FleetPublisher pub(*store_, Options(), clock_, nullptr);
  pub.Start();
  StoreReadings(1, 100);
  ASSERT_TRUE(WaitUntil([&] { return pub.stats().observations >= 100; }));
  server_->Kill();
  StoreReadings(101, 260);  // stored while NATS is down
  StoreRecords(2);
  ASSERT_TRUE(WaitUntil([&] { return pub.stats().failed_rounds > 0; }));
  ASSERT_TRUE(server_->Start());
  ASSERT_TRUE(WaitUntil([&] { return Cursor("action_after_id") == "1"; }, 30));
  pub.Stop();
  auto reader = ConnectOrFail(OptionsFor({server_->url()}));
  ASSERT_NE(reader, nullptr);
  auto got = ReadStream(*reader, "check", 260, 4);
  EXPECT_EQ(got.observation_ids, Iota(1, 260));
  EXPECT_EQ(got.records.size(), 4u);
}

TEST_F(FleetPublisherTest, ARestartResumesAtTheCursorAndResentEnvelopesAreDroppedByMsgId) {
  auto c = StartServerWithStream();
  ASSERT_NE(c, nullptr);
  StoreReadings(1, 120);
  FleetPublisherOptions o = Options();
  o.max_rows_per_round = 80;
  {
    FleetPublisher first(*store_, o, clock_, nullptr);
    ASSERT_TRUE(first.PublishOnce().ok());
    EXPECT_TRUE(first.behind());
    EXPECT_EQ(first.stats().observations, 80u);
  }
  // A crash between the acks and the cursor's commit: the cursor is behind what the
  // stream holds.
  ASSERT_TRUE(store_->PutCursors({{"gpu-07", "fleet", "obs_after_id", "40"}}).ok());
  FleetPublisher second(*store_, o, clock_, nullptr);
  ASSERT_TRUE(second.PublishOnce().ok());
  EXPECT_EQ(second.stats().duplicates, 1u);  // ids 41-80: the same envelope, the same msg id
  while (second.behind()) ASSERT_TRUE(second.PublishOnce().ok());
  auto got = ReadStream(*c, "check", 120, 0);
  EXPECT_EQ(got.observation_ids, Iota(1, 120));
}

TEST_F(FleetPublisherTest, ACursorAboveTheTablesIdsStartsThatTableOver) {
  auto c = StartServerWithStream();
  ASSERT_NE(c, nullptr);
  StoreRecords(1);  // finding 1, diagnosis 1, action 1
  // As after retention emptied the tables: ids began again below the saved cursors.
  ASSERT_TRUE(
      store_
          ->PutCursors({{"gpu-07", "fleet", "diagnosis_after_id", "57"}, {"gpu-07", "fleet", "finding_after_id", "1"}})
          .ok());
  FleetPublisher pub(*store_, Options(), clock_, nullptr);
  ASSERT_TRUE(pub.PublishOnce().ok());
  auto got = ReadStream(*c, "check", 0, 2);
  ASSERT_EQ(got.records.size(), 2u);  // the diagnosis (started over) and the action; the finding was sent
  EXPECT_EQ(got.records[0].kind, fleet::RecordKind::kDiagnosis);
  EXPECT_EQ(got.records[1].kind, fleet::RecordKind::kAction);
  EXPECT_EQ(Cursor("diagnosis_after_id"), "1");
}

// A node whose store was lost and made again numbers its rows from 1 again: its message ids
// carry a new store epoch, so neither the server's duplicate window nor the analyzer takes
// the new rows for repeats; a restart of the same store keeps its epoch (tested above).
TEST_F(FleetPublisherTest, AStoreMadeAgainFromNothingIsNotTakenForRepeats) {
  auto c = StartServerWithStream();
  ASSERT_NE(c, nullptr);
  StoreReadings(1, 10);
  std::string first_epoch;
  {
    FleetPublisher first(*store_, Options(), clock_, nullptr);
    ASSERT_TRUE(first.PublishOnce().ok());
    first_epoch = store_->GetCursor("gpu-07", "fleet", "epoch")->value_or("");
  }
  ASSERT_EQ(first_epoch.size(), 16u);
  store_.reset();
  std::filesystem::remove(dir_.File("agent.db"));
  auto s = Store::Open(dir_.File("agent.db"));
  ASSERT_TRUE(s.ok());
  store_ = std::move(s).value();
  StoreReadings(1, 10);
  FleetPublisher second(*store_, Options(), clock_, nullptr);
  ASSERT_TRUE(second.PublishOnce().ok());
  EXPECT_EQ(second.stats().duplicates, 0u);
  EXPECT_NE(store_->GetCursor("gpu-07", "fleet", "epoch")->value_or(""), first_epoch);
  auto got = ReadStream(*c, "check", 20, 0);
  EXPECT_EQ(got.observation_ids.size(), 20u);
}

TEST_F(FleetPublisherTest, OversizedRowsAreCutOrSplitAndUndecodableRowsSteppedPast) {
  auto c = StartServerWithStream();
  ASSERT_NE(c, nullptr);
  std::vector<Observation> big;
  for (int i = 1; i <= 30; ++i) {
    Observation o = Reading(i);
    o.raw = std::string(60 << 10, static_cast<char>('a' + i % 26));  // 30 x 60 KiB: over 1 MiB together
    big.push_back(o);
  }
  Observation huge = Reading(31);
  huge.raw = std::string(300 << 10, 'z');  // over max_field_bytes: cut to it
  big.push_back(huge);
  ASSERT_TRUE(store_->Append(big).ok());
  StoreReadings(32, 40);
  FleetPublisher pub(*store_, Options(), clock_, nullptr);
  ASSERT_TRUE(pub.PublishOnce().ok());
  auto got = ReadStream(*c, "check", 40, 0);
  EXPECT_EQ(got.observation_ids, Iota(1, 40));
  EXPECT_GT(got.messages, 2u);  // split to fit
  EXPECT_EQ(pub.stats().skipped, 0u);

  // A row this binary cannot decode (a newer faultline's) is stepped past, not retried.
  StoreReadings(41, 45);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir_.File("agent.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE observations SET payload = '{not json' WHERE id = 43", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ASSERT_TRUE(pub.PublishOnce().ok());
  EXPECT_EQ(pub.stats().skipped, 1u);
  EXPECT_EQ(Cursor("obs_after_id"), "45");
  auto more = ReadStream(*c, "check", 4, 0);  // the same durable: what came after
  EXPECT_EQ(more.observation_ids, (std::vector<int64_t>{41, 42, 44, 45}));
}

// The msg ids the stream holds, in stream order.
std::vector<std::string> StoredMsgIds(Connection& c, size_t expect) {
  auto consumer = c.BindPullConsumer(ConsumerConfig{.stream = "FAULTLINE", .durable = "ids"});
  EXPECT_TRUE(consumer.ok()) << consumer.status().ToString();
  std::vector<std::string> ids;
  if (!consumer.ok()) return ids;
  WaitUntil([&] {
    auto msgs = (*consumer)->Fetch(100, 200'000'000);
    if (msgs.ok()) {
      for (auto& m : *msgs) {
        ids.push_back(m.msg_id());
        (void)m.Ack();
      }
    }
    return ids.size() >= expect;
  });
  return ids;
}

// A publish that failed is sent again exactly as it was, under the same msg id, before any
// newer row (issue 25): if its first try had reached the stream and only the ack was lost,
// the stream drops the repeat. Cut afresh with the newer rows it would carry another id
// (rows 1-40 here) and be stored a second time.
TEST_F(FleetPublisherTest, AFailedEnvelopeIsSentAgainUnderTheSameMsgIdBeforeNewerRows) {
  ASSERT_TRUE(server_->Start());
  auto c = ConnectOrFail(OptionsFor({server_->url()}));
  ASSERT_NE(c, nullptr);
  StoreReadings(1, 30);
  FleetPublisher pub(*store_, Options(), clock_, nullptr);  // up to 40 observations an envelope
  // No stream yet: the server answers the publish with "no responders".
  auto failed = pub.PublishOnce();
  ASSERT_FALSE(failed.ok());
  StoreReadings(31, 60);
  ASSERT_TRUE(EnsureStreamRetrying(*c, SmallStream()).ok());
  ASSERT_TRUE(WaitUntil([&] { return pub.PublishOnce().ok(); }));
  const std::string epoch = Cursor("epoch");
  ASSERT_FALSE(epoch.empty());
  EXPECT_EQ(StoredMsgIds(*c, 2), (std::vector<std::string>{"gpu-07/obs/1-30@" + epoch, "gpu-07/obs/31-60@" + epoch}));
  EXPECT_EQ(pub.stats().observations, 60u);
  EXPECT_EQ(Cursor("obs_after_id"), "60");
}

}  // namespace
}  // namespace faultline::daemon
