// The fleet consumer loop against real nats-server processes: a shared cause becomes one
// published fleet diagnosis; bad messages are counted and Term'ed; a restart (with or
// without a checkpoint) loses nothing and counts nothing twice; a 3-server cluster loses
// a server mid-stream without loss or duplicate diagnosis.
#include "fleet/nats/consumer_loop.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <sstream>

#include "envelopes.h"
#include "nats_server.h"

namespace faultline::fleet::nats {
namespace {

using testing::ConnectOrFail;
using testing::EnsureStreamRetrying;
using testing::NatsCluster;
using testing::NatsServer;
using testing::OptionsFor;
using testing::TempDir;
using testing::WaitUntil;

constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

// Six nodes: n1..n4 on pdu-a (rack r1), n5..n6 on pdu-b (rack r2).
FleetTopology Topology() {
  FleetTopology t;
  t.site = "lab";
  for (int i = 1; i <= 6; ++i) {
    FleetNode n;
    n.name = "n" + std::to_string(i);
    n.rack = i <= 4 ? "r1" : "r2";
    n.pdu = i <= 4 ? "pdu-a" : "pdu-b";
    n.feed = "feed-1";
    n.cooling_loop = i <= 4 ? "loop-1" : "loop-2";
    n.leaf_switch = "leaf-" + n.rack;
    n.driver = "550.54";
    t.nodes.push_back(n);
  }
  return t;
}

// A node's own diagnosis of a power problem (what its isolator stores).
Envelope PowerDiagnosis(const std::string& node, int64_t row_id, int64_t t) {
  return testing::PowerDiagnosisAt({"lab", node <= "n4" ? "r1" : "r2", node}, row_id, t);
}

// A batch of a node's readings (nothing wrong with them).
Envelope Readings(const std::string& node, int64_t first_id, int n, int64_t t) {
  Envelope e;
  e.kind = RecordKind::kObservations;
  e.place = {"lab", node <= "n4" ? "r1" : "r2", node};
  e.msg_id = node + "/obs/" + std::to_string(first_id) + "-" + std::to_string(first_id + n - 1);
  e.sent_ns = t;
  for (int i = 0; i < n; ++i) {
    Observation o;
    o.time_ns = t + i;
    o.node = node;
    o.layer = Layer::kOob;
    o.component = ComponentRef{ComponentType::kSensor, "inlet", {}};
    o.kind = ObsKind::kTemperature;
    o.value = 24.0 + (i % 3);
    o.source = Source::kRedfish;
    e.observations.push_back(o);
    e.observation_ids.push_back(first_id + i);
  }
  return e;
}

OutMessage Out(const Envelope& e) { return OutMessage{Subject(e.place, e.kind), Encode(e), e.msg_id}; }

StreamConfig TestStream(int replicas = 1) {
  StreamConfig c;
  c.max_bytes = 256 << 20;
  c.replicas = replicas;
  return c;
}

FleetLoopOptions LoopOptions(const std::string& instance = "a") {
  FleetLoopOptions o;
  o.stream = TestStream();
  o.consumer.durable = "fleet-test";
  o.consumer.ack_wait_ns = 2 * kSec;  // a crashed member's messages come back quickly
  o.kv_bucket = "fleet-test";
  o.instance = instance;
  o.site = "lab";
  o.fetch_batch = 64;
  o.fetch_timeout_ns = 100'000'000;
  o.evaluate_interval_ns = 0;                     // every step
  o.snapshot_interval_ns = int64_t{3600} * kSec;  // only when asked (Checkpoint)
  return o;
}

// Fleet diagnoses on the stream (what an operator's subscriber would see), by msg id.
std::map<std::string, int> PublishedDiagnoses(Connection& c, const std::string& durable) {
  ConsumerConfig cc;
  cc.durable = durable;
  cc.filter_subject = FleetDiagnosisSubject("lab");
  std::map<std::string, int> out;
  // Retried: right after a server died, the cluster may still be electing leaders.
  Result<std::unique_ptr<PullConsumer>> consumer = Status(StatusCode::kUnavailable, "not tried");
  WaitUntil([&] {
    consumer = c.BindPullConsumer(cc);
    return consumer.ok();
  });
  EXPECT_TRUE(consumer.ok()) << consumer.status().ToString();
  if (!consumer.ok()) return out;
  // Until something arrived (a cluster electing leaders, a slow sanitizer build), then on
  // until two fetches in a row bring nothing more, so a duplicate would still show.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int quiet = 0;
  while (quiet < 2 && std::chrono::steady_clock::now() < deadline) {
    auto msgs = (*consumer)->Fetch(100, 500'000'000);
    if (!msgs.ok() || msgs->empty()) {
      quiet += out.empty() ? 0 : 1;
      continue;
    }
    quiet = 0;
    for (auto& m : *msgs) {
      auto e = Decode(m.data());
      EXPECT_TRUE(e.ok());
      if (e.ok()) ++out[e->msg_id];
      (void)m.Ack();
    }
  }
  return out;
}

// Steps until `done` or the bound; collects what the loop returned.
std::vector<FleetDiagnosis> StepUntil(FleetLoop& loop, const std::function<bool()>& done, double seconds = 20) {
  std::vector<FleetDiagnosis> got;
  WaitUntil(
      [&] {
        auto r = loop.Step();
        if (r.ok()) got.insert(got.end(), r->begin(), r->end());
        return done();
      },
      seconds);
  return got;
}

class FleetLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NATS_SERVER();
    server_ = std::make_unique<NatsServer>(dir_.File("srv"), "s1");
    ASSERT_TRUE(server_->Start());
    conn_ = ConnectOrFail(OptionsFor({server_->url()}));
    ASSERT_NE(conn_, nullptr);
    ASSERT_TRUE(EnsureStreamRetrying(*conn_, TestStream()).ok());
  }

