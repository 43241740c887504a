// The simulator's platform double (sim/harness/sim_platform.h): what it applies, what it
// observes (as each real actuator would), its fleet view, and the policy engine running
// unchanged against it (idempotence, someone else's drain, the breaker).
#include "sim/harness/sim_platform.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "policy/engine.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "store/store.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
using actions::ActionClass;
using actions::Observed;

actions::Decision MakeDecision(const std::string& node, ActionClass c, const std::string& key, int64_t t_ns) {
  actions::Decision d;
  d.key = key;
  d.node = node;
  d.target_node = node;
  d.action_class = c;
  d.diagnosis_id = 7;
  d.diagnosis.fault_class = FaultClass::kRowRemapExhausted;
  d.diagnosis.component = ComponentRef{ComponentType::kGpu, "4", {}};
  d.time_ns = t_ns;
  return d;
}

TEST(SimPlatformTest, FleetNamesPutTheSimulatedNodeFirstAndNeverTwice) {
  const auto names = SimPlatform::FleetNames(4, "node-0002");
  EXPECT_EQ(names, (std::vector<std::string>{"node-0002", "node-0001", "node-0003", "node-0004"}));
  EXPECT_EQ(SimPlatform::FleetNames(3), (std::vector<std::string>{"node-0001", "node-0002", "node-0003"}));
  EXPECT_TRUE(SimPlatform::FleetNames(0, "x").empty());
  SimPlatform p(SimPlatform::FleetNames(1000, "sim-node"));
  EXPECT_EQ(p.known_nodes(), 1000u);
}

