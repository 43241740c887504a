// One webhook per shared cause, even across a crash (issue 25): the posted record is in the
// KV bucket, a restarted loop knows the cause at once (it reads again what its durable had
// delivered but not acked instead of waiting out the ack wait), and a cause that grows from
// a rack to its PDU keeps its one ticket. Against a real nats-server on loopback.
#include <gtest/gtest.h>

#include "actions/fleet_actor.h"
#include "envelopes.h"
#include "fleet/nats/consumer_loop.h"
#include "fleet/nats/ticket_ledger.h"
#include "nats_server.h"

namespace faultline::fleet::nats {
namespace {

using testing::ConnectOrFail;
using testing::EnsureStreamRetrying;
using testing::NatsServer;
using testing::OptionsFor;
using testing::TempDir;
using testing::WaitUntil;

constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

class RecordingWebhook final : public actions::Actuator {
 public:
  bool Handles(actions::ActionClass c) const override { return c == actions::ActionClass::kWebhook; }
  Status Apply(const actions::Decision& d) override {
    keys.push_back(d.key);
    return Status::Ok();
  }
  Result<actions::Observed> Observe(const actions::Decision&) override { return actions::Observed::kUnknown; }
  std::vector<std::string> keys;  // X-Faultline-Delivery of each post
};

// What `faultline fleet` does with each new or changed fleet diagnosis (cli/cmd_fleet.cc).
void Act(TicketLedger& ledger, actions::FleetActor& actor, const FleetDiagnosis& d) {
  auto step = ledger.OnDiagnosis(d);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  if (!step->as_ticket) return;
  auto acted = actor.OnDiagnosis(*step->as_ticket, kT0);
  if (acted && acted->status.ok() && !acted->dry_run) {
    ASSERT_TRUE(ledger.MarkPosted(acted->key).ok());
  }
}

FleetDiagnosis Shared(const std::string& cause, const std::string& part, std::vector<std::string> nodes,
                      std::vector<std::string> linked, int64_t first) {
  FleetDiagnosis d;
  d.cause = cause;
  d.component = (cause == "rack" ? "rack/" : cause + "/") + part;
  d.id = cause + "/" + part + "/" + std::to_string(first);
  d.fault_class = FaultClass::kPowerInsufficient;
  d.action = Action::kFacilityTicket;
  d.first_ns = first;
  d.last_ns = first + 60 * kSec;
  d.nodes = std::move(nodes);
  d.linked = std::move(linked);
  return d;
}

class TicketsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NATS_SERVER();
    server_ = std::make_unique<NatsServer>(dir_.File("srv"), "s1");
    ASSERT_TRUE(server_->Start());
    conn_ = ConnectOrFail(OptionsFor({server_->url()}));
    ASSERT_NE(conn_, nullptr);
    StreamConfig sc;
    sc.max_bytes = 64 << 20;
    ASSERT_TRUE(EnsureStreamRetrying(*conn_, sc).ok());
    auto kv = conn_->EnsureKeyValue(KvConfig{.bucket = "tickets"});
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
    kv_ = std::move(kv).value();
  }

  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<KeyValue> kv_;
};

TEST_F(TicketsTest, ARackThatTurnsOutToBeItsPduStaysOneTicketAcrossARestart) {
  RecordingWebhook hook;
  const FleetDiagnosis rack = Shared("rack", "r1", {"n1", "n2", "n3"}, {}, kT0);
  const FleetDiagnosis pdu = Shared("pdu", "pdu-a", {"n1", "n2", "n3"}, {"n1#4", "n2#7", "n3#2"}, kT0 + 90 * kSec);
  // Has one of the rack's nodes, but not most of them, and shares nothing else: another fault.
  const FleetDiagnosis leaf = Shared("switch", "leaf-1", {"n1", "n5", "n6"}, {"n1#9", "n5#1", "n6#3"}, kT0);
  {
    TicketLedger ledger(kv_.get(), "fleet");
    ASSERT_TRUE(ledger.Load().ok());
    actions::FleetActor actor(&hook, true);
    Act(ledger, actor, rack);
    Act(ledger, actor, pdu);
    Act(ledger, actor, leaf);
  }
  EXPECT_EQ(hook.keys, (std::vector<std::string>{"fleet|" + rack.id, "fleet|" + leaf.id}));

  // A new process: the tickets come from the bucket; the PDU diagnosis changing again, or
  // the rack reported again, posts nothing.
  TicketLedger ledger(kv_.get(), "fleet");
  ASSERT_TRUE(ledger.Load().ok());
  EXPECT_EQ(ledger.tickets().size(), 2u);
  actions::FleetActor actor(&hook, true);
  FleetDiagnosis grown = pdu;
  grown.nodes.push_back("n4");
  grown.linked.push_back("n4#5");
  Act(ledger, actor, grown);
  Act(ledger, actor, rack);
  EXPECT_EQ(hook.keys.size(), 2u);
  auto step = ledger.OnDiagnosis(grown);
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->ticket_id, rack.id);
  EXPECT_FALSE(step->as_ticket.has_value());

  // The same PDU failing again hours after the last one ended: a new fault, a new ticket.
  const FleetDiagnosis later = Shared("pdu", "pdu-a", {"n1", "n2"}, {"n1#40", "n2#41"}, kT0 + 5 * 3600 * kSec);
  Act(ledger, actor, later);
  ASSERT_EQ(hook.keys.size(), 3u);
  EXPECT_EQ(hook.keys.back(), "fleet|" + later.id);
}

