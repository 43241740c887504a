// Scoring is plain arithmetic over runs: checked on hand-made runs.
#include "sim/harness/accuracy.h"

#include <gtest/gtest.h>

namespace faultline::sim {
namespace {

ScenarioRun MakeRun(const std::string& name, FaultClass truth, FaultClass got, bool component_ok = true,
                    std::optional<double> first = std::nullopt, double start = 0) {
  ScenarioRun r;
  r.name = name;
  r.truth.fault_class = truth;
  r.truth.start_s = start;
  Diagnosis d;
  d.fault_class = got;
  r.final_diagnoses = {d};
  r.final_correct_class = truth == got;
  r.final_correct_component = component_ok;
  r.first_correct_s = first;
  return r;
}

TEST(AccuracyScore, ConfusionPrecisionRecallAndMacroF1) {
  std::vector<ScenarioRun> runs = {
      MakeRun("a", FaultClass::kPowerSupply, FaultClass::kPowerSupply, true, 105, 100),
      MakeRun("b", FaultClass::kPowerSupply, FaultClass::kGpuPowerBrake, true),
      MakeRun("c", FaultClass::kGpuPowerBrake, FaultClass::kGpuPowerBrake, true, 12, 10),
      MakeRun("d", FaultClass::kNone, FaultClass::kNone, true, 0, 0),
  };
  const AccuracyReport rep = ScoreRuns(runs);
  EXPECT_EQ(rep.scenarios, 4);
  EXPECT_EQ(rep.confusion.at("power_supply").at("gpu_power_brake"), 1);
  EXPECT_EQ(rep.confusion.at("power_supply").at("power_supply"), 1);
  const ClassScore& psu = rep.classes.at("power_supply");
  EXPECT_DOUBLE_EQ(psu.precision, 1.0);
  EXPECT_DOUBLE_EQ(psu.recall, 0.5);
  EXPECT_NEAR(psu.f1, 2.0 / 3.0, 1e-12);
  const ClassScore& brake = rep.classes.at("gpu_power_brake");
  EXPECT_DOUBLE_EQ(brake.precision, 0.5);
  EXPECT_DOUBLE_EQ(brake.recall, 1.0);
  EXPECT_NEAR(rep.macro_f1, (2.0 / 3.0 + 2.0 / 3.0 + 1.0) / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(rep.primary_accuracy, 0.75);
  EXPECT_DOUBLE_EQ(rep.component_accuracy, 0.75);
  EXPECT_EQ(rep.diagnosed, 3);
  EXPECT_DOUBLE_EQ(rep.ttd_median_s, 2.0);  // {5, 2, 0}
  EXPECT_DOUBLE_EQ(rep.ttd_max_s, 5.0);
  ASSERT_EQ(rep.misses.size(), 1u);
  EXPECT_NE(rep.misses[0].find("b: truth power_supply, got gpu_power_brake"), std::string::npos);
}

TEST(AccuracyScore, RightClassWrongPartIsAComponentMissAndWrongActionsAreCounted) {
  ScenarioRun r = MakeRun("x", FaultClass::kGpuThermal, FaultClass::kGpuThermal, false);
  r.wrong_hardware_actions = {"t=5s rma gpu/2 (gpu_thermal)"};
  const AccuracyReport rep = ScoreRuns({r});
  EXPECT_DOUBLE_EQ(rep.primary_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(rep.component_accuracy, 0.0);
  EXPECT_EQ(rep.wrong_hardware_actions, 1);
  EXPECT_EQ(rep.wrong_action_details.size(), 1u);
}

TEST(AccuracyScore, NoRunsIsAllZeroNotADivisionByZero) {
  const AccuracyReport rep = ScoreRuns({});
  EXPECT_EQ(rep.scenarios, 0);
  EXPECT_EQ(rep.macro_f1, 0);
  EXPECT_EQ(rep.primary_accuracy, 0);
}

// One row of the policy's ledger (policy/ledger.h), `t` scenario seconds after `epoch`.
constexpr int64_t kEpoch = 1'000'000'000'000;
ActionRecord Row(double t, const std::string& key, const std::string& action_class, const std::string& fault,
                 const std::string& state, bool dry_run = true) {
  ActionRecord r;
  r.time_ns = kEpoch + static_cast<int64_t>(t * 1e9);
  r.node = "sim-node";
  r.dry_run = dry_run;
  r.attrs = {{"key", key}, {"class", action_class}, {"fault", fault}, {"state", state}};
  return r;
}

TEST(DecisionScore, ADecisionTakenForAnotherClassIsWrongDryRunOrNot) {
  const Truth truth{.fault_class = FaultClass::kGpuFellOffBus, .components = {"gpu/7"}, .start_s = 30};
  const std::vector<ActionRecord> rows = {
      // Link width 0 read just after the XID 79: a PCIe diagnosis first, drained for (dry run).
      Row(30.5, "k1", "drain", "pcie_link_degraded|pcie/0000:1b:00.0", "dry_run"),
      // Its held twin, withdrawn: never taken.
      Row(30.5, "k2", "rma_bundle", "pcie_link_degraded|pcie/0000:1b:00.0", "held_until_settled"),
      Row(31.0, "k2", "rma_bundle", "pcie_link_degraded|pcie/0000:1b:00.0", "withdrawn"),
      // Then the right class: decided, then done (one decision, counted once).
      Row(32.0, "k3", "drain", "gpu_fell_off_bus|gpu/7", "decided", false),
      Row(32.5, "k3", "drain", "gpu_fell_off_bus|gpu/7", "done", false),
      // Refused and superseded decisions are not taken.
      Row(33.0, "k4", "reset_gpu", "nvlink_down|gpu/7", "refused"),
      Row(33.0, "k5", "reboot_node", "nvlink_down|gpu/7", "superseded_by_fleet"),
      // A wrong one carried out for real, failing.
      Row(34.0, "k6", "reset_gpu", "driver_fault|gpu/7", "failed", false),
  };
  const DecisionScore score = ScoreDecisions(rows, truth, kEpoch);
  EXPECT_EQ(score.taken, 3);
  EXPECT_EQ(score.wrong, 2);
  ASSERT_EQ(score.wrong_details.size(), 2u);
  EXPECT_NE(score.wrong_details[0].find("t=30.5s drain for pcie_link_degraded"), std::string::npos)
      << score.wrong_details[0];
  EXPECT_NE(score.wrong_details[0].find("dry run"), std::string::npos);
  EXPECT_NE(score.wrong_details[1].find("reset_gpu for driver_fault"), std::string::npos) << score.wrong_details[1];
  ASSERT_TRUE(score.first_correct_s.has_value());
  EXPECT_DOUBLE_EQ(*score.first_correct_s, 32.0);
}

TEST(DecisionScore, OnAHealthyNodeOnlyDisruptiveOrBlamingDecisionsAreWrong) {
  const Truth healthy{.fault_class = FaultClass::kNone};
  const std::vector<ActionRecord> rows = {
      Row(10, "w", "webhook", "hbm_sbe_aging|gpu/2", "dry_run"),
      Row(11, "c", "cordon", "hbm_sbe_aging|gpu/2", "dry_run"),
      Row(12, "n", "notify_user", "user_application|gpu/2", "done", false),
      Row(13, "h", "drain", "hbm_sbe_aging|gpu/2", "held_by_cooldown"),
  };
  const DecisionScore score = ScoreDecisions(rows, healthy, kEpoch);
  EXPECT_EQ(score.taken, 3);
  EXPECT_EQ(score.wrong, 2);
  EXPECT_FALSE(score.first_correct_s.has_value());  // nothing to decide on a healthy node
  EXPECT_EQ(ScoreDecisions({}, healthy, kEpoch).taken, 0);
}

// A scenario may hold other incidents than its truth (a program's bug before the host
// fault): a decision for one of them, from its start on, is right; before it, or for any
// other class, it is still wrong.
TEST(DecisionScore, ADecisionForAnotherStatedIncidentIsNotWrong) {
  Truth truth{.fault_class = FaultClass::kHostMemory, .start_s = 300};
  truth.also.push_back({FaultClass::kUserApplication, 90, "a program's XID 13 storm on GPU 0"});
  const std::vector<ActionRecord> rows = {
      Row(80, "early", "notify_user", "user_application|gpu/0", "dry_run"),  // before it began: wrong
      Row(130, "told", "notify_user", "user_application|gpu/0", "dry_run"),
      Row(140, "other", "webhook", "nvlink_errors|nvlink/0/1", "dry_run"),
      Row(310, "right", "cordon", "host_memory|host/dimm", "dry_run"),
  };
  const DecisionScore score = ScoreDecisions(rows, truth, kEpoch);
  EXPECT_EQ(score.taken, 4);
  EXPECT_EQ(score.wrong, 2);
  ASSERT_EQ(score.wrong_details.size(), 2u);
  EXPECT_NE(score.wrong_details[0].find("t=80s"), std::string::npos) << score.wrong_details[0];
  EXPECT_NE(score.wrong_details[1].find("nvlink_errors"), std::string::npos) << score.wrong_details[1];
  ASSERT_TRUE(score.first_correct_s.has_value());
  EXPECT_DOUBLE_EQ(*score.first_correct_s, 310);
}

TEST(DecisionScore, FlapsCountChangesAfterTheFirstRealAnswer) {
  auto change = [](double t, FaultClass c) {
    DiagnosisChange ch;
    ch.t = t;
    ch.primary.fault_class = c;
    return ch;
  };
  EXPECT_EQ(CountFlaps({}), 0);
  EXPECT_EQ(CountFlaps({change(0, FaultClass::kNone)}), 0);
  EXPECT_EQ(CountFlaps({change(0, FaultClass::kNone), change(31, FaultClass::kPcieLinkDegraded),
                        change(32, FaultClass::kGpuFellOffBus)}),
            1);
  EXPECT_EQ(CountFlaps({change(0, FaultClass::kNone), change(5, FaultClass::kPowerSupply), change(9, FaultClass::kNone),
                        change(12, FaultClass::kPowerSupply)}),
            2);
}

TEST(DecisionScore, TheReportSumsWrongDecisionsFlapsAndTimeToTheFirstCorrectDecision) {
  ScenarioRun a = MakeRun("a", FaultClass::kGpuFellOffBus, FaultClass::kGpuFellOffBus, true, 31, 30);
  a.decisions.wrong = 1;
  a.decisions.wrong_details = {"t=30.5s drain for pcie_link_degraded|x (dry_run, dry run)"};
  a.decisions.first_correct_s = 32;
  a.flaps = 1;
  ScenarioRun b = MakeRun("a", FaultClass::kGpuFellOffBus, FaultClass::kPcieLinkDegraded, true);
  b.phase = 2;
  b.flaps = 3;
  ScenarioRun c = MakeRun("c", FaultClass::kPowerSupply, FaultClass::kPowerSupply, true, 14, 10);
  c.decisions.first_correct_s = 16;
  const AccuracyReport rep = ScoreRuns({a, b, c});
  EXPECT_EQ(rep.wrong_decisions, 1);
  ASSERT_EQ(rep.wrong_decision_details.size(), 1u);
  EXPECT_EQ(rep.wrong_decision_details[0].rfind("a: t=30.5s", 0), 0u) << rep.wrong_decision_details[0];
  EXPECT_EQ(rep.final_misses, 1);
  ASSERT_EQ(rep.misses.size(), 1u);
  EXPECT_EQ(rep.misses[0].rfind("a#2: truth gpu_fell_off_bus", 0), 0u) << rep.misses[0];
  EXPECT_DOUBLE_EQ(rep.flaps_mean, 4.0 / 3.0);
  EXPECT_EQ(rep.flaps_max, 3);
  EXPECT_EQ(rep.decided, 2);
  EXPECT_DOUBLE_EQ(rep.first_decision_median_s, 4.0);  // {2, 6}
  EXPECT_DOUBLE_EQ(rep.first_decision_max_s, 6.0);
}

}  // namespace
}  // namespace faultline::sim
