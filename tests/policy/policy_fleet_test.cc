// The policy and the fleet's verdicts (policy/fleet_verdicts.h): paperwork for a fault a
// shared fleet cause links is superseded, waits a bounded time for that verdict while the
// fault may be shared, and the node's own safety actions never wait.
#include <gtest/gtest.h>

#include <map>

#include "policy/engine.h"
#include "policy/identity.h"
#include "policy_fakes.h"
#include "store/store.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;
using testing::FakeActuator;
using testing::FakeFleet;
using testing::FakePlatform;
using testing::MakeDiagnosis;

constexpr int64_t kT0 = 1'764'400'000LL * 1'000'000'000LL;
constexpr int64_t kSec = 1'000'000'000LL;

// Verdicts by FaultKey, as the agent's FleetLinks answers them from its store.
class FakeVerdicts final : public FleetVerdicts {
 public:
  bool MayBeShared(const Diagnosis& d) const override { return shared_classes.count(d.fault_class) > 0; }
  Result<std::optional<FleetLink>> LinkFor(const Diagnosis& d) const override {
    ++lookups;
    if (!fail_with.ok()) return fail_with;
    auto it = links.find(FaultKey(d));
    if (it == links.end()) return std::optional<FleetLink>();
    return std::optional<FleetLink>(it->second);
  }
  void Link(const Diagnosis& d, const std::string& cause, const std::string& component) {
    links[FaultKey(d)] = FleetLink{cause + "/" + component + "/1", cause, cause + "/" + component, kT0};
  }
  std::set<FaultClass> shared_classes = {FaultClass::kPowerInsufficient, FaultClass::kCoolantLeak,
                                         FaultClass::kIbLinkErrors};
  std::map<std::string, FleetLink> links;
  Status fail_with;
  mutable int lookups = 0;
};

class PolicyFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(":memory:");
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
  }
  Row<Diagnosis> Put(const Diagnosis& d) {
    auto id = store_->PutDiagnosis("gpu-7", d, d.last_ns);
    EXPECT_TRUE(id.ok());
    return Row<Diagnosis>{*id, "gpu-7", d};
  }
  Engine MakeEngine(PolicyConfig c, bool with_verdicts = true) {
    Engine e(std::move(c), *store_, "gpu-7", {&slurm_, &hook_, &ticket_}, &fleet_);
    if (with_verdicts) e.UseFleetVerdicts(&verdicts_);
    return e;
  }
  static PolicyConfig Enabled(std::set<ActionClass> classes) {
    PolicyConfig c;
    c.settle_ns = 0;  // settling has its own tests (policy_settle_test.cc)
    c.enable = std::move(classes);
    c.fleet_hold_ns = 60 * kSec;
    return c;
  }
  // The latest state stored for a class ("" when none).
  std::string StateOf(ActionClass c) {
    RecordQuery q;
    q.limit = 0;
    auto rows = store_->ListActions(q);
    std::string state;
    for (const auto& row : rows->rows) {
      const auto& a = row.value.attrs;
      if (a.count("class") && a.at("class") == actions::ToString(c)) state = a.at("state");
    }
    return state;
  }
  size_t RowsOf(ActionClass c) {
    RecordQuery q;
    q.limit = 0;
    auto rows = store_->ListActions(q);
    size_t n = 0;
    for (const auto& row : rows->rows) {
      const auto& a = row.value.attrs;
      n += a.count("class") && a.at("class") == actions::ToString(c);
    }
    return n;
  }
  Diagnosis PduSag() {
    return MakeDiagnosis(FaultClass::kPowerInsufficient, Action::kFacilityTicket,
                         ComponentRef{ComponentType::kPsu, "0"}, kT0);
  }

  std::unique_ptr<Store> store_;
  FakePlatform platform_;
  FakeActuator slurm_{platform_, {ActionClass::kDrain, ActionClass::kCordon}};
  FakeActuator hook_{platform_, {ActionClass::kWebhook, ActionClass::kNotifyUser}, false};
  FakeActuator ticket_{platform_, {ActionClass::kFacilityTicket, ActionClass::kRmaBundle}, false};
  FakeFleet fleet_;
  FakeVerdicts verdicts_;
};

TEST_F(PolicyFleetTest, PaperworkWaitsForTheFleetThenStandsDownWhenASharedCauseLinksIt) {
  Engine e = MakeEngine(Enabled({ActionClass::kFacilityTicket, ActionClass::kWebhook}));
  const auto row = Put(PduSag());
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 10 * kSec).ok());
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "held_for_fleet");
  EXPECT_EQ(StateOf(ActionClass::kWebhook), "held_for_fleet");
  // Looked at again while waiting: no new row, nothing filed.
  ASSERT_TRUE(e.OnDiagnoses({}, kT0 + 40 * kSec).ok());
  EXPECT_EQ(RowsOf(ActionClass::kFacilityTicket), 1u);
  // The fleet analyzer links this node's diagnosis into one PDU cause.
  verdicts_.Link(row.value, "pdu", "r12-a");
  auto out = e.OnDiagnoses({}, kT0 + 50 * kSec);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "superseded_by_fleet");
  EXPECT_EQ(StateOf(ActionClass::kWebhook), "superseded_by_fleet");
  EXPECT_TRUE(ticket_.applied.empty());
  EXPECT_TRUE(hook_.applied.empty());
  bool named = false;
  for (const Outcome& o : *out) named |= o.detail.find("pdu/r12-a") != std::string::npos;
  EXPECT_TRUE(named) << "the stand-down names the fleet's cause";
  // Final: the same diagnosis again, long after, files nothing.
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 600 * kSec).ok());
  EXPECT_TRUE(ticket_.applied.empty());
}

