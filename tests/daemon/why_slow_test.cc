#include "daemon/why_slow.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "../cli/run_faultline.h"
#include "core/time.h"
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
  EXPECT_EQ(answer->status, WhySlowStatus::kSlowdown);
  for (const Diagnosis& other : answer->diagnoses) EXPECT_NE(other.fault_class, FaultClass::kGpuPowerBrake);
  for (const Diagnosis& other : answer->diagnoses) EXPECT_NE(other.fault_class, FaultClass::kWorkloadImbalance);
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
  EXPECT_EQ(answer->status, WhySlowStatus::kNoSlowdown);  // no step times: nothing measured slow
}

TEST_F(DaemonWhySlow, SlowStepsAloneAreWorkloadImbalance) {
  AddSteps(kT0, 30, 15);
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->status, WhySlowStatus::kSlowdown);
  EXPECT_EQ(answer->diagnoses.front().fault_class, FaultClass::kWorkloadImbalance);
  EXPECT_EQ(answer->diagnoses.front().action, Action::kNotifyUser);
  EXPECT_NE(answer->reason.find("slowdown seen: job train-1 step time"), std::string::npos) << answer->reason;
}

TEST_F(DaemonWhySlow, FindingsOutsideTheWindowAndOtherNodesAreIgnored) {
  ASSERT_TRUE(store_->PutFinding("node7", PsuLost(kT0 - 3600 * kSec)).ok());
  ASSERT_TRUE(store_->PutFinding("node8", PsuLost(kT0 + 10 * kSec)).ok());
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->findings, 0u);
  EXPECT_EQ(answer->status, WhySlowStatus::kUnknown);
  ASSERT_EQ(answer->diagnoses.size(), 1u);
  EXPECT_EQ(answer->diagnoses.front().fault_class, FaultClass::kNone);
  EXPECT_EQ(answer->store_nodes, (std::vector<std::string>{"node7", "node8"}));
}

// Fail closed: nothing stored at all is "unknown", not "suspect the workload".
TEST_F(DaemonWhySlow, EmptyStoreIsUnknown) {
  auto answer = WhySlow(*store_, {.node = "node7"});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->status, WhySlowStatus::kUnknown);
  ASSERT_EQ(answer->diagnoses.size(), 1u);
  EXPECT_EQ(answer->diagnoses.front().fault_class, FaultClass::kNone);
  EXPECT_EQ(answer->diagnoses.front().action, Action::kNone);
  EXPECT_EQ(answer->findings, 0u);
  EXPECT_TRUE(answer->store_nodes.empty());
  EXPECT_EQ(answer->reason,
            "no data for node node7 in the window [start of the store, end of the store]; the store holds no rows");
}

TEST_F(DaemonWhySlow, WrongNodeIsUnknownAndNamesTheStoresNodes) {
  AddSteps(kT0, 30, 15);  // node7 slowed down; the question names another node
  auto answer = WhySlow(*store_, {.node = "node9", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->status, WhySlowStatus::kUnknown);
  EXPECT_EQ(answer->observations, 0u);
  EXPECT_EQ(answer->store_nodes, (std::vector<std::string>{"node7"}));
  EXPECT_EQ(answer->reason, "no data for node node9 in the window [" + FormatIso8601(kT0) + ", " +
                                FormatIso8601(kT0 + 600 * kSec) + "]; the store holds node(s): node7");
  for (const Diagnosis& d : answer->diagnoses) {
    EXPECT_NE(d.fault_class, FaultClass::kWorkloadImbalance);
    EXPECT_NE(d.action, Action::kNotifyUser);
  }
}

TEST_F(DaemonWhySlow, EmptyWindowIsUnknownAndSaysTheNodeHasDataElsewhere) {
  AddSteps(kT0, 30, 15);
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0 + 3600 * kSec, .until_ns = kT0 + 7200 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->status, WhySlowStatus::kUnknown);
  EXPECT_NE(answer->reason.find("in the window [" + FormatIso8601(kT0 + 3600 * kSec)), std::string::npos)
      << answer->reason;
  EXPECT_NE(answer->reason.find("node node7 has data outside this window"), std::string::npos) << answer->reason;
  EXPECT_EQ(answer->reason.find("the store holds node(s)"), std::string::npos) << answer->reason;
}