  void Publish(const std::vector<Envelope>& envelopes) {
    std::vector<OutMessage> out;
    for (const auto& e : envelopes) out.push_back(Out(e));
    for (const auto& r : conn_->PublishBatch(out, 5 * kSec)) ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  }

  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
  std::unique_ptr<Connection> conn_;
  FakeClock clock_{kT0 + 30 * kSec};
};

TEST_F(FleetLoopTest, ASharedPduBecomesOnePublishedDiagnosisAndBadMessagesAreCountedNotFatal) {
  FleetAnalyzer analyzer(Topology());
  FleetLoopOptions o = LoopOptions();
  o.limits.max_message_bytes = 32 << 10;  // so an otherwise valid 40 KiB envelope is oversized
  FleetLoop loop(*conn_, analyzer, o, clock_);
  ASSERT_TRUE(loop.Start().ok());
  EXPECT_FALSE(loop.stats().restored);

  Publish({Readings("n5", 1, 10, kT0), PowerDiagnosis("n1", 7, kT0)});
  ASSERT_TRUE(conn_->Publish("faultline.lab.r1.n2.diagnosis", "{not an envelope", "garbage-1").ok());
  ASSERT_TRUE(conn_->Publish("faultline.lab.r1.n2.obs", std::string("\x00\xff\x10", 3), "garbage-2").ok());
  ASSERT_TRUE(conn_->Publish("faultline.lab.r1.n2.obs", "", "garbage-3").ok());
  Envelope big = Readings("n6", 1, 400, kT0);
  for (auto& obs : big.observations) obs.text = std::string(100, 'x');
  ASSERT_TRUE(conn_->Publish(Subject(big.place, big.kind), Encode(big), big.msg_id).ok());
  Publish({PowerDiagnosis("n2", 3, kT0 + kSec), PowerDiagnosis("n3", 11, kT0 + 2 * kSec)});

  auto got = StepUntil(loop, [&] { return loop.stats().messages >= 8 && !analyzer.Open().empty(); });
  EXPECT_EQ(loop.stats().malformed, 3u);
  EXPECT_EQ(loop.stats().oversized, 1u);
  EXPECT_EQ(loop.stats().ingested, 4u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].cause, "pdu");
  EXPECT_EQ(got[0].component, "pdu/pdu-a");
  EXPECT_EQ(got[0].nodes, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(loop.stats().published, 1u);
  // More steps with nothing new publish nothing more.
  StepUntil(
      loop, [] { return false; }, 0.5);
  auto published = PublishedDiagnoses(*conn_, "reader");
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published.begin()->first, FleetDiagnosisMsgId(got[0]));
  EXPECT_EQ(published.begin()->second, 1);
  // The malformed ones were Term'ed, the rest acked after a checkpoint: none come back.
  ASSERT_TRUE(loop.Checkpoint().ok());
  StepUntil(
      loop, [] { return false; }, 3);  // past ack_wait
  EXPECT_EQ(loop.stats().redelivered, 0u);
  EXPECT_GE(loop.stats().skipped_fleet, 1u);  // its own diagnosis came back on the stream
}