TEST_F(PolicyFleetTest, WithoutAVerdictWithinTheHoldTheNodeFilesItsOwnOnce) {
  Engine e = MakeEngine(Enabled({ActionClass::kFacilityTicket}));
  const auto row = Put(PduSag());
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 10 * kSec).ok());
  ASSERT_TRUE(e.OnDiagnoses({}, kT0 + 69 * kSec).ok());
  EXPECT_TRUE(ticket_.applied.empty()) << "still within the hold (measured from the first hold)";
  ASSERT_TRUE(e.OnDiagnoses({}, kT0 + 70 * kSec).ok());
  EXPECT_EQ(ticket_.applied.size(), 1u);
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "done");
  // A link arriving after the ticket was filed changes nothing already done.
  verdicts_.Link(row.value, "pdu", "r12-a");
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 200 * kSec).ok());
  EXPECT_EQ(ticket_.applied.size(), 1u);
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "done");
}

TEST_F(PolicyFleetTest, AFaultNoFleetCauseCanShareIsNeverHeld) {
  Engine e = MakeEngine(Enabled({ActionClass::kDrain, ActionClass::kRmaBundle, ActionClass::kWebhook}));
  const auto row = Put(MakeDiagnosis(FaultClass::kHbmUncorrectable, Action::kRma, GpuComponent("3"), kT0));
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 10 * kSec).ok());
  EXPECT_EQ(StateOf(ActionClass::kRmaBundle), "done");
  EXPECT_EQ(StateOf(ActionClass::kWebhook), "done");
  EXPECT_EQ(StateOf(ActionClass::kDrain), "done");
}

TEST_F(PolicyFleetTest, TheNodesOwnSafetyNeverWaitsForTheFleet) {
  // A leak drains the node at once even while its paperwork waits for the loop's verdict.
  Engine e = MakeEngine(Enabled({ActionClass::kDrain, ActionClass::kFacilityTicket}));
  const auto row =
      Put(MakeDiagnosis(FaultClass::kCoolantLeak, Action::kDrain, ComponentRef{ComponentType::kChassis, "0"}, kT0));
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 5 * kSec).ok());
  EXPECT_EQ(StateOf(ActionClass::kDrain), "done");
  EXPECT_EQ(slurm_.applied.size(), 1u);
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "held_for_fleet");
  // Even a link already known does not stand the drain down.
  verdicts_.Link(row.value, "cooling_loop", "loop-3");
  ASSERT_TRUE(e.OnDiagnoses({}, kT0 + 30 * kSec).ok());
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "superseded_by_fleet");
  EXPECT_EQ(slurm_.applied.size(), 1u);
}

TEST_F(PolicyFleetTest, ADryRunWithAKnownLinkSaysItWouldNotFile) {
  Engine e = MakeEngine(Enabled({}));
  const auto row = Put(PduSag());
  verdicts_.Link(row.value, "feed", "A");
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 10 * kSec).ok());
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "superseded_by_fleet");
  // Without a link a dry run does not wait: it says what it would do.
  verdicts_.links.clear();
  auto other =
      MakeDiagnosis(FaultClass::kIbLinkErrors, Action::kDrain, ComponentRef{ComponentType::kIb, "mlx5_0/1"}, kT0);
  ASSERT_TRUE(e.OnDiagnoses({Put(other)}, kT0 + 20 * kSec).ok());
  EXPECT_EQ(StateOf(ActionClass::kDrain), "dry_run");
  EXPECT_EQ(StateOf(ActionClass::kWebhook), "dry_run");
}

TEST_F(PolicyFleetTest, AnUnreadableVerdictNeverStopsTheNodesPaperworkAfterTheHold) {
  Engine e = MakeEngine(Enabled({ActionClass::kFacilityTicket}));
  verdicts_.fail_with = Status(StatusCode::kCorrupt, "damaged link");
  const auto row = Put(PduSag());
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 10 * kSec).ok());
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "held_for_fleet");
  ASSERT_TRUE(e.OnDiagnoses({}, kT0 + 80 * kSec).ok());
  EXPECT_EQ(ticket_.applied.size(), 1u);
}

TEST_F(PolicyFleetTest, NoFleetOrAZeroHoldActsAsBefore) {
  {
    Engine e = MakeEngine(Enabled({ActionClass::kFacilityTicket}), /*with_verdicts=*/false);
    ASSERT_TRUE(e.OnDiagnoses({Put(PduSag())}, kT0 + 10 * kSec).ok());
    EXPECT_EQ(ticket_.applied.size(), 1u);
  }
  SetUp();
  ticket_.applied.clear();
  PolicyConfig c = Enabled({ActionClass::kFacilityTicket});
  c.fleet_hold_ns = 0;
  Engine e = MakeEngine(c);
  ASSERT_TRUE(e.OnDiagnoses({Put(PduSag())}, kT0 + 10 * kSec).ok());
  EXPECT_EQ(ticket_.applied.size(), 1u);
  EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "done");
}

TEST_F(PolicyFleetTest, AHoldSurvivesARestartAndKeepsItsStartTime) {
  const auto row = Put(PduSag());
  {
    Engine e = MakeEngine(Enabled({ActionClass::kFacilityTicket}));
    ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 10 * kSec).ok());
    EXPECT_EQ(StateOf(ActionClass::kFacilityTicket), "held_for_fleet");
  }
  Engine again = MakeEngine(Enabled({ActionClass::kFacilityTicket}));
  ASSERT_TRUE(again.OnDiagnoses({}, kT0 + 50 * kSec).ok());
  EXPECT_TRUE(ticket_.applied.empty());
  ASSERT_TRUE(again.OnDiagnoses({}, kT0 + 71 * kSec).ok());
  EXPECT_EQ(ticket_.applied.size(), 1u);
}

}  // namespace
}  // namespace faultline::policy