TEST(SimPlatformTest, DrainIsObservedAndCountedByTheFleetViewOnce) {
  SimPlatform p(SimPlatform::FleetNames(10, "sim-node"));
  const auto d = MakeDecision("sim-node", ActionClass::kDrain, "k1", 5'000'000'000);
  EXPECT_EQ(*p.Observe(d), Observed::kNotInEffect);
  ASSERT_TRUE(p.Apply(d).ok());
  EXPECT_EQ(*p.Observe(d), Observed::kInEffect);
  // A cordon is in effect on a drained node; a second drain changes nothing.
  EXPECT_EQ(*p.Observe(MakeDecision("sim-node", ActionClass::kCordon, "k2", 0)), Observed::kInEffect);
  ASSERT_TRUE(p.Apply(MakeDecision("sim-node", ActionClass::kDrain, "k3", 9'000'000'000)).ok());
  const auto applies = p.applies();
  ASSERT_EQ(applies.size(), 2u);
  EXPECT_TRUE(applies[0].changed);
  EXPECT_FALSE(applies[1].changed);
  EXPECT_EQ(applies[0].component.Id(), "gpu/4");
  auto fleet = p.Read();
  ASSERT_TRUE(fleet.ok());
  EXPECT_EQ(fleet->known_nodes, 10u);
  ASSERT_EQ(fleet->faultline_drains.size(), 1u);
  EXPECT_EQ(fleet->faultline_drains[0].node, "sim-node");
  EXPECT_EQ(fleet->faultline_drains[0].since_ns, 5'000'000'000);  // the first take-out's time
}

TEST(SimPlatformTest, CordonThenDrainKeepsTheFirstTimeAndUpgrades) {
  SimPlatform p({"a", "b"});
  ASSERT_TRUE(p.Apply(MakeDecision("a", ActionClass::kCordon, "c", 1'000)).ok());
  const auto drain = MakeDecision("a", ActionClass::kDrain, "d", 2'000);
  EXPECT_EQ(*p.Observe(drain), Observed::kNotInEffect);  // a cordon is not a drain
  ASSERT_TRUE(p.Apply(drain).ok());
  EXPECT_EQ(*p.Observe(drain), Observed::kInEffect);
  EXPECT_EQ(p.node("a")->out, SimNodeState::Out::kDrained);
  EXPECT_EQ(p.node("a")->since_ns, 1'000);
  EXPECT_EQ(p.node("b")->out, SimNodeState::Out::kIn);
}

TEST(SimPlatformTest, SomeoneElsesDrainIsLeftAloneAndNotCounted) {
  SimPlatform p({"a", "b"});
  ASSERT_TRUE(p.OperatorDrain("a", "ops-alice", 100).ok());
  EXPECT_FALSE(p.OperatorDrain("a", "faultline", 100).ok());  // an operator is not faultline
  EXPECT_FALSE(p.OperatorDrain("zz", "ops", 100).ok());
  const auto d = MakeDecision("a", ActionClass::kDrain, "k", 200);
  EXPECT_EQ(*p.Observe(d), Observed::kOtherOwner);
  EXPECT_EQ(*p.Observe(MakeDecision("a", ActionClass::kCordon, "k2", 200)), Observed::kOtherOwner);
  ASSERT_TRUE(p.Apply(d).ok());  // left as it is, like Slurm and Kubernetes do
  EXPECT_EQ(p.node("a")->owner, "ops-alice");
  EXPECT_FALSE(p.applies().back().changed);
  EXPECT_TRUE(p.Read()->faultline_drains.empty());
}

TEST(SimPlatformTest, PerDecisionClassesAndUnobservableOnes) {
  SimPlatform p({"a"});
  for (ActionClass c : {ActionClass::kRmaBundle, ActionClass::kFacilityTicket, ActionClass::kRebootNode}) {
    const auto d = MakeDecision("a", c, "key-" + std::string(actions::ToString(c)), 1);
    EXPECT_EQ(*p.Observe(d), Observed::kNotInEffect);
    ASSERT_TRUE(p.Apply(d).ok());
    EXPECT_EQ(*p.Observe(d), Observed::kInEffect);
    // Another decision key is another bundle / reboot.
    EXPECT_EQ(*p.Observe(MakeDecision("a", c, "other", 1)), Observed::kNotInEffect);
  }
  for (ActionClass c : {ActionClass::kResetGpu, ActionClass::kWebhook, ActionClass::kNotifyUser}) {
    const auto d = MakeDecision("a", c, "k", 1);
    ASSERT_TRUE(p.Apply(d).ok());
    EXPECT_EQ(*p.Observe(d), Observed::kUnknown);  // the real ones cannot tell either
  }
  EXPECT_EQ(p.node("a")->gpu_resets, 1);
  EXPECT_EQ(p.node("a")->posts, 2);
  EXPECT_EQ(p.node("a")->out, SimNodeState::Out::kIn);  // none of those takes the node out
}

TEST(SimPlatformTest, UnknownNodesAndInjectedFailuresAreErrorsAndRecorded) {
  SimPlatform p({"a"});
  const auto ghost = MakeDecision("ghost", ActionClass::kDrain, "k", 1);
  EXPECT_EQ(p.Apply(ghost).code(), StatusCode::kNotFound);
  EXPECT_EQ(p.Observe(ghost).status().code(), StatusCode::kNotFound);
  p.FailNext(ActionClass::kDrain, 1, "slurmctld down");
  const auto d = MakeDecision("a", ActionClass::kDrain, "k", 1);
  Status first = p.Apply(d);
  EXPECT_EQ(first.code(), StatusCode::kUnavailable);
  EXPECT_EQ(p.node("a")->out, SimNodeState::Out::kIn);
  EXPECT_TRUE(p.Apply(d).ok());
  const auto applies = p.applies();
  ASSERT_EQ(applies.size(), 3u);
  EXPECT_FALSE(applies[0].error.empty());
  EXPECT_EQ(applies[1].error, "slurmctld down");
  EXPECT_TRUE(applies[2].error.empty());
}

// The policy engine, unchanged, over a real store and the double.
class SimPlatformEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FakeSysfsScratchDir("simplatform");
    fs::create_directories(dir_);
    config_.enable = {ActionClass::kDrain, ActionClass::kRmaBundle, ActionClass::kWebhook};
    config_.platform = "none";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<Store> Open(const std::string& node) {
    auto s = Store::Open(dir_ + "/" + node + ".db");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  static Diagnosis Rma(int64_t first_ns) {
    Diagnosis d;
    d.fault_class = FaultClass::kRowRemapExhausted;
    d.action = Action::kRma;
    d.component = ComponentRef{ComponentType::kGpu, "4", {}};
    d.severity = Severity::kCritical;
    d.first_ns = first_ns;
    d.last_ns = first_ns;
    d.summary = "remap failure";
    return d;
  }
  std::string dir_;
  policy::PolicyConfig config_;
};

TEST_F(SimPlatformEngineTest, RepeatedEvaluationsRequestOneDrain) {
  SimPlatform p(SimPlatform::FleetNames(50, "n1"));
  auto store = Open("n1");
  ASSERT_NE(store, nullptr);
  policy::Engine engine(config_, *store, "n1", {&p}, &p);
  const Diagnosis d = Rma(1'000'000'000);
  auto id = store->PutDiagnosis("n1", d, 1'000'000'000);
  ASSERT_TRUE(id.ok());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(engine.OnDiagnoses({{*id, "n1", d}}, 2'000'000'000 + i * 1'000'000'000LL).ok());
  }
  int drains = 0, bundles = 0;
  for (const PlatformApply& a : p.applies()) {
    drains += a.action_class == ActionClass::kDrain;
    bundles += a.action_class == ActionClass::kRmaBundle;
  }
  EXPECT_EQ(drains, 1);
  EXPECT_EQ(bundles, 1);
  EXPECT_EQ(p.node("n1")->out, SimNodeState::Out::kDrained);
}

TEST_F(SimPlatformEngineTest, TheSharedFleetViewTripsTheBreakerForTheNextNode) {
  // 50 nodes: limit min(3, max(1, floor(1.0))) = 1.
  SimPlatform p(SimPlatform::FleetNames(50));
  auto s1 = Open("node-0001");
  auto s2 = Open("node-0002");
  ASSERT_TRUE(s1 && s2);
  policy::Engine e1(config_, *s1, "node-0001", {&p}, &p);
  policy::Engine e2(config_, *s2, "node-0002", {&p}, &p);
  const Diagnosis d = Rma(1'000'000'000);
  auto id1 = s1->PutDiagnosis("node-0001", d, 1'000'000'000);
  auto id2 = s2->PutDiagnosis("node-0002", d, 1'000'000'000);
  ASSERT_TRUE(id1.ok() && id2.ok());
  ASSERT_TRUE(e1.OnDiagnoses({{*id1, "node-0001", d}}, 2'000'000'000).ok());
  auto second = e2.OnDiagnoses({{*id2, "node-0002", d}}, 3'000'000'000);
  ASSERT_TRUE(second.ok());
  bool held = false;
  for (const policy::Outcome& o : *second) {
    if (o.decision.action_class == ActionClass::kDrain) held = o.state == policy::State::kHeldByBreaker;
  }
  EXPECT_TRUE(held);
  EXPECT_EQ(p.node("node-0001")->out, SimNodeState::Out::kDrained);
  EXPECT_EQ(p.node("node-0002")->out, SimNodeState::Out::kIn);
  // The bundle is not disruptive: written for both.
  int bundles = 0;
  for (const PlatformApply& a : p.applies()) bundles += a.action_class == ActionClass::kRmaBundle;
  EXPECT_EQ(bundles, 2);
}

}  // namespace
}  // namespace faultline::sim