TEST_F(FleetLoopTest, ARestartFromTheSnapshotCountsNothingTwice) {
  Publish({PowerDiagnosis("n1", 1, kT0), PowerDiagnosis("n2", 1, kT0), PowerDiagnosis("n3", 1, kT0),
           Readings("n5", 1, 50, kT0)});
  std::string first_id;
  {
    FleetAnalyzer analyzer(Topology());
    FleetLoop loop(*conn_, analyzer, LoopOptions(), clock_);
    ASSERT_TRUE(loop.Start().ok());
    auto got = StepUntil(loop, [&] { return loop.stats().ingested >= 4 && !analyzer.Open().empty(); });
    ASSERT_EQ(got.size(), 1u);
    first_id = got[0].id;
    ASSERT_TRUE(loop.Checkpoint().ok());
    EXPECT_EQ(analyzer.stats().observations, 50u);
  }
  // The same records again, past the stream's duplicate window (new NATS msg ids): the
  // restored analyzer knows them by their envelope ids.
  std::vector<OutMessage> again;
  for (const auto& e : {PowerDiagnosis("n1", 1, kT0), Readings("n5", 1, 50, kT0)}) {
    OutMessage m = Out(e);
    m.msg_id += "#resent";
    again.push_back(m);
  }
  for (const auto& r : conn_->PublishBatch(again, 5 * kSec)) ASSERT_TRUE(r.status.ok());
  FleetAnalyzer restarted(Topology());
  FleetLoop loop(*conn_, restarted, LoopOptions(), clock_);
  ASSERT_TRUE(loop.Start().ok());
  EXPECT_TRUE(loop.stats().restored);
  ASSERT_EQ(restarted.Open().size(), 1u);
  EXPECT_EQ(restarted.Open()[0].id, first_id);
  auto got = StepUntil(loop, [&] { return loop.stats().ingested >= 2; });
  EXPECT_TRUE(got.empty()) << "an unchanged diagnosis is not new after a restart";
  EXPECT_EQ(restarted.stats().observations, 50u);
  EXPECT_GE(restarted.stats().duplicates, 2u);
  EXPECT_EQ(PublishedDiagnoses(*conn_, "reader").size(), 1u);
}

TEST_F(FleetLoopTest, ACrashBeforeTheCheckpointLosesNothing) {
  Publish({PowerDiagnosis("n1", 1, kT0), PowerDiagnosis("n2", 1, kT0), Readings("n6", 1, 20, kT0)});
  {
    FleetAnalyzer analyzer(Topology());
    FleetLoop loop(*conn_, analyzer, LoopOptions(), clock_);
    ASSERT_TRUE(loop.Start().ok());
    StepUntil(loop, [&] { return loop.stats().ingested >= 3; });
    ASSERT_EQ(loop.stats().ingested, 3u);
    // Gone without Checkpoint: nothing was acked, nothing saved.
  }
  Publish({PowerDiagnosis("n3", 1, kT0)});
  FleetAnalyzer analyzer(Topology());
  FleetLoop loop(*conn_, analyzer, LoopOptions(), clock_);
  ASSERT_TRUE(loop.Start().ok());
  EXPECT_FALSE(loop.stats().restored);
  auto got = StepUntil(loop, [&] { return loop.stats().ingested >= 4 && !analyzer.Open().empty(); });
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].nodes, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(analyzer.stats().observations, 20u);
  EXPECT_GE(loop.stats().redelivered, 3u);
}