// A node's own power diagnosis, as its agent publishes it.
Envelope PowerDiagnosis(const std::string& node, int64_t row_id, int64_t t) {
  return testing::PowerDiagnosisAt({"lab", "r1", node}, row_id, t);
}

FleetTopology ThreeOnOnePdu() {
  FleetTopology t;
  t.site = "lab";
  for (const char* name : {"n1", "n2", "n3", "n4"}) {
    FleetNode n;
    n.name = name;
    n.rack = "r1";
    n.pdu = "pdu-a";
    t.nodes.push_back(n);
  }
  return t;
}

FleetLoopOptions Options() {
  FleetLoopOptions o;
  o.stream.max_bytes = 64 << 20;
  o.consumer.durable = "tickets";
  o.consumer.ack_wait_ns = 600 * kSec;  // nothing comes back by redelivery during the test
  o.kv_bucket = "tickets";
  o.instance = "a";
  o.site = "lab";
  o.fetch_batch = 64;
  o.fetch_timeout_ns = 100'000'000;
  o.evaluate_interval_ns = 0;
  o.snapshot_interval_ns = 3600 * kSec;  // killed before the first checkpoint
  return o;
}

// The consumer is killed right after its first post, before any checkpoint: the restarted
// one knows the cause before it fetches anything, and does not post it again.
TEST_F(TicketsTest, AConsumerKilledAfterItsPostKnowsTheCauseAtOnceOnRestartAndDoesNotPostAgain) {
  for (const char* node : {"n1", "n2", "n3"}) {
    const Envelope e = PowerDiagnosis(node, 1, kT0);
    ASSERT_TRUE(conn_->Publish(Subject(e.place, e.kind), Encode(e), e.msg_id).ok());
  }
  RecordingWebhook hook;
  FakeClock clock(kT0 + 30 * kSec);
  {
    FleetAnalyzer analyzer(ThreeOnOnePdu());
    FleetLoop loop(*conn_, analyzer, Options(), clock);
    ASSERT_TRUE(loop.Start().ok());
    TicketLedger ledger(kv_.get(), "tickets");
    actions::FleetActor actor(&hook, true);
    ASSERT_TRUE(WaitUntil([&] {
      auto got = loop.Step();
      if (got.ok()) {
        for (const auto& d : *got) Act(ledger, actor, d);
      }
      return !hook.keys.empty();
    }));
    // Killed here: no checkpoint, nothing acked, the snapshot never written.
  }
  ASSERT_EQ(hook.keys.size(), 1u);

  FleetAnalyzer analyzer(ThreeOnOnePdu());
  FleetLoop loop(*conn_, analyzer, Options(), clock);
  ASSERT_TRUE(loop.Start().ok());
  EXPECT_FALSE(loop.stats().restored);
  EXPECT_EQ(loop.stats().replayed, 3u) << "the unacked diagnoses are read again at start";
  auto now = loop.EvaluateNow();  // before any fetch: the ack wait has not passed
  ASSERT_TRUE(now.ok());
  ASSERT_EQ(now->size(), 1u) << "the restarted consumer does not know the cause";
  EXPECT_EQ((*now)[0].component, "pdu/pdu-a");
  TicketLedger ledger(kv_.get(), "tickets");
  ASSERT_TRUE(ledger.Load().ok());
  actions::FleetActor actor(&hook, true);
  Act(ledger, actor, (*now)[0]);
  EXPECT_EQ(hook.keys.size(), 1u) << "posted again after the restart";
  // And the stream did not store it twice either (the same diagnosis, the same msg id).
  EXPECT_EQ(loop.stats().published, 1u);
  EXPECT_EQ(loop.stats().published_duplicate, 1u);
}

}  // namespace
}  // namespace faultline::fleet::nats
