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

}  // namespace
}  // namespace faultline::sim
