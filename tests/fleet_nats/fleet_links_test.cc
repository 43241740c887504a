// The agent's reader of the fleet's verdicts (daemon/fleet_links.h): which of this node's
// diagnoses a shared cause links, remembered in the store for the policy; read from a real
// nats-server the way the agent's publisher thread does.
#include "daemon/fleet_links.h"

#include <gtest/gtest.h>

#include "nats_server.h"
#include "policy/identity.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {

using fleet::nats::testing::ConnectOrFail;
using fleet::nats::testing::EnsureStreamRetrying;
using fleet::nats::testing::NatsServer;
using fleet::nats::testing::OptionsFor;
using fleet::nats::testing::TempDir;
using fleet::nats::testing::WaitUntil;

constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

Diagnosis PowerDiagnosis(const std::string& psu) {
  Diagnosis d;
  d.fault_class = FaultClass::kPowerInsufficient;
  d.layer = Layer::kOob;
  d.component = ComponentRef{ComponentType::kPsu, psu, {}};
  d.action = Action::kFacilityTicket;
  d.severity = Severity::kCritical;
  d.first_ns = kT0;
  d.last_ns = kT0 + 5 * kSec;
  d.summary = "input sag";
  return d;
}

fleet::FleetDiagnosis Shared(std::vector<std::string> linked, std::string cause = "pdu") {
  fleet::FleetDiagnosis f;
  f.id = cause + "/r12-a/" + std::to_string(kT0);
  f.cause = std::move(cause);
  f.component = f.cause + "/r12-a";
  f.fault_class = FaultClass::kPowerInsufficient;
  f.action = Action::kFacilityTicket;
  f.first_ns = kT0;
  f.last_ns = kT0 + 10 * kSec;
  f.linked = std::move(linked);
  return f;
}

class FleetLinksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(":memory:");
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
  }
  int64_t Put(const Diagnosis& d) {
    auto id = store_->PutDiagnosis(node_, d, d.last_ns);
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : 0;
  }
  FleetLinks Links() { return FleetLinks(*store_, FleetLinksOptions{.site = "lab", .node = node_}, clock_, nullptr); }

  std::string node_ = "gpu-7";
  std::unique_ptr<Store> store_;
  FakeClock clock_{kT0 + 20 * kSec};
};

