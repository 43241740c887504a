// `bench remediation`'s core (sim/harness/remediation_bench.h): the expectation table, the
// summary, and small scenarios written here run end to end (the real agent in lockstep,
// [policy] enabling every class, the platform double), then a storm over their stored
// diagnoses. Behaviour only: no wall-clock figure is asserted.
#include "sim/harness/remediation_bench.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
using actions::ActionClass;

Truth MakeTruth(FaultClass c, Action a, std::vector<std::string> components = {}) {
  Truth t;
  t.fault_class = c;
  t.action = a;
  t.components = std::move(components);
  t.start_s = 10;
  return t;
}

TEST(RemediationExpectationTest, HardwareActionsMapToTheirPlatformRequests) {
  auto rma = ExpectedRemediation(MakeTruth(FaultClass::kRowRemapExhausted, Action::kRma, {"gpu/4"}));
  EXPECT_EQ(rma.correct, (std::set<ActionClass>{ActionClass::kDrain, ActionClass::kRmaBundle}));
  EXPECT_TRUE(rma.disruptive_allowed);
  EXPECT_TRUE(rma.scored);
  EXPECT_TRUE(WarrantsDrain(rma));
  auto reboot = ExpectedRemediation(MakeTruth(FaultClass::kGpuFellOffBus, Action::kRebootNode));
  EXPECT_EQ(reboot.correct, (std::set<ActionClass>{ActionClass::kDrain, ActionClass::kRebootNode}));
  auto reset = ExpectedRemediation(MakeTruth(FaultClass::kGpuSram, Action::kResetGpu));
  EXPECT_EQ(reset.correct, (std::set<ActionClass>{ActionClass::kDrain, ActionClass::kResetGpu}));
  auto cordon = ExpectedRemediation(MakeTruth(FaultClass::kHostMemory, Action::kCordon));
  EXPECT_EQ(cordon.correct, (std::set<ActionClass>{ActionClass::kCordon}));
  auto link = ExpectedRemediation(MakeTruth(FaultClass::kPcieLinkDegraded, Action::kReseatOrReplaceLink));
  EXPECT_EQ(link.correct, (std::set<ActionClass>{ActionClass::kWebhook}));
  EXPECT_FALSE(link.disruptive_allowed);
  EXPECT_TRUE(link.disruptive_judged);
  auto monitor = ExpectedRemediation(MakeTruth(FaultClass::kHbmSbeAging, Action::kMonitor));
  EXPECT_TRUE(monitor.correct.empty());
  EXPECT_TRUE(monitor.scored);
  EXPECT_FALSE(monitor.disruptive_allowed);
}

TEST(RemediationExpectationTest, SafetyClassesNeverWarrantDisruption) {
  for (Action a : {Action::kNotifyUser, Action::kNone, Action::kDrain, Action::kRma}) {
    auto user = ExpectedRemediation(MakeTruth(FaultClass::kUserApplication, a));
    EXPECT_EQ(user.correct, (std::set<ActionClass>{ActionClass::kNotifyUser}));
    EXPECT_FALSE(user.disruptive_allowed);
    EXPECT_TRUE(user.disruptive_judged);
  }
  auto none = ExpectedRemediation(MakeTruth(FaultClass::kNone, Action::kNone));
  EXPECT_TRUE(none.correct.empty());
  EXPECT_FALSE(none.disruptive_allowed);
  EXPECT_TRUE(none.disruptive_judged);
  auto imbalance = ExpectedRemediation(MakeTruth(FaultClass::kWorkloadImbalance, Action::kNotifyUser));
  EXPECT_EQ(imbalance.correct, (std::set<ActionClass>{ActionClass::kNotifyUser}));
  EXPECT_FALSE(imbalance.disruptive_allowed);
  auto driver = ExpectedRemediation(MakeTruth(FaultClass::kDriverFault, Action::kNone));
  EXPECT_FALSE(driver.scored);
  EXPECT_FALSE(driver.disruptive_allowed);
  EXPECT_TRUE(driver.disruptive_judged);
}

