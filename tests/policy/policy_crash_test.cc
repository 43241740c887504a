// SIGKILL between "decided" and "done": the action is neither lost nor repeated. A forked
// child runs the policy over a file store and a platform persisted in a file, and kills
// itself at the worst moments; the parent restarts the policy over what is left.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

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

enum class KillPoint { kBeforeActuator, kAfterPlatformChanged };

class PolicyCrashTest : public ::testing::TestWithParam<KillPoint> {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/faultline-policy-crash-" + std::to_string(getpid()) + "-" +
           std::to_string(static_cast<int>(GetParam()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  PolicyConfig Config() {
    PolicyConfig c;
    c.enable = {ActionClass::kDrain};
    return c;
  }
  std::string dir_;
};

TEST_P(PolicyCrashTest, RecoveryNeitherLosesNorRepeatsTheAction) {
  const std::string store_path = dir_ + "/faultline.db";
  const std::string platform_path = dir_ + "/platform.txt";
  const Diagnosis d = MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0);
  int64_t diag_id = 0;
  {
    auto store = Store::Open(store_path);
    ASSERT_TRUE(store.ok());
    auto id = (*store)->PutDiagnosis("gpu-7", d, kT0);
    ASSERT_TRUE(id.ok());
    diag_id = *id;
  }
  const KillPoint point = GetParam();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto store = Store::Open(store_path);
    if (!store.ok()) _exit(3);
    FakePlatform platform(platform_path);
    FakeActuator act(platform, {ActionClass::kDrain});
    FakeFleet fleet;
    Engine e(Config(), **store, "gpu-7", {&act}, &fleet);
    e.after_decided = [&](const actions::Decision& dec) {
      if (point == KillPoint::kAfterPlatformChanged) platform.Set(FakeActuator::Key(dec), "faultline");
      raise(SIGKILL);
    };
    (void)e.OnDiagnoses({Row<Diagnosis>{diag_id, "gpu-7", d}}, kT0 + 60 * kSec);
    _exit(4);  // never reached: the hook kills first
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  auto store = Store::Open(store_path);
  ASSERT_TRUE(store.ok());
  FakePlatform platform(platform_path);
  const int applies_before = platform.applies();
  EXPECT_EQ(applies_before, point == KillPoint::kAfterPlatformChanged ? 1 : 0);
  FakeActuator act(platform, {ActionClass::kDrain});
  FakeFleet fleet;
  Engine e(Config(), **store, "gpu-7", {&act}, &fleet);
  const std::string key = DecisionKey("gpu-7", ActionClass::kDrain, d);
  {
    Ledger ledger;
    ASSERT_TRUE(ledger.Load(**store, "gpu-7").ok());
    ASSERT_NE(ledger.Latest(key), nullptr);
    EXPECT_EQ(ledger.Latest(key)->state, State::kDecided);  // what the crash left
  }
  auto recovered = e.Start(kT0 + 120 * kSec);
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  ASSERT_EQ(recovered->size(), 1u);
  EXPECT_EQ((*recovered)[0].state, State::kDone);
  // Exactly one effect on the platform in total: not lost, not repeated.
  EXPECT_EQ(platform.applies(), 1);
  EXPECT_EQ(act.applied.size(), point == KillPoint::kAfterPlatformChanged ? 0u : 1u);
  EXPECT_EQ(platform.Owner("gpu-7/drain"), "faultline");
  // Later evaluations and another restart change nothing.
  ASSERT_TRUE(e.OnDiagnoses({Row<Diagnosis>{diag_id, "gpu-7", d}}, kT0 + 180 * kSec).ok());
  Engine again(Config(), **store, "gpu-7", {&act}, &fleet);
  ASSERT_TRUE(again.Start(kT0 + 240 * kSec).ok());
  ASSERT_TRUE(again.OnDiagnoses({Row<Diagnosis>{diag_id, "gpu-7", d}}, kT0 + 240 * kSec).ok());
  EXPECT_EQ(platform.applies(), 1);
  EXPECT_EQ(again.ledger().Latest(key)->state, State::kDone);
}

INSTANTIATE_TEST_SUITE_P(KillPoints, PolicyCrashTest,
                         ::testing::Values(KillPoint::kBeforeActuator, KillPoint::kAfterPlatformChanged),
                         [](const ::testing::TestParamInfo<KillPoint>& info) {
                           return info.param == KillPoint::kBeforeActuator ? "BeforeActuator" : "AfterPlatformChanged";
                         });

}  // namespace
}  // namespace faultline::policy