TEST_F(FleetLinksTest, ASharedCauseLinkingThisNodesDiagnosisIsRememberedForThePolicy) {
  const Diagnosis mine = PowerDiagnosis("0");
  const int64_t row = Put(mine);
  FleetLinks links = Links();
  auto n = links.Record(Shared({"gpu-6#" + std::to_string(row), node_ + "#" + std::to_string(row)}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1u);  // gpu-6's row is gpu-6's business
  auto link = links.LinkFor(mine);
  ASSERT_TRUE(link.ok());
  ASSERT_TRUE(link->has_value());
  EXPECT_EQ((*link)->cause, "pdu");
  EXPECT_EQ((*link)->component, "pdu/r12-a");
  // The same fault on the same part stored again under a new row: still the fleet's.
  Diagnosis again = mine;
  again.first_ns += 3 * kSec;
  EXPECT_TRUE(links.LinkFor(again)->has_value());
  // Another part of the node is not.
  EXPECT_FALSE(links.LinkFor(PowerDiagnosis("1"))->has_value());
}

TEST_F(FleetLinksTest, StragglersAndForeignOrMalformedLinksLinkNothing) {
  const int64_t row = Put(PowerDiagnosis("0"));
  FleetLinks links = Links();
  const std::string r = std::to_string(row);
  EXPECT_EQ(*links.Record(Shared({node_ + "#" + r}, "straggler")), 0u);
  for (const std::string& bad : {node_ + "#", node_ + "#abc", node_ + "#-" + r, node_ + "#" + r + "x", "gpu-77#" + r,
                                 "gpu-#" + r, "#" + r, node_, node_ + "#999999", std::string(100000, '#')}) {
    auto n = links.Record(Shared({bad}));
    ASSERT_TRUE(n.ok()) << bad.substr(0, 40);
    EXPECT_EQ(*n, 0u) << bad.substr(0, 40);
  }
  EXPECT_FALSE(links.LinkFor(PowerDiagnosis("0"))->has_value());
}

TEST_F(FleetLinksTest, ANodeNameHoldingAHashStillReads) {
  node_ = "rack#3-gpu-7";
  const int64_t row = Put(PowerDiagnosis("0"));
  FleetLinks links = Links();
  EXPECT_EQ(*links.Record(Shared({node_ + "#" + std::to_string(row)})), 1u);
}

TEST_F(FleetLinksTest, ALinkLastsItsTtlThenTheFaultIsTheNodesOwnAgain) {
  const Diagnosis mine = PowerDiagnosis("0");
  FleetLinks links = Links();
  ASSERT_EQ(*links.Record(Shared({node_ + "#" + std::to_string(Put(mine))})), 1u);
  clock_.Advance(23 * 3600 * kSec);
  EXPECT_TRUE(links.LinkFor(mine)->has_value());
  clock_.Advance(2 * 3600 * kSec);
  EXPECT_FALSE(links.LinkFor(mine)->has_value());
}

TEST_F(FleetLinksTest, ADamagedStoredLinkIsAnErrorNotACrash) {
  const Diagnosis mine = PowerDiagnosis("0");
  FleetLinks links = Links();
  for (const std::string& value : {std::string("{not json"), std::string("[1,2]"), std::string(R"({"cause":7})"),
                                   std::string(R"({"recorded_ns":"soon"})")}) {
    ASSERT_TRUE(store_->PutCursors({{node_, "fleet_link", policy::FaultKey(mine), value}}).ok());
    auto link = links.LinkFor(mine);
    EXPECT_FALSE(link.ok()) << value;
    EXPECT_EQ(link.status().code(), StatusCode::kCorrupt) << value;
  }
}

TEST_F(FleetLinksTest, OnlyClassesTheFleetCorrelatesMayBeShared) {
  FleetLinks links = Links();
  EXPECT_TRUE(links.MayBeShared(PowerDiagnosis("0")));
  Diagnosis hbm = PowerDiagnosis("0");
  hbm.fault_class = FaultClass::kHbmUncorrectable;
  EXPECT_FALSE(links.MayBeShared(hbm));
  hbm.fault_class = FaultClass::kUserApplication;
  EXPECT_FALSE(links.MayBeShared(hbm));
}

TEST(FleetLinksDurable, EveryNodeNameMakesALegalDurable) {
  EXPECT_EQ(FleetLinks::DurableFor("gpu-017"), "faultline-agent-gpu-017");
  EXPECT_EQ(FleetLinks::DurableFor("a.b *>c\t"), "faultline-agent-a_b___c_");
}

// Against a real server: the verdict the fleet analyzer publishes reaches the store once.
TEST_F(FleetLinksTest, FleetDiagnosesOnTheStreamAreReadOnceAndResumedByTheDurable) {
  SKIP_WITHOUT_NATS_SERVER();
  TempDir dir;
  NatsServer server(dir.File("srv"), "s1");
  ASSERT_TRUE(server.Start());
  auto c = ConnectOrFail(OptionsFor({server.url()}));
  ASSERT_NE(c, nullptr);
  const int64_t row = Put(PowerDiagnosis("0"));
  {
    FleetLinks early = Links();
    auto none = early.Poll(*c, 100'000'000);
    ASSERT_FALSE(none.ok());  // no stream before `faultline fleet` made it
  }
  fleet::nats::StreamConfig sc;
  sc.max_bytes = 64 << 20;
  ASSERT_TRUE(EnsureStreamRetrying(*c, sc).ok());
  fleet::Envelope e;
  e.kind = fleet::RecordKind::kFleetDiagnosis;
  e.place = {"lab", "fleet", "fleet"};
  e.msg_id = "pdu/r12-a@1";
  e.sent_ns = kT0;
  e.fleet = Shared({node_ + "#" + std::to_string(row)});
  const std::string subject = fleet::Subject(e.place, e.kind);
  ASSERT_TRUE(c->Publish(subject, fleet::Encode(e), e.msg_id).ok());
  ASSERT_TRUE(c->Publish(subject, "not an envelope", "junk@1").ok());
  // Another site's verdicts are not this agent's.
  fleet::Envelope other = e;
  other.place.site = "elsewhere";
  other.msg_id = "pdu/r12-a@2";
  ASSERT_TRUE(c->Publish(fleet::Subject(other.place, other.kind), fleet::Encode(other), other.msg_id).ok());

  size_t stored = 0;
  {
    FleetLinks links = Links();
    ASSERT_TRUE(WaitUntil([&] {
      auto n = links.Poll(*c, 200'000'000);
      if (n.ok()) stored += *n;
      return stored >= 1;
    }));
    EXPECT_EQ(stored, 1u);
    EXPECT_TRUE(links.LinkFor(PowerDiagnosis("0"))->has_value());
  }
  // A restarted agent resumes at its durable: nothing is read twice.
  FleetLinks again = Links();
  auto n = again.Poll(*c, 200'000'000);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 0u);
}

}  // namespace
}  // namespace faultline::daemon