TEST(RemediationExpectationTest, PhysicalCausesGetAFacilityTicketAndTakeOutOnlyWhenTheTruthSaysSo) {
  auto psu = ExpectedRemediation(MakeTruth(FaultClass::kPowerSupply, Action::kRma, {"psu/PSU4"}));
  EXPECT_EQ(psu.correct, (std::set<ActionClass>{ActionClass::kFacilityTicket}));
  EXPECT_TRUE(psu.also_ok.count(ActionClass::kRmaBundle));  // the PSU's own RMA
  EXPECT_FALSE(psu.disruptive_allowed);
  EXPECT_TRUE(psu.disruptive_judged);
  auto leak = ExpectedRemediation(MakeTruth(FaultClass::kCoolantLeak, Action::kDrain));
  EXPECT_EQ(leak.correct, (std::set<ActionClass>{ActionClass::kFacilityTicket}));
  EXPECT_TRUE(leak.disruptive_allowed);
  auto unstated = ExpectedRemediation(MakeTruth(FaultClass::kCoolantLeak, Action::kNone));
  EXPECT_TRUE(unstated.scored);  // the ticket is due whatever the action
  EXPECT_FALSE(unstated.disruptive_judged);
  auto hw_unstated = ExpectedRemediation(MakeTruth(FaultClass::kGspFirmware, Action::kNone));
  EXPECT_FALSE(hw_unstated.scored);
  EXPECT_FALSE(hw_unstated.disruptive_judged);
}

ScenarioRemediation Scored(const std::string& name, Truth t, std::optional<double> first,
                           std::optional<double> complete) {
  ScenarioRemediation r;
  r.name = name;
  r.truth = t;
  r.expect = ExpectedRemediation(t);
  r.first_correct_s = first;
  r.complete_s = complete;
  r.first_diagnosis_s = first;
  return r;
}

TEST(RemediationSummaryTest, MediansMissesAndSafetyCounts) {
  std::vector<ScenarioRemediation> runs;
  runs.push_back(Scored("a", MakeTruth(FaultClass::kRowRemapExhausted, Action::kRma), 13.0, 13.0));     // 3 s
  runs.push_back(Scored("b", MakeTruth(FaultClass::kGpuFellOffBus, Action::kRebootNode), 17.0, 20.0));  // 7 s
  runs.push_back(Scored("c", MakeTruth(FaultClass::kGpuSram, Action::kResetGpu), 30.0, std::nullopt));  // 20 s
  runs.push_back(Scored("miss", MakeTruth(FaultClass::kNvswitchFault, Action::kRma), std::nullopt, std::nullopt));
  runs.push_back(Scored("quiet", MakeTruth(FaultClass::kNone, Action::kNone), std::nullopt, std::nullopt));
  runs.push_back(Scored("n/a", MakeTruth(FaultClass::kGspFirmware, Action::kNone), std::nullopt, std::nullopt));
  ScenarioRemediation wrong = Scored("w", MakeTruth(FaultClass::kUserApplication, Action::kNotifyUser), 11.0, 11.0);
  wrong.wrong_disruptive = {"drain"};
  wrong.duplicates = {"notify_user twice"};
  runs.push_back(wrong);
  const RemediationSummary s = SummarizeRemediation(runs);
  EXPECT_EQ(s.scenarios, 7);
  EXPECT_EQ(s.scored, 5);
  EXPECT_EQ(s.correct, 4);
  EXPECT_DOUBLE_EQ(s.first_correct_median_s, (3.0 + 7.0) / 2);  // 1, 3, 7, 20
  EXPECT_DOUBLE_EQ(s.first_correct_max_s, 20.0);
  EXPECT_EQ(s.complete, 3);
  EXPECT_DOUBLE_EQ(s.complete_max_s, 10.0);
  EXPECT_EQ(s.misses.size(), 1u);
  EXPECT_EQ(s.not_scored.size(), 1u);
  EXPECT_EQ(s.expect_nothing, 1);
  EXPECT_EQ(s.expect_nothing_quiet, 1);
  EXPECT_EQ(s.wrong_disruptive, 1);
  EXPECT_EQ(s.duplicates, 1);
}

// Scenarios written for this test: a GPU whose DBE cannot be remapped (drain + RMA), and a
// buggy program faulting on one GPU (notify the user, never take the node out).
constexpr char kRemapFailure[] = R"(name: test-remap-failure-gpu2
description: GPU 2 has a DBE it cannot remap (XID 64); drain and RMA.
duration_s: 150
seed: 3
truth:
  fault_class: row_remap_exhausted
  component: gpu/2
  action: rma
  start_s: 61.3
faults:
  - {at: 61.3, fault: remap_failure, gpu: 2}
)";

constexpr char kUserProgram[] = R"(name: test-user-xid13-gpu5
description: One process faults on GPU 5 again and again (XID 13); the hardware is fine.
duration_s: 150
seed: 4
truth:
  fault_class: user_application
  component: gpu/5
  action: notify_user
  start_s: 52.7
faults:
  - {at: 52.7, fault: user_xid, gpu: 5, xid: 13, count: 6, every_s: 7}
)";

class RemediationBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FakeSysfsScratchDir("remediation-bench");
    fs::create_directories(dir_);
    options_.lockstep.workdir = dir_;
    options_.lockstep.nvml_library = DefaultFakeNvmlPath();
    ASSERT_FALSE(options_.lockstep.nvml_library.empty()) << "the fake NVML library was not built";
    options_.fleet = 20;
  }
  void TearDown() override { fs::remove_all(dir_); }

  ScenarioRemediation Run(const char* yaml) {
    auto sc = ParseNodeScenario(yaml);
    EXPECT_TRUE(sc.ok()) << sc.status().ToString();
    if (!sc.ok()) return {};
    auto r = RunScenarioRemediation(*sc, options_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : ScenarioRemediation{};
  }

  static int Requests(const ScenarioRemediation& r, ActionClass c) {
    int n = 0;
    for (const JudgedApply& a : r.applies) n += a.apply.action_class == c;
    return n;
  }

  std::string dir_;
  RemediationBenchOptions options_;
};

TEST_F(RemediationBenchTest, HardwareFaultGetsItsDrainAndBundleOnceAndStormStaysWithinTheBreaker) {
  const ScenarioRemediation r = Run(kRemapFailure);
  ASSERT_TRUE(r.first_correct_s.has_value()) << "no correct action requested";
  EXPECT_GE(*r.first_correct_s, 61.3);
  EXPECT_LE(*r.first_correct_s, 150.0);
  ASSERT_TRUE(r.complete_s.has_value());
  EXPECT_EQ(Requests(r, ActionClass::kDrain), 1);
  EXPECT_EQ(Requests(r, ActionClass::kRmaBundle), 1);
  for (const JudgedApply& a : r.applies) {
    if (a.apply.action_class == ActionClass::kDrain) {
      EXPECT_TRUE(a.right_part) << a.apply.component.Id();
    }
  }
  EXPECT_TRUE(r.wrong_disruptive.empty()) << r.wrong_disruptive.front();
  EXPECT_TRUE(r.duplicates.empty()) << r.duplicates.front();
  EXPECT_GT(r.states.count("done"), 0u);
  EXPECT_TRUE(fs::is_empty(dir_)) << "the run's files were not removed";
  ASSERT_FALSE(r.stored.empty());

  // 20 nodes, half faulting at once: limit min(3, max(1, floor(0.4))) = 1.
  StormOptions so;
  so.fleet = 20;
  so.fraction = 0.5;
  so.hours = 0.25;
  so.spread_s = 5;
  so.workdir = dir_;
  auto st = RunStorm(r.name, r.truth.start_s, r.stored, so);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->faulting, 10u);
  EXPECT_EQ(st->limit, 1);
  EXPECT_LE(st->max_in_window, st->limit);
  EXPECT_EQ(st->taken_out, 1);
  EXPECT_EQ(st->drain_requests, 1);
  EXPECT_EQ(st->held_by_breaker, 9);
  EXPECT_EQ(st->not_out_other, 0);
  EXPECT_NE(st->sample_hold.find("breaker"), std::string::npos) << st->sample_hold;
  // Bundles are not disruptive: every faulting node gets its own.
  EXPECT_EQ(st->other_requests["rma_bundle"], 10);
  EXPECT_GE(st->replayed_rows, 10 * r.stored.size());
  EXPECT_TRUE(fs::is_empty(dir_)) << "the storm's stores were not removed";
}

TEST_F(RemediationBenchTest, UserProgramFaultIsNotifiedAndNeverDisrupts) {
  const ScenarioRemediation r = Run(kUserProgram);
  EXPECT_TRUE(r.first_correct_s.has_value()) << "the user was not notified";
  EXPECT_TRUE(r.wrong_disruptive.empty()) << r.wrong_disruptive.front();
  EXPECT_TRUE(r.duplicates.empty()) << r.duplicates.front();
  for (ActionClass c : {ActionClass::kCordon, ActionClass::kDrain, ActionClass::kResetGpu, ActionClass::kRebootNode,
                        ActionClass::kRmaBundle}) {
    EXPECT_EQ(Requests(r, c), 0) << actions::ToString(c);
  }
  EXPECT_EQ(Requests(r, ActionClass::kNotifyUser), 1);
}

TEST_F(RemediationBenchTest, StormRefusesNonsense) {
  StoredDiagnosis row;
  row.t = 1;
  StormOptions so;
  so.workdir = dir_;
  EXPECT_FALSE(RunStorm("x", 0, {}, so).ok());
  so.fleet = 0;
  EXPECT_FALSE(RunStorm("x", 0, {row}, so).ok());
  so.fleet = 10;
  so.fraction = 1.5;
  EXPECT_FALSE(RunStorm("x", 0, {row}, so).ok());
  so.fraction = 0.5;
  so.hours = 0;
  EXPECT_FALSE(RunStorm("x", 0, {row}, so).ok());
}

}  // namespace
}  // namespace faultline::sim