// A durable that lets few messages be in flight unacked (here 8; an existing durable
// keeps the limit it was made with): the loop checkpoints before half of it is deferred,
// so delivery never stalls waiting for the snapshot interval; and a crash between two of
// those early checkpoints still loses nothing and counts nothing twice.
TEST_F(FleetLoopTest, FewAcksInFlightCheckpointEarlyAndACrashBetweenThemLosesNothing) {
  std::vector<Envelope> first_half, second_half;
  for (int k = 0; k < 40; ++k) {
    const std::string node = k % 2 ? "n6" : "n5";
    (k < 20 ? first_half : second_half).push_back(Readings(node, 1 + 10 * (k / 2), 10, kT0 + k * kSec));
  }
  FleetLoopOptions o = LoopOptions();
  o.consumer.max_ack_pending = 8;
  o.fetch_batch = 3;  // a fetch stays under the limit the deferred acks leave
  Publish(first_half);
  {
    FleetAnalyzer analyzer(Topology());
    FleetLoop loop(*conn_, analyzer, o, clock_);
    ASSERT_TRUE(loop.Start().ok());
    // The snapshot interval is an hour: only the early checkpoints can make room.
    StepUntil(
        loop, [&] { return loop.stats().ingested >= 20; }, 10);
    EXPECT_EQ(loop.stats().ingested, 20u);
    // Room for 8 unacked, a checkpoint once 4 wait, 3 per fetch: one every 6 messages.
    EXPECT_GE(loop.stats().snapshots, 3u);
    EXPECT_EQ(analyzer.stats().observations, 200u);
    EXPECT_EQ(loop.stats().observations, 200u);
    EXPECT_EQ(loop.stats().newest_sent_ns, kT0 + 19 * kSec);
    Publish(second_half);
    StepUntil(
        loop, [&] { return loop.stats().ingested >= 26; }, 10);
    EXPECT_GE(loop.stats().ingested, 26u);
    // Gone without a last checkpoint: what it took since the last early one is unacked.
  }
  FleetAnalyzer analyzer(Topology());
  FleetLoop loop(*conn_, analyzer, o, clock_);
  ASSERT_TRUE(loop.Start().ok());
  EXPECT_TRUE(loop.stats().restored);
  // What was read again at start still comes back through the durable after the ack wait
  // (dropped as repeats): wait for those too before the last checkpoint.
  StepUntil(
      loop, [&] { return analyzer.stats().observations >= 400 && loop.stats().redelivered >= loop.stats().replayed; },
      15);
  EXPECT_EQ(analyzer.stats().observations, 400u) << "every reading once";
  ASSERT_TRUE(loop.Checkpoint().ok());
  // Past ack_wait nothing more comes: everything taken was acked.
  const uint64_t before = loop.stats().messages;
  StepUntil(
      loop, [] { return false; }, 3);
  EXPECT_EQ(loop.stats().messages, before);
  EXPECT_EQ(analyzer.stats().observations, 400u);
}

TEST_F(FleetLoopTest, ADamagedSnapshotIsIgnoredAndCounted) {
  auto kv = conn_->EnsureKeyValue(KvConfig{.bucket = "fleet-test"});
  ASSERT_TRUE(kv.ok());
  FleetAnalyzer analyzer(Topology());
  FleetLoop loop(*conn_, analyzer, LoopOptions(), clock_);
  ASSERT_TRUE((*kv)->Put(loop.snapshot_key(), "faultline-fleet-snapshot 1 3 1 10 0000000000000000").ok());
  ASSERT_TRUE(loop.Start().ok());
  EXPECT_FALSE(loop.stats().restored);
  EXPECT_EQ(loop.stats().snapshot_errors, 1u);
  ASSERT_TRUE((*kv)->Put(loop.snapshot_key(), "garbage").ok());
  FleetAnalyzer other(Topology());
  FleetLoop again(*conn_, other, LoopOptions(), clock_);
  ASSERT_TRUE(again.Start().ok());
  EXPECT_EQ(again.stats().snapshot_errors, 1u);
}

