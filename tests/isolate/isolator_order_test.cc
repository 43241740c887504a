// Ordering of diagnoses and the tie-breaks between candidate causes (docs/isolator.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/json.h"
#include "engine/isolate/isolator.h"
#include "isolate_test_util.h"

namespace faultline {
namespace {

using namespace testing_isolate;  // NOLINT(google-build-using-namespace): test builders

TEST(IsolateOrder, WhenTheQuestionIsASlowdownItsAnswerLeads) {
  IsolateInput in = AllLayers();
  in.findings = {
      Make(Layer::kGpu, FaultClass::kHbmUncorrectable, Ref(ComponentType::kGpu, "6"), kT0).Sev(Severity::kCritical),
      Make(Layer::kFabric, FaultClass::kNvlinkErrors, Ref(ComponentType::kNvlink, "3/11"), kT0 + kSec),
      Make(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent("job"), kT0 + kMin)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  // The DBE could explain slow steps only weakly; the NVLink errors explain them directly.
  EXPECT_EQ(ds[0].fault_class, FaultClass::kNvlinkErrors);
  EXPECT_EQ(ds[0].explains.size(), 1u);
  EXPECT_EQ(ds[1].fault_class, FaultClass::kHbmUncorrectable);
}

TEST(IsolateOrder, WeakCauseExplainsSlowStepsWhenNothingDirectFits) {
  IsolateInput in = AllLayers();
  in.findings = {
      Make(Layer::kGpu, FaultClass::kHbmUncorrectable, Ref(ComponentType::kGpu, "6"), kT0).Sev(Severity::kCritical),
      Make(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent("job"), kT0 + kMin)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kHbmUncorrectable);
  EXPECT_EQ(ds[0].explains.size(), 1u);
}

TEST(IsolateOrder, SeverityThenActionThenConfidence) {
  IsolateInput in = AllLayers();
  in.findings = {
      Make(Layer::kFabric, FaultClass::kIbLinkErrors, Ref(ComponentType::kIb, "mlx5_0/1"), kT0)
          .Act(Action::kReseatOrReplaceLink)
          .Confidence(0.9),
      Make(Layer::kGpu, FaultClass::kGpuSram, Ref(ComponentType::kGpu, "1"), kT0).Act(Action::kRma).Confidence(0.6),
      Make(Layer::kGpu, FaultClass::kHbmSbeAging, Ref(ComponentType::kGpu, "2"), kT0).Act(Action::kRma).Confidence(0.7),
      Make(Layer::kOs, FaultClass::kHostMemory, HostComponent(), kT0).Sev(Severity::kCritical).Act(Action::kMonitor)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 4u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kHostMemory);    // most severe
  EXPECT_EQ(ds[1].fault_class, FaultClass::kHbmSbeAging);   // rma, more confident
  EXPECT_EQ(ds[2].fault_class, FaultClass::kGpuSram);       // rma
  EXPECT_EQ(ds[3].fault_class, FaultClass::kIbLinkErrors);  // least disruptive action
}

TEST(IsolateOrder, PhysicalLayerFirstThenEarlierThenComponent) {
  IsolateInput in = AllLayers();
  in.findings = {
      Make(Layer::kFabric, FaultClass::kIbLinkDown, Ref(ComponentType::kIb, "mlx5_1/1"), kT0).Act(Action::kDrain),
      Make(Layer::kOob, FaultClass::kCoolantLeak, Ref(ComponentType::kCoolant, "loop2"), kT0 + kMin)
          .Act(Action::kDrain),
      Make(Layer::kFabric, FaultClass::kIbLinkDown, Ref(ComponentType::kIb, "mlx5_0/1"), kT0).Act(Action::kDrain),
      Make(Layer::kFabric, FaultClass::kIbLinkDown, Ref(ComponentType::kIb, "mlx5_2/1"), kT0 - kMin)
          .Act(Action::kDrain)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 4u);
  EXPECT_EQ(ds[0].component.Id(), "coolant/loop2");
  EXPECT_EQ(ds[1].component.Id(), "ib/mlx5_2/1");
  EXPECT_EQ(ds[2].component.Id(), "ib/mlx5_0/1");
  EXPECT_EQ(ds[3].component.Id(), "ib/mlx5_1/1");
}

TEST(IsolateOrder, PhysicalCauseWinsTheSlowdownOverAFabricOne) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kFabric, FaultClass::kPcieLinkDegraded, PcieComponent("0000:3b:00.0"), kT0),
                 Make(Layer::kGpu, FaultClass::kGpuThermal, Gpu3(), kT0 + kSec),
                 Make(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent("job"), kT0 + kMin)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kGpuThermal);
  EXPECT_EQ(ds[0].explains.size(), 1u);
  EXPECT_NE(ds[0].summary.find("cause was not found"), std::string::npos);
  EXPECT_LT(ds[0].confidence, 0.8);  // a symptom standing in for its unknown cause
  EXPECT_TRUE(ds[1].explains.empty());
}

TEST(IsolateOrder, AmongEqualCausesTheCloserInTimeThenTheMoreSevereWins) {
  // PSU1 has been critical for six minutes without braking anything; PSU2 failed a
  // minute before the brake: PSU2 is the cause.
  IsolateInput in = AllLayers();
  in.findings = {
      Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "1"), kT0).Sev(Severity::kCritical),
      Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "2"), kT0 + 5 * kMin),
      Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Gpu3(), kT0 + 6 * kMin)};
  auto explains_brake = [](const std::vector<Diagnosis>& ds) {
    for (const Diagnosis& d : ds) {
      if (!d.explains.empty()) return d.component.Id();
    }
    return std::string();
  };
  EXPECT_EQ(explains_brake(Isolate(in)), "psu/2");
  // Equally close (a minute before and a minute after): the more severe one.
  in.findings[0].first_ns = in.findings[0].last_ns = kT0 + 7 * kMin;
  in.findings[0].severity = Severity::kWarning;
  in.findings[1].severity = Severity::kCritical;
  EXPECT_EQ(explains_brake(Isolate(in)), "psu/2");
  in.findings[0].severity = Severity::kFatal;
  EXPECT_EQ(explains_brake(Isolate(in)), "psu/1");
}

TEST(IsolateOrder, ResultDoesNotDependOnInputOrder) {
  IsolateInput in = AllLayers();
  in.slowdown_reported = true;
  in.findings = {
      Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "1"), kT0).Sev(Severity::kCritical),
      Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Ref(ComponentType::kGpu, "0"), kT0 + kSec),
      Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Ref(ComponentType::kGpu, "1"), kT0 + kSec),
      Make(Layer::kOs, FaultClass::kUserApplication, Ref(ComponentType::kGpu, "0000:b5:00.0"), kT0 + kMin),
      Make(Layer::kFabric, FaultClass::kNvlinkErrors, Ref(ComponentType::kNvlink, "2/1"), kT0),
      Make(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent("job"), kT0 + 2 * kMin)};
  const std::string expected = Json(Isolate(in)).dump();
  std::mt19937 rng(42);
  for (int i = 0; i < 20; ++i) {
    std::shuffle(in.findings.begin(), in.findings.end(), rng);
    EXPECT_EQ(Json(Isolate(in)).dump(), expected);
  }
}

}  // namespace
}  // namespace faultline