// Steady steps: data, and nothing slow in it. No workload blame, no job owner notified.
TEST_F(DaemonWhySlow, DataWithoutASlowdownBlamesNoOne) {
  AddSteps(kT0, 30, 30);
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->status, WhySlowStatus::kNoSlowdown);
  EXPECT_EQ(answer->step_reports, 30u);
  EXPECT_NE(answer->reason.find("no slowdown seen in the window"), std::string::npos) << answer->reason;
  EXPECT_NE(answer->reason.find("found no slowdown in 30 step-time/throughput report(s)"), std::string::npos)
      << answer->reason;
  ASSERT_FALSE(answer->diagnoses.empty());
  EXPECT_EQ(answer->diagnoses.front().fault_class, FaultClass::kNone);
  for (const Diagnosis& d : answer->diagnoses) {
    EXPECT_NE(d.fault_class, FaultClass::kWorkloadImbalance);
    EXPECT_NE(d.action, Action::kNotifyUser);
  }
}

// A hardware fault without a slowdown is still reported (it is a fault), but the answer
// does not claim a slowdown and names no workload.
TEST_F(DaemonWhySlow, HardwareFaultWithoutASlowdownIsNotASlowdown) {
  AddSteps(kT0, 30, 30);
  ASSERT_TRUE(store_->PutFinding("node7", PsuLost(kT0 + 100 * kSec)).ok());
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->status, WhySlowStatus::kNoSlowdown);
  EXPECT_EQ(answer->diagnoses.front().fault_class, FaultClass::kPowerSupply);
  for (const Diagnosis& d : answer->diagnoses) EXPECT_NE(d.fault_class, FaultClass::kWorkloadImbalance);
}

// The window's own step times cannot judge (no baseline in it), but the agent measured a
// slowdown over its sliding window and stored it: that is evidence, and with no hardware
// cause the workload is named.
TEST_F(DaemonWhySlow, TheAgentsStoredSlowdownIsEvidenceWhenTheWindowCannotJudge) {
  AddSteps(kT0, 3, 0);  // three slow steps: too few to judge
  Finding slow = MakeFinding(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent(), kT0 - 60 * kSec,
                             Action::kNotifyUser);
  slow.last_ns = kT0 + 20 * kSec;
  slow.attrs["symptom"] = "true";
  slow.summary = "job train-1 step time 1.9 s against a 1 s baseline (+90%)";
  ASSERT_TRUE(store_->PutFinding("node7", slow).ok());
  auto answer = WhySlow(*store_, {.node = "node7", .since_ns = kT0, .until_ns = kT0 + 600 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->status, WhySlowStatus::kSlowdown);
  EXPECT_NE(answer->reason.find("the agent's stored finding"), std::string::npos) << answer->reason;
  EXPECT_EQ(answer->diagnoses.front().fault_class, FaultClass::kWorkloadImbalance);
}

TEST_F(DaemonWhySlow, JsonCarriesTheStatus) {
  AddSteps(kT0, 30, 15);
  auto unknown = WhySlow(*store_, {.node = "node9"});
  ASSERT_TRUE(unknown.ok());
  Json j = WhySlowJson("node9", *unknown);
  EXPECT_EQ(j["status"], "unknown");
  EXPECT_EQ(j["reason"], unknown->reason);
  EXPECT_EQ(j["store_nodes"], Json::array({"node7"}));
  EXPECT_EQ(j["primary"]["fault_class"], "none");
  auto slow = WhySlow(*store_, {.node = "node7"});
  ASSERT_TRUE(slow.ok());
  j = WhySlowJson("node7", *slow);
  EXPECT_EQ(j["status"], "slowdown");
  EXPECT_EQ(j["primary"]["fault_class"], "workload_imbalance");
  EXPECT_FALSE(j.contains("store_nodes"));
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

// `faultline why-slow` as an operator runs it (the real binary; skipped when not built):
// exit 3 and a plain "no data" for a wrong node or an empty window, exit 0 otherwise.
class DaemonWhySlowCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(FAULTLINE_BINARY_DIR) + "/faultline")) {
      GTEST_SKIP() << "faultline CLI not built";
    }
  }
  // A store at a fresh path with node7's 30 steps (slow from step `slow_from`) and `findings`.
  std::string MakeStore(int slow_from, const std::vector<Finding>& findings = {}) {
    const std::string path = dir_.File("store" + std::to_string(stores_++) + ".db");
    auto store = Store::Open(path);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return path;
    std::vector<Observation> steps;
    for (int i = 0; i < 30; ++i) steps.push_back(Step(kT0 + i * 10 * kSec, i < slow_from ? 1.0 : 1.9));
    EXPECT_TRUE((*store)->Append(steps).ok());
    for (const Finding& f : findings) EXPECT_TRUE((*store)->PutFinding("node7", f).ok());
    return path;
  }
  static testing_cli::RunResult WhySlowCli(const std::string& store, const std::string& args) {
    return testing_cli::Faultline("why-slow --store " + store + " " + args);
  }
  static std::string Window() {
    return "--since " + FormatIso8601(kT0) + " --until " + FormatIso8601(kT0 + 600 * kSec);
  }
  ScratchDir dir_{"why_slow_cli"};
  int stores_ = 0;
};