// A snapshot over several KV values (the state written chunk by chunk as it is made,
// issue 25) comes back whole: the restarted analyzer's snapshot is the same bytes.
TEST_F(FleetLoopTest, ASnapshotOverSeveralChunksRestoresWhole) {
  FleetAnalyzer analyzer(Topology());
  // Distinct envelope ids, remembered for dedup: about 1.5 MB of snapshot, three chunks.
  for (int64_t id = 1; id <= 60'000; ++id) analyzer.Ingest(Readings("n" + std::to_string(1 + id % 6), id, 1, kT0));
  std::string saved;
  {
    FleetLoop loop(*conn_, analyzer, LoopOptions(), clock_);
    ASSERT_TRUE(loop.Start().ok());
    ASSERT_TRUE(loop.Checkpoint().ok());
    saved = analyzer.Snapshot();
    auto kv = conn_->EnsureKeyValue(KvConfig{.bucket = "fleet-test"});
    ASSERT_TRUE(kv.ok());
    auto manifest = (*kv)->Get(loop.snapshot_key());
    ASSERT_TRUE(manifest.ok() && manifest->has_value());
    std::istringstream in((*manifest)->value);
    std::string magic;
    int version = 0;
    uint64_t gen = 0;
    size_t chunks = 0, size = 0;
    in >> magic >> version >> gen >> chunks >> size;
    EXPECT_EQ(size, saved.size());
    EXPECT_EQ(chunks, (saved.size() + (512 << 10) - 1) / (512 << 10));
    EXPECT_GE(chunks, 3u);
  }
  FleetAnalyzer restarted(Topology());
  FleetLoop loop(*conn_, restarted, LoopOptions(), clock_);
  ASSERT_TRUE(loop.Start().ok());
  EXPECT_TRUE(loop.stats().restored);
  EXPECT_EQ(loop.stats().snapshot_errors, 0u);
  EXPECT_EQ(restarted.Snapshot(), saved);
}

// Judged on the data's own clock (issue 25: `sim fleet --nats` then `fleet --once` found
// nothing, every diagnosis older than the window at wall-clock time): a consumer started a
// month after the agents published finds the shared PDU a live one found, and a restart
// keeps that clock (it is saved with the snapshot), so nothing it held is aged out by the
// wall clock.
TEST_F(FleetLoopTest, AConsumerStartedLongAfterTheDataJudgesItOnTheDatasOwnClock) {
  FakeClock month_later(kT0 + int64_t{30} * 24 * 3600 * kSec);
  Publish({PowerDiagnosis("n1", 1, kT0), PowerDiagnosis("n2", 1, kT0 + kSec), PowerDiagnosis("n3", 1, kT0 + 2 * kSec),
           Readings("n5", 1, 10, kT0 + 3 * kSec)});
  {
    FleetAnalyzer analyzer(Topology());
    FleetLoop loop(*conn_, analyzer, LoopOptions(), month_later);
    ASSERT_TRUE(loop.Start().ok());
    auto got = StepUntil(loop, [&] { return loop.stats().ingested >= 4 && !analyzer.Open().empty(); });
    ASSERT_EQ(got.size(), 1u) << "judged at the wall clock, everything was older than the window";
    EXPECT_EQ(got[0].component, "pdu/pdu-a");
    EXPECT_EQ(loop.EvaluationTimeNs(), kT0 + 3 * kSec);  // the newest envelope's sent time
    ASSERT_TRUE(loop.Checkpoint().ok());
  }
  FleetAnalyzer analyzer(Topology());
  FleetLoop loop(*conn_, analyzer, LoopOptions(), month_later);
  ASSERT_TRUE(loop.Start().ok());
  ASSERT_TRUE(loop.stats().restored);
  EXPECT_EQ(loop.EvaluationTimeNs(), kT0 + 3 * kSec) << "the data clock comes back with the snapshot";
  ASSERT_TRUE(loop.EvaluateNow().ok());
  EXPECT_EQ(analyzer.Open().size(), 1u) << "the restored cause was aged out by the wall clock";
}

// `--once` stops when the durable has nothing left to deliver, not when one fetch came
// back empty (issue 25: 8,000 large messages, exit after a few hundred).
TEST_F(FleetLoopTest, DrainedOnlyOnceTheDurableHasNothingLeftToDeliver) {
  std::vector<Envelope> batches;
  for (int k = 0; k < 100; ++k) batches.push_back(Readings(k % 2 ? "n5" : "n6", 1 + 10 * (k / 2), 10, kT0 + k));
  Publish(batches);
  FleetAnalyzer analyzer(Topology());
  FleetLoopOptions o = LoopOptions();
  o.fetch_batch = 16;
  FleetLoop loop(*conn_, analyzer, o, clock_);
  ASSERT_TRUE(loop.Start().ok());
  auto drained = loop.Drained();
  ASSERT_TRUE(drained.ok()) << drained.status().ToString();
  EXPECT_FALSE(*drained);
  StepUntil(loop, [&] { return loop.stats().messages >= 16; });
  EXPECT_FALSE(*loop.Drained());
  StepUntil(loop, [&] { return loop.stats().messages >= 100; });
  EXPECT_EQ(loop.stats().messages, 100u);
  EXPECT_TRUE(*loop.Drained());
}

// An agent publishing for another node (issue 25): the header (or an observation) names a
// node other than the subject's. Refused, counted, warned about, acked (never redelivered).
TEST_F(FleetLoopTest, AnEnvelopeSpeakingForAnotherNodeThanItsSubjectIsRefused) {
  const Envelope as_n2 = PowerDiagnosis("n2", 1, kT0);
  ASSERT_TRUE(conn_->Publish("faultline.lab.r1.n1.diagnosis", Encode(as_n2), "forged-1").ok());
  Envelope mixed = Readings("n1", 1, 5, kT0);
  mixed.observations[2].node = "n3";
  ASSERT_TRUE(conn_->Publish(Subject(mixed.place, mixed.kind), Encode(mixed), "forged-2").ok());
  Publish({PowerDiagnosis("n1", 1, kT0)});
  FleetAnalyzer analyzer(Topology());
  FleetLoopOptions o = LoopOptions();
  std::vector<std::string> warned;
  o.warn = [&](const std::string& w) { warned.push_back(w); };
  FleetLoop loop(*conn_, analyzer, o, clock_);
  ASSERT_TRUE(loop.Start().ok());
  StepUntil(loop, [&] { return loop.stats().messages >= 3; });
  EXPECT_EQ(loop.stats().forged, 2u);
  EXPECT_EQ(loop.stats().ingested, 1u);
  EXPECT_EQ(analyzer.stats().records, 1u);
  EXPECT_EQ(analyzer.stats().observations, 0u);
  ASSERT_EQ(warned.size(), 2u);
  EXPECT_NE(warned[0].find("faultline.lab.r1.n1.diagnosis"), std::string::npos) << warned[0];
  EXPECT_NE(warned[0].find("faultline.lab.r1.n2.diagnosis"), std::string::npos) << warned[0];
  ASSERT_TRUE(loop.Checkpoint().ok());
  StepUntil(
      loop, [] { return false; }, 3);  // past ack_wait
  EXPECT_EQ(loop.stats().redelivered, 0u);
}

// A nats-server restart under a running loop (issue 25: the consumer took 60-100 s to
// resume): the loop steps through the outage (its fetches fail) and, once the server is
// back, takes what is published after the restart and what it had taken before is kept.
TEST_F(FleetLoopTest, AServerRestartIsRiddenThroughAndWhatIsPublishedAfterItIsTaken) {
  FleetAnalyzer analyzer(Topology());
  // The loop on a connection with the production defaults (reconnect wait, pings, timeouts).
  ConnectOptions defaults;
  defaults.urls = {server_->url()};
  auto own = ConnectOrFail(defaults);
  ASSERT_NE(own, nullptr);
  FleetLoop loop(*own, analyzer, LoopOptions(), clock_);
  ASSERT_TRUE(loop.Start().ok());
  Publish({Readings("n5", 1, 10, kT0)});
  StepUntil(loop, [&] { return loop.stats().ingested >= 1; });
  ASSERT_EQ(loop.stats().ingested, 1u);
  server_->Kill();
  StepUntil(
      loop, [] { return false; }, 3);  // down a few seconds, the loop stepping all along
  ASSERT_TRUE(server_->Start());
  const auto restarted = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] {
    auto r = conn_->PublishBatch({Out(Readings("n5", 11, 10, kT0 + kSec))}, kSec);
    return r[0].status.ok();
  }));
  // A safety net, not a speed limit.
  StepUntil(
      loop, [&] { return analyzer.stats().observations >= 20; }, 180);
  const double resumed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - restarted).count();
  EXPECT_EQ(analyzer.stats().observations, 20u) << "what was published after the restart was not taken";
  RecordProperty("resumed_after_s", std::to_string(resumed_s));  // for the record, not asserted
}

