// Settled before acting (docs/remediation.md "Settled before acting"): a decision that
// disrupts or blames waits until its diagnosis has been the primary for settle_ns; one
// whose diagnosis was replaced before then is withdrawn; evidence that needs no wait acts
// at once; a dry run is acted on once its class is enabled.
#include <gtest/gtest.h>

#include "policy/engine.h"
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

class PolicySettleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(":memory:");
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
  }
  // Stored as the agent stores a new primary: created when it was evaluated.
  Row<Diagnosis> Put(const Diagnosis& d, int64_t created_ns) {
    auto id = store_->PutDiagnosis("gpu-7", d, created_ns);
    EXPECT_TRUE(id.ok());
    return Row<Diagnosis>{*id, "gpu-7", d};
  }
  Engine MakeEngine(std::set<ActionClass> enabled, int64_t settle_ns = 20 * kSec) {
    PolicyConfig c;
    c.enable = std::move(enabled);
    c.settle_ns = settle_ns;
    return Engine(std::move(c), *store_, "gpu-7", {&slurm_, &hook_}, &fleet_);
  }
  size_t Rows(ActionClass c, const std::string& state) {
    RecordQuery q;
    q.limit = 0;
    size_t n = 0;
    auto rows = store_->ListActions(q);
    if (!rows.ok()) return 0;
    for (const auto& r : rows->rows) {
      const auto& a = r.value.attrs;
      n += a.count("class") && a.at("class") == actions::ToString(c) && a.at("state") == state;
    }
    return n;
  }

  std::unique_ptr<Store> store_;
  FakePlatform platform_;
  FakeActuator slurm_{platform_, {ActionClass::kDrain, ActionClass::kCordon}};
  FakeActuator hook_{platform_, {ActionClass::kWebhook, ActionClass::kNotifyUser}, false};
  FakeFleet fleet_;
};

TEST_F(PolicySettleTest, ADrainWaitsUntilItsDiagnosisHasSettled) {
  Engine e = MakeEngine({ActionClass::kDrain});
  const Row<Diagnosis> hbm =
      Put(MakeDiagnosis(FaultClass::kHbmUncorrectable, Action::kRma, GpuComponent("3"), kT0), kT0 + kSec);
  ASSERT_TRUE(e.OnDiagnoses({hbm}, kT0 + 2 * kSec).ok());
  EXPECT_EQ(Rows(ActionClass::kDrain, "held_until_settled"), 1u);
  EXPECT_EQ(Rows(ActionClass::kDrain, "done"), 0u);
  // Paging on-call waits too: a page for a diagnosis the next poll revises sends people
  // after the wrong story.
  EXPECT_EQ(Rows(ActionClass::kWebhook, "held_until_settled"), 1u);
  EXPECT_EQ(Rows(ActionClass::kWebhook, "dry_run"), 0u);
  // Looked at again with nothing new, once settled: carried out (the page as a dry run).
  ASSERT_TRUE(e.OnDiagnoses({}, kT0 + 22 * kSec).ok());
  EXPECT_EQ(Rows(ActionClass::kDrain, "done"), 1u);
  EXPECT_EQ(Rows(ActionClass::kWebhook, "dry_run"), 1u);
}

// A slowdown primary that lives a few seconds while a hardware fault's evidence arrives
// never tells the job's owner; its pending decision is withdrawn.
TEST_F(PolicySettleTest, ATransientPrimaryIsWithdrawnNeverActedOn) {
  Engine e = MakeEngine({ActionClass::kNotifyUser, ActionClass::kDrain});
  Diagnosis slow = MakeDiagnosis(FaultClass::kWorkloadImbalance, Action::kNotifyUser, HostComponent(), kT0);
  slow.severity = Severity::kWarning;
  const Row<Diagnosis> transient = Put(slow, kT0 + kSec);
  ASSERT_TRUE(e.OnDiagnoses({transient}, kT0 + kSec).ok());
  EXPECT_EQ(Rows(ActionClass::kNotifyUser, "held_until_settled"), 1u);
  Diagnosis nvlink = MakeDiagnosis(FaultClass::kNvlinkErrors, Action::kReseatOrReplaceLink, GpuComponent("2"), kT0);
  const Row<Diagnosis> real = Put(nvlink, kT0 + 4 * kSec);
  ASSERT_TRUE(e.OnDiagnoses({real}, kT0 + 40 * kSec).ok());
  EXPECT_EQ(Rows(ActionClass::kNotifyUser, "withdrawn"), 1u);
  EXPECT_EQ(Rows(ActionClass::kNotifyUser, "done"), 0u);
  EXPECT_EQ(hook_.applied.size(), 0u) << "the owner was never told";
  EXPECT_EQ(Rows(ActionClass::kDrain, "done"), 1u) << "the critical NVLink fault, settled, drains";
}

TEST_F(PolicySettleTest, EvidenceThatNeedsNoWaitActsAtOnce) {
  for (FaultClass c : {FaultClass::kGpuFellOffBus, FaultClass::kCoolantLeak, FaultClass::kRowRemapExhausted}) {
    SetUp();
    Engine e = MakeEngine({ActionClass::kDrain});
    const Row<Diagnosis> row = Put(MakeDiagnosis(c, Action::kDrain, GpuComponent("7"), kT0), kT0);
    ASSERT_TRUE(e.OnDiagnoses({row}, kT0).ok());
    EXPECT_EQ(Rows(ActionClass::kDrain, "done"), 1u) << ToString(c);
  }
}

// The documented HealthCheckProgram setup: the agent (dry run by default) recorded the
// drain it would make; `check --slurm --apply` then enables drain and must drain.
TEST_F(PolicySettleTest, ADryRunIsCarriedOutOnceItsClassIsEnabled) {
  const Row<Diagnosis> leak = Put(MakeDiagnosis(FaultClass::kCoolantLeak, Action::kFacilityTicket,
                                                ComponentRef{ComponentType::kCoolant, "cp3"}, kT0),
                                  kT0);
  {
    Engine agent = MakeEngine({});
    ASSERT_TRUE(agent.OnDiagnoses({leak}, kT0).ok());
    EXPECT_EQ(Rows(ActionClass::kDrain, "dry_run"), 1u);
  }
  Engine check = MakeEngine({ActionClass::kDrain});
  check.LimitTo({ActionClass::kDrain, ActionClass::kCordon});
  ASSERT_TRUE(check.Start(kT0 + 300 * kSec).ok());
  ASSERT_TRUE(check.OnDiagnoses({leak}, kT0 + 300 * kSec).ok());
  EXPECT_EQ(Rows(ActionClass::kDrain, "done"), 1u);
  EXPECT_EQ(slurm_.applied.size(), 1u);
}

}  // namespace
}  // namespace faultline::policy