TEST_F(DaemonWhySlowCli, WrongNodeIsUnknownExit3WithTheStoresNodes) {
  const std::string store = MakeStore(15);
  auto r = WhySlowCli(store, "--node node9 " + Window());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("no data for node node9 in the window [" + FormatIso8601(kT0)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the store holds node(s): node7"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("workload_imbalance"), std::string::npos) << r.out;
  auto j = WhySlowCli(store, "--node node9 --json");
  EXPECT_EQ(j.exit_code, 3) << j.out << j.err;
  Json body = Json::parse(j.out, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << j.out;
  EXPECT_EQ(body["status"], "unknown");
  EXPECT_EQ(body["store_nodes"], Json::array({"node7"}));
  EXPECT_NE(body["reason"].get<std::string>().find("no data for node node9"), std::string::npos);
}

TEST_F(DaemonWhySlowCli, EmptyWindowIsUnknownExit3) {
  const std::string store = MakeStore(15);
  auto r = WhySlowCli(store, "--node node7 --since " + FormatIso8601(kT0 + 3600 * kSec) + " --until " +
                                 FormatIso8601(kT0 + 7200 * kSec));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("no data for node node7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("has data outside this window"), std::string::npos) << r.out;
}

TEST_F(DaemonWhySlowCli, DataWithoutASlowdownIsExit0AndBlamesNoOne) {
  const std::string store = MakeStore(30);
  auto r = WhySlowCli(store, "--node node7 " + Window());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no slowdown seen"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("workload_imbalance"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("notify_user"), std::string::npos) << r.out;
  auto j = WhySlowCli(store, "--node node7 --json " + Window());
  EXPECT_EQ(j.exit_code, 0);
  Json body = Json::parse(j.out, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << j.out;
  EXPECT_EQ(body["status"], "no_slowdown");
  EXPECT_EQ(body["primary"]["fault_class"], "none");
}

TEST_F(DaemonWhySlowCli, SlowdownWithoutAHardwareCauseIsTheWorkload) {
  const std::string store = MakeStore(15);
  auto j = WhySlowCli(store, "--node node7 --json " + Window());
  EXPECT_EQ(j.exit_code, 0) << j.out << j.err;
  Json body = Json::parse(j.out, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << j.out;
  EXPECT_EQ(body["status"], "slowdown");
  EXPECT_EQ(body["primary"]["fault_class"], "workload_imbalance");
  EXPECT_EQ(body["primary"]["action"], "notify_user");
}

TEST_F(DaemonWhySlowCli, SlowdownWithAHardwareCauseIsThatCause) {
  const std::string store = MakeStore(15, {PsuLost(kT0 + 100 * kSec), PowerBrake("0", kT0 + 120 * kSec)});
  auto r = WhySlowCli(store, "--node node7 " + Window());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("slowdown seen"), std::string::npos) << r.out;
  auto j = WhySlowCli(store, "--node node7 --json " + Window());
  Json body = Json::parse(j.out, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << j.out;
  EXPECT_EQ(body["status"], "slowdown");
  EXPECT_EQ(body["primary"]["fault_class"], "power_supply");
  EXPECT_EQ(body["primary"]["component"]["type"], "psu");
}

}  // namespace
}  // namespace faultline::daemon