TEST(FromItsSubjectTest, TheEnvelopesPlaceAndNodesMustBeTheSubjects) {
  Envelope e;
  e.kind = RecordKind::kObservations;
  e.place = {"dc1", "r04", "r04-n08"};
  Observation o;
  o.node = "r04-n08";
  e.observations = {o, Observation{}};  // a node left empty is the header's
  EXPECT_TRUE(FromItsSubject("faultline.dc1.r04.r04-n08.obs", e));
  EXPECT_FALSE(FromItsSubject("faultline.dc1.r04.r04-n09.obs", e));
  EXPECT_FALSE(FromItsSubject("faultline.dc1.r05.r04-n08.obs", e));
  EXPECT_FALSE(FromItsSubject("faultline.dc1.r04.r04-n08.diagnosis", e));
  e.observations[1].node = "r04-n09";
  EXPECT_FALSE(FromItsSubject("faultline.dc1.r04.r04-n08.obs", e));
  Envelope a;
  a.kind = RecordKind::kAction;
  a.place = {"dc1", "r04", "n.1"};  // made NATS-safe in the subject
  a.action = ActionRecord{};
  a.action->node = "n.1";
  EXPECT_TRUE(FromItsSubject("faultline.dc1.r04.n_1.action", a));
  a.action->node = "n2";
  EXPECT_FALSE(FromItsSubject("faultline.dc1.r04.n_1.action", a));
}

