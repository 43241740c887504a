// The NATS users deploy/nats/gen-nats-auth.py makes, on a real nats-server (issue 25): an
// agent may publish only as its own node (a forged publish on another node's subject is
// refused by the server), and with exactly those permissions the agent's publisher and
// verdict reader, and the analyzer's loop with its KV state, all still work.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>

#include "daemon/fleet_links.h"
#include "daemon/fleet_publisher.h"
#include "fleet/nats/consumer_loop.h"
#include "fleet/nats/ticket_ledger.h"
#include "nats_server.h"
#include "store/store.h"

namespace faultline::fleet::nats {
namespace {

using testing::ConnectOrFail;
using testing::NatsServer;
using testing::OptionsFor;
using testing::TempDir;
using testing::WaitUntil;

constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

class NatsPermissionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NATS_SERVER();
    if (std::system("python3 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
    std::ofstream(dir_.File("fleet.json")) << R"({"site": "lab", "nodes": [{"name": "n1", "rack": "r1", "pdu": "pdu-a"},
                                         {"name": "n2", "rack": "r1", "pdu": "pdu-a"}]})";
    const std::string gen = std::string(FAULTLINE_SOURCE_DIR) + "/deploy/nats/gen-nats-auth.py --topology " +
                            dir_.File("fleet.json") + " --out " + dir_.File("auth") + " 2> /dev/null";
    ASSERT_EQ(std::system(("python3 " + gen).c_str()), 0);
    // The server's own settings come from the command line; users from the generated file.
    // (nats-server resolves an include relative to the including file.)
    std::ofstream(dir_.File("server.conf")) << "include auth/auth.conf\n";
    server_ =
        std::make_unique<NatsServer>(dir_.File("srv"), "s1", std::vector<std::string>{"-c", dir_.File("server.conf")});
    ASSERT_TRUE(server_->Start());
  }

  ConnectOptions As(const std::string& who, const std::string& inbox) {
    ConnectOptions o = OptionsFor({server_->url()});
    o.credentials_file = dir_.File("auth/creds/" + who + ".cred");
    o.inbox_prefix = inbox;
    return o;
  }

  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
};

Envelope Diagnosed(const std::string& node, int64_t t) {
  Envelope e;
  e.kind = RecordKind::kDiagnosis;
  e.place = {"lab", "r1", node};
  e.row_id = 1;
  e.msg_id = node + "/diagnosis/1";
  e.sent_ns = t;
  Diagnosis d;
  d.fault_class = FaultClass::kPowerSupply;
  d.component = ComponentRef{ComponentType::kPsu, "1", {}};
  d.action = Action::kRma;
  d.first_ns = t;
  d.last_ns = t + kSec;
  e.diagnosis = d;
  return e;
}

TEST_F(NatsPermissionsTest, AnAgentMayPublishOnlyAsItselfAndTheWholeFleetWorksWithThesePermissions) {
  auto analyzer_conn = ConnectOrFail(As("analyzer", ""));
  ASSERT_NE(analyzer_conn, nullptr);
  StreamConfig sc;
  sc.max_bytes = 64 << 20;
  ASSERT_TRUE(analyzer_conn->EnsureStream(sc).ok());

  auto n1 = ConnectOrFail(As("n1", "_INBOX.n1"));
  ASSERT_NE(n1, nullptr);
  const Envelope own = Diagnosed("n1", kT0);
  auto accepted = n1->Publish(Subject(own.place, own.kind), Encode(own), own.msg_id);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  const Envelope forged = Diagnosed("n2", kT0);
  auto refused = n1->Publish(Subject(forged.place, forged.kind), Encode(forged), "forged@1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied) << refused.status().ToString();
  EXPECT_EQ(analyzer_conn->GetStream("FAULTLINE")->messages, 1u) << "the forged message was stored";
  // Nor may it read what is meant for other clients (every reply subject).
  ConnectOptions snooper = As("n1", "");
  auto default_inbox = Connection::Connect(snooper);
  ASSERT_TRUE(default_inbox.ok());
  EXPECT_FALSE((*default_inbox)->Publish(Subject(own.place, own.kind), Encode(own), "n1/diagnosis/1").ok())
      << "the ack came back on _INBOX.>, which n1 may not read";

  // The agent's publisher (with the inbox prefix its config gives it) and the analyzer.
  auto store = Store::Open(dir_.File("n2.db"));
  ASSERT_TRUE(store.ok());
  Diagnosis d = *Diagnosed("n2", kT0).diagnosis;
  ASSERT_TRUE((*store)->PutDiagnosis("n2", d, kT0).ok());
  daemon::FleetSection section;
  section.urls = server_->url();
  section.site = "lab";
  section.rack = "r1";
  section.credentials_file = dir_.File("auth/creds/n2.cred");
  daemon::FleetPublisherOptions po = daemon::FleetPublisherOptionsFor(section, "n2");
  FakeClock clock(kT0 + 30 * kSec);
  daemon::FleetPublisher publisher(**store, po, clock, nullptr);
  auto sent = publisher.PublishOnce();
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(*sent, 1u);

  FleetTopology topology;
  topology.site = "lab";
  for (const char* name : {"n1", "n2"}) topology.nodes.push_back(FleetNode{.name = name, .rack = "r1", .pdu = "pdu-a"});
  FleetAnalyzer analyzer(topology);
  FleetLoopOptions lo;
  lo.stream = sc;
  lo.consumer.durable = "fleet";
  lo.site = "lab";
  lo.evaluate_interval_ns = 0;
  lo.snapshot_interval_ns = 0;  // a KV write every step
  FleetLoop loop(*analyzer_conn, analyzer, lo, clock);
  ASSERT_TRUE(loop.Start().ok());
  std::vector<FleetDiagnosis> got;
  WaitUntil([&] {
    auto r = loop.Step();
    if (r.ok()) got.insert(got.end(), r->begin(), r->end());
    return !got.empty() && loop.stats().snapshots > 0;
  });
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].component, "pdu/pdu-a");
  EXPECT_EQ(loop.stats().published, 1u);
  EXPECT_EQ(loop.stats().snapshot_errors, 0u);
  ASSERT_TRUE(loop.Checkpoint().ok());
  // The tickets in the bucket, written and listed (the listing is an ordered consumer).
  auto bucket = analyzer_conn->EnsureKeyValue(KvConfig{});
  ASSERT_TRUE(bucket.ok()) << bucket.status().ToString();
  {
    TicketLedger ledger(bucket->get(), "fleet");
    ASSERT_TRUE(ledger.OnDiagnosis(got[0]).ok());
  }
  TicketLedger reloaded(bucket->get(), "fleet");
  Status loaded = reloaded.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  EXPECT_EQ(reloaded.tickets().size(), 1u);

  // The agent reads the verdict back through its own durable.
  daemon::FleetLinks links(**store, daemon::FleetLinksOptions{.site = "lab", .node = "n2"}, clock, nullptr);
  auto agent_conn = ConnectOrFail(po.connect);
  ASSERT_NE(agent_conn, nullptr);
  size_t linked = 0;
  Status last;
  WaitUntil([&] {
    auto n = links.Poll(*agent_conn, 200'000'000);
    if (!n.ok()) last = n.status();
    linked += n.ok() ? *n : 0;
    return linked >= 1;
  });
  EXPECT_EQ(linked, 1u) << last.ToString();
}

}  // namespace
}  // namespace faultline::fleet::nats
