#include "daemon/why_slow.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::kSec;
using testing::kT0;
using testing::ScratchDir;
using testing::Step;

Finding MakeFinding(Layer layer, FaultClass cls, ComponentRef component, int64_t at, Action action) {
  Finding f;
  f.layer = layer;
  f.fault_class = cls;
  f.component = std::move(component);
  f.first_ns = at;
  f.last_ns = at;
  f.severity = Severity::kWarning;
  f.action = action;
  f.confidence = 0.8;
  f.summary = std::string(ToString(cls)) + " seen";
  Evidence e;
  e.time_ns = at;
  e.component = f.component.Id();
  e.text = f.summary;
  f.evidence.push_back(e);
  return f;
}

Finding PsuLost(int64_t at) {
  Finding f = MakeFinding(Layer::kOob, FaultClass::kPowerSupply, {ComponentType::kPsu, "1", {}}, at, Action::kRma);
  f.severity = Severity::kCritical;
  return f;
}

Finding PowerBrake(const std::string& gpu, int64_t at) {
  Finding f = MakeFinding(Layer::kGpu, FaultClass::kGpuPowerBrake, {ComponentType::kGpu, gpu, {{"index", gpu}}}, at,
                          Action::kMonitor);
  f.attrs["symptom"] = "true";
  return f;
}

class DaemonWhySlow : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(":memory:");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void AddSteps(int64_t from, int n, int slow_from) {
    std::vector<Observation> steps;
    for (int i = 0; i < n; ++i) steps.push_back(Step(from + i * 10 * kSec, i < slow_from ? 1.0 : 1.9));
    ASSERT_TRUE(store_->Append(steps).ok());
  }
  std::unique_ptr<Store> store_;
};

TEST_F(DaemonWhySlow, PsuFailureExplainsBrakeAndSlowSteps) {
  AddSteps(kT0, 30, 15);  // slow from kT0 + 150 s
  ASSERT_TRUE(store_->PutFinding("node7", PsuLost(kT0 + 100 * kSec)).ok());
  ASSERT_TRUE(store_->PutFinding("node7", PowerBrake("0", kT0 + 120 * kSec)).ok());
  ASSERT_TRUE(store_->PutFinding("node7", PowerBrake("1", kT0 + 121 * kSec)).ok());
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  ASSERT_FALSE(answer->diagnoses.empty());
  const Diagnosis& d = answer->diagnoses.front();
  EXPECT_EQ(d.fault_class, FaultClass::kPowerSupply);
  EXPECT_EQ(d.component.Id(), "psu/1");
  EXPECT_EQ(d.action, Action::kRma);
  EXPECT_EQ(answer->findings, 3u);
  EXPECT_EQ(answer->observations, 30u);
  for (const Diagnosis& other : answer->diagnoses) EXPECT_NE(other.fault_class, FaultClass::kGpuPowerBrake);
}

TEST_F(DaemonWhySlow, RestoredFindingVersionsCountOnce) {
  Finding psu = PsuLost(kT0 + 100 * kSec);
  ASSERT_TRUE(store_->PutFinding("node7", psu).ok());
  psu.last_ns += 50 * kSec;
  psu.count = 3;
  ASSERT_TRUE(store_->PutFinding("node7", psu).ok());
  auto answer = WhySlow(*store_, {.node = "node7"});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->findings, 1u);
  EXPECT_EQ(answer->diagnoses.front().fault_class, FaultClass::kPowerSupply);
}

TEST_F(DaemonWhySlow, SlowStepsAloneAreWorkloadImbalance) {
  AddSteps(kT0, 30, 15);
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->diagnoses.front().fault_class, FaultClass::kWorkloadImbalance);
}

TEST_F(DaemonWhySlow, FindingsOutsideTheWindowAndOtherNodesAreIgnored) {
  ASSERT_TRUE(store_->PutFinding("node7", PsuLost(kT0 - 3600 * kSec)).ok());
  ASSERT_TRUE(store_->PutFinding("node8", PsuLost(kT0 + 10 * kSec)).ok());
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->findings, 0u);
  EXPECT_NE(answer->diagnoses.front().fault_class, FaultClass::kPowerSupply);
}

TEST_F(DaemonWhySlow, EmptyStoreSaysSo) {
  auto answer = WhySlow(*store_, {.node = "node7"});
  ASSERT_TRUE(answer.ok());
  ASSERT_EQ(answer->diagnoses.size(), 1u);
  EXPECT_EQ(answer->findings, 0u);
}

TEST_F(DaemonWhySlow, BadQueriesAreErrors) {
  EXPECT_EQ(WhySlow(*store_, {.node = ""}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(WhySlow(*store_, {.node = "n", .since_ns = 10, .until_ns = 5}).status().code(),
            StatusCode::kInvalidArgument);
}

// `faultline why-slow` on a store it may not write (a read-only copy, a directory owned by
// the agent's user): opened read-only, it answers, and the file is left as it was.
TEST(DaemonWhySlowReadOnly, AnswersFromAReadOnlyStoreInAReadOnlyDirectory) {
  ScratchDir dir("why_slow_ro");
  const std::string sub = dir.File("ro");
  std::filesystem::create_directories(sub);
  const std::string path = sub + "/store.db";
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    std::vector<Observation> steps;
    for (int i = 0; i < 30; ++i) steps.push_back(Step(kT0 + i * 10 * kSec, i < 15 ? 1.0 : 1.9));
    ASSERT_TRUE((*store)->Append(steps).ok());
    ASSERT_TRUE((*store)->PutFinding("node7", PsuLost(kT0 + 100 * kSec)).ok());
    ASSERT_TRUE((*store)->PutFinding("node7", PowerBrake("0", kT0 + 120 * kSec)).ok());
  }
  ::chmod(path.c_str(), 0444);
  ::chmod(sub.c_str(), 0555);
  ::chmod(dir.path().c_str(), 0755);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Root writes through any mode bits: ask as an unprivileged user.
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(90);
    StoreOptions ro;
    ro.read_only = true;
    auto store = Store::Open(path, ro);
    if (!store.ok()) ::_exit(1);
    auto answer = WhySlow(**store, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
    if (!answer.ok() || answer->diagnoses.empty()) ::_exit(2);
    ::_exit(answer->diagnoses.front().fault_class == FaultClass::kPowerSupply ? 0 : 3);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::chmod(sub.c_str(), 0755);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

}  // namespace
}  // namespace faultline::daemon