// Three servers, stream and bucket with 3 replicas; the server the loop is connected to
// dies while envelopes are still being published. Everything is ingested once and the
// shared cause is published once.
TEST(FleetLoopClusterTest, OneServerKilledMidStreamLosesNothingAndDuplicatesNoDiagnosis) {
  SKIP_WITHOUT_NATS_SERVER();
  TempDir dir;
  NatsCluster cluster(dir.File("cluster"));
  ASSERT_TRUE(cluster.Start());
  auto pub = ConnectOrFail(OptionsFor(cluster.urls()), 30);
  ASSERT_NE(pub, nullptr);
  auto st = EnsureStreamRetrying(*pub, TestStream(3), 40);
  ASSERT_TRUE(st.ok()) << st.status().ToString();

  FakeClock clock(kT0 + 30 * kSec);
  FleetAnalyzer analyzer(Topology());
  FleetLoopOptions o = LoopOptions();
  o.stream = TestStream(3);
  o.kv_replicas = 3;
  o.snapshot_interval_ns = 0;  // checkpoint every step
  auto sub = ConnectOrFail(OptionsFor(cluster.urls()), 30);
  ASSERT_NE(sub, nullptr);
  FleetLoop loop(*sub, analyzer, o, clock);
  Status started;
  WaitUntil([&] { return (started = loop.Start()).ok(); }, 30);
  ASSERT_TRUE(started.ok()) << started.ToString();

  std::vector<Envelope> all;
  for (int b = 0; b < 60; ++b) all.push_back(Readings("n" + std::to_string(1 + b % 6), 1 + (b / 6) * 20, 20, kT0 + b));
  all.insert(all.begin() + 20, PowerDiagnosis("n1", 1, kT0));
  all.insert(all.begin() + 40, PowerDiagnosis("n2", 1, kT0));
  all.push_back(PowerDiagnosis("n4", 1, kT0));

  // Publish in batches of 7, re-sending whatever failed (same msg ids), stepping the loop
  // between batches; kill the server the subscriber is on after a third.
  std::vector<FleetDiagnosis> got;
  size_t next = 0;
  bool killed = false;
  WaitUntil(
      [&] {
        if (next < all.size()) {
          std::vector<OutMessage> out;
          for (size_t i = next; i < std::min(all.size(), next + 7); ++i) out.push_back(Out(all[i]));
          auto results = pub->PublishBatch(out, 3 * kSec);
          size_t ok = 0;
          while (ok < results.size() && results[ok].status.ok()) ++ok;
          next += ok;
        }
        if (!killed && next >= all.size() / 3) {
          const std::string on = sub->ConnectedUrl();
          for (size_t i = 0; i < 3; ++i) {
            if (cluster.server(i).url() == on) cluster.server(i).Kill();
          }
          killed = true;
        }
        auto r = loop.Step();
        if (r.ok()) got.insert(got.end(), r->begin(), r->end());
        return next >= all.size() && analyzer.stats().observations >= 60u * 20 && analyzer.stats().records >= 3;
      },
      60);
  ASSERT_TRUE(killed);
  EXPECT_EQ(next, all.size());
  EXPECT_EQ(analyzer.stats().observations, 60u * 20) << "every observation once";
  EXPECT_EQ(analyzer.stats().records, 3u);
  ASSERT_TRUE(WaitUntil([&] { return loop.Checkpoint().ok(); }));  // retried while leaders are elected
  std::set<std::string> ids;
  for (const auto& d : got) ids.insert(FleetDiagnosisMsgId(d));
  EXPECT_EQ(ids.size(), got.size()) << "the same diagnosis span returned twice";
  auto published = PublishedDiagnoses(*sub, "reader");
  EXPECT_FALSE(published.empty());
  for (const auto& [id, n] : published) EXPECT_EQ(n, 1) << id;
  bool pdu = false;
  for (const auto& d : analyzer.Open()) pdu |= d.component == "pdu/pdu-a";
  EXPECT_TRUE(pdu);
}

}  // namespace
}  // namespace faultline::fleet::nats
