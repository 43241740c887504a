// One test per causal rule of docs/isolator.md: the cause explains the symptom when the
// components and times line up, and does not when they do not.
#include <gtest/gtest.h>

#include "engine/isolate/isolator.h"
#include "isolate_test_util.h"

namespace faultline {
namespace {

using namespace testing_isolate;  // NOLINT(google-build-using-namespace): test builders

Finding Psu(int64_t at, const std::string& id = "1") {
  return Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, id), at)
      .Sev(Severity::kCritical)
      .Act(Action::kRma);
}
Finding Brake(const std::string& gpu, int64_t at) {
  return Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Ref(ComponentType::kGpu, gpu, {{"index", gpu}}), at)
      .Attr("symptom", "true")
      .Act(Action::kMonitor);
}
Finding SlowSteps(int64_t at) {
  return Make(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent("job/train-42"), at)
      .Summary("step time 1.9 s vs 1.2 s baseline");
}

TEST(IsolateCausal, PsuFailureExplainsPowerBrakeAndSlowSteps) {
  IsolateInput in = AllLayers();
  in.findings = {SlowSteps(kT0 + 60 * kSec), Brake("0", kT0 + 30 * kSec), Brake("1", kT0 + 31 * kSec), Psu(kT0)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  const Diagnosis& d = ds[0];
  EXPECT_EQ(d.fault_class, FaultClass::kPowerSupply);
  EXPECT_EQ(d.component.Id(), "psu/1");
  EXPECT_EQ(d.action, Action::kRma);
  EXPECT_EQ(d.severity, Severity::kCritical);
  ASSERT_EQ(d.explains.size(), 3u);
  EXPECT_TRUE(ExplainsSomething(d, "gpu_power_brake on gpu/0"));
  EXPECT_TRUE(ExplainsSomething(d, "gpu_power_brake on gpu/1"));
  EXPECT_TRUE(ExplainsSomething(d, "slow steps (step time 1.9 s"));
  EXPECT_FALSE(HasClass(ds, FaultClass::kGpuPowerBrake));
  EXPECT_FALSE(HasClass(ds, FaultClass::kWorkloadImbalance));
  ASSERT_EQ(d.evidence.size(), 4u);
  for (size_t i = 1; i < d.evidence.size(); ++i) EXPECT_LE(d.evidence[i - 1].time_ns, d.evidence[i].time_ns);
  EXPECT_EQ(d.evidence.front().component, "psu/1");
  EXPECT_EQ(d.first_ns, kT0);
  EXPECT_EQ(d.last_ns, kT0 + 60 * kSec);
  EXPECT_GT(d.confidence, 0.8);  // corroborated by the GPU layer
}

TEST(IsolateCausal, InputVoltageSagExplainsPsuDropoutAndBrake) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kVoltageOutOfRange, Ref(ComponentType::kPsu, "1"), kT0),
                 Psu(kT0 + 5 * kSec), Brake("2", kT0 + 10 * kSec)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kVoltageOutOfRange);
  EXPECT_TRUE(ExplainsSomething(ds[0], "power_supply on psu/1"));
  EXPECT_TRUE(ExplainsSomething(ds[0], "gpu_power_brake on gpu/2"));
}

TEST(IsolateCausal, PowerInsufficientExplainsBrakeAndPsuExplainsIt) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kPowerInsufficient, Ref(ComponentType::kChassis, "1"), kT0 + kSec),
                 Brake("0", kT0 + 2 * kSec)};
  auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPowerInsufficient);
  in.findings.push_back(Psu(kT0));
  ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPowerSupply);
  EXPECT_EQ(ds[0].explains.size(), 2u);
}

TEST(IsolateCausal, ChassisRedundancyLostIsTheSameFaultAsTheFailedPsu) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kChassis, "1"), kT0 + kSec)
                     .Summary("power redundancy lost on chassis/1"),
                 Psu(kT0, "2")};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].component.Id(), "psu/2");
  EXPECT_EQ(ds[0].evidence.size(), 2u);
}

TEST(IsolateCausal, SymptomTooLongAfterTheCauseIsNotExplained) {
  IsolateInput in = AllLayers();
  in.findings = {Psu(kT0), Brake("0", kT0 + 13 * kMin)};  // past 10 min + 2 min skew
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  const Diagnosis* brake = Find(ds, FaultClass::kGpuPowerBrake);
  ASSERT_NE(brake, nullptr);
  EXPECT_NE(brake->summary.find("cause was not found"), std::string::npos);
  const Diagnosis* psu = Find(ds, FaultClass::kPowerSupply);
  ASSERT_NE(psu, nullptr);
  EXPECT_TRUE(psu->explains.empty());
  // The window is an option.
  IsolateOptions wide;
  wide.explain_before_ns = 15 * kMin;
  EXPECT_EQ(Isolate(in, wide).size(), 1u);
}

TEST(IsolateCausal, CauseThatLastsKeepsExplainingUntilItEnds) {
  IsolateInput in = AllLayers();
  in.findings = {Finding(Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "1"), kT0)
                             .Until(kT0 + 30 * kMin)
                             .Sev(Severity::kCritical)),
                 Brake("0", kT0 + 35 * kMin)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPowerSupply);
}

TEST(IsolateCausal, ClockSkewLetsASymptomPrecedeItsCause) {
  IsolateInput in = AllLayers();
  // The BMC clock runs 90 s late: the brake appears before the PSU failure.
  in.findings = {Psu(kT0), Brake("0", kT0 - 90 * kSec)};
  EXPECT_EQ(Isolate(in).size(), 1u);
  // Three minutes is beyond the default 2-minute skew ...
  in.findings = {Psu(kT0), Brake("0", kT0 - 3 * kMin)};
  EXPECT_EQ(Isolate(in).size(), 2u);
  // ... unless the BMC finding declares its own clock uncertainty.
  in.findings = {Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "1"), kT0)
                     .Attr("clock_skew_ns", std::to_string(2 * kMin)),
                 Brake("0", kT0 - 3 * kMin)};
  EXPECT_EQ(Isolate(in).size(), 1u);
  // Garbage in the attribute is ignored, not trusted.
  in.findings[0].attrs["clock_skew_ns"] = "lots";
  EXPECT_EQ(Isolate(in).size(), 2u);
}

TEST(IsolateCausal, UnknownTimesLineUpRatherThanSplitTheChain) {
  IsolateInput in = AllLayers();
  in.findings = {Psu(0), Brake("0", kT0)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPowerSupply);
}

TEST(IsolateCausal, FanFailureExplainsGpuThermalSlowdown) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kCoolingDegraded, Ref(ComponentType::kFan, "3"), kT0),
                 Make(Layer::kGpu, FaultClass::kGpuThermal, Gpu3(), kT0 + 2 * kMin).Attr("symptom", "true"),
                 SlowSteps(kT0 + 3 * kMin)};
  in.slowdown_reported = true;
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kCoolingDegraded);
  EXPECT_EQ(ds[0].component.Id(), "fan/3");
  EXPECT_EQ(ds[0].explains.size(), 2u);
}

TEST(IsolateCausal, HotInletExplainsGpuThermal) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kThermalInlet, Ref(ComponentType::kSensor, "inlet"), kT0),
                 Make(Layer::kGpu, FaultClass::kGpuThermal, Gpu3(), kT0 + kMin)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kThermalInlet);
  EXPECT_EQ(ds[0].action, Action::kFacilityTicket);  // the finding had none: the class default
}

TEST(IsolateCausal, CoolantLeakExplainsTheDegradedLoop) {
  IsolateInput in = AllLayers();
  in.findings = {
      Make(Layer::kOob, FaultClass::kCoolingDegraded, Ref(ComponentType::kCoolant, "loop1"), kT0 + kMin),
      Make(Layer::kOob, FaultClass::kCoolantLeak, Ref(ComponentType::kCoolant, "loop1"), kT0).Sev(Severity::kFatal)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kCoolantLeak);
  EXPECT_EQ(ds[0].component.Id(), "coolant/loop1");
}

TEST(IsolateCausal, LeakDetectorOnTheLoopExplainsItsDegradation) {
  // The BMC names the leak detector, not the loop: still the same loop (it carries no
  // other loop), so the leak explains the loop's rising temperatures.
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kCoolingDegraded, Ref(ComponentType::kCoolant, "Loop1"), kT0 + kMin),
                 Make(Layer::kOob, FaultClass::kCoolantLeak, Ref(ComponentType::kCoolant, "leak-ColdPlate"), kT0)
                     .Sev(Severity::kCritical)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kCoolantLeak);
  EXPECT_EQ(ds[0].component.Id(), "coolant/leak-ColdPlate");
}

TEST(IsolateCausal, FailedPumpAndItsHotLoopAreOneFaultNamedByThePump) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kCoolingDegraded, Ref(ComponentType::kCoolant, "pump-PUMP1"), kT0),
                 Make(Layer::kOob, FaultClass::kCoolingDegraded, Ref(ComponentType::kCoolant, "Loop1"), kT0 + kMin),
                 Make(Layer::kGpu, FaultClass::kGpuThermal, Gpu3(), kT0 + 2 * kMin)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kCoolingDegraded);
  EXPECT_EQ(ds[0].component.Id(), "coolant/pump-PUMP1");
}

TEST(IsolateCausal, CoolingOnAnotherLoopDoesNotExplainAGpu) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kCoolingDegraded, Ref(ComponentType::kCoolant, "loopA"), kT0),
                 Make(Layer::kGpu, FaultClass::kGpuThermal, Ref(ComponentType::kGpu, "5", {{"coolant_loop", "loopB"}}),
                      kT0 + kMin)};
  EXPECT_EQ(Isolate(in).size(), 2u);
}

TEST(IsolateCausal, DowntrainedPcieLinkExplainsSlowSteps) {
  IsolateInput in = AllLayers();
  in.findings = {
      Make(Layer::kFabric, FaultClass::kPcieLinkDegraded, PcieComponent("0000:3b:00.0"), kT0).Summary("link x8 of x16"),
      SlowSteps(kT0 + kMin)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_EQ(ds[0].action, Action::kReseatOrReplaceLink);
}

TEST(IsolateCausal, NvlinkErrorsOnOneLinkExplainSlowCollectives) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kFabric, FaultClass::kNvlinkErrors, Ref(ComponentType::kNvlink, "3/11"), kT0),
                 SlowSteps(kT0 + 30 * kSec)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kNvlinkErrors);
  EXPECT_EQ(ds[0].component.Id(), "nvlink/3/11");
}

TEST(IsolateCausal, LinkDownAbsorbsErrorsOnTheSameLinkOnly) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kFabric, FaultClass::kNvlinkErrors, Ref(ComponentType::kNvlink, "3/11"), kT0),
                 Make(Layer::kFabric, FaultClass::kNvlinkDown, Ref(ComponentType::kNvlink, "3/11"), kT0 + kMin),
                 Make(Layer::kFabric, FaultClass::kNvlinkErrors, Ref(ComponentType::kNvlink, "4/2"), kT0)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  const Diagnosis* down = Find(ds, FaultClass::kNvlinkDown);
  ASSERT_NE(down, nullptr);
  EXPECT_TRUE(ExplainsSomething(*down, "nvlink_errors on nvlink/3/11"));
  EXPECT_EQ(Find(ds, FaultClass::kNvlinkErrors)->component.Id(), "nvlink/4/2");
}

TEST(IsolateCausal, IbPortDownAbsorbsItsErrors) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kFabric, FaultClass::kIbLinkErrors, Ref(ComponentType::kIb, "mlx5_3/1"), kT0),
                 Make(Layer::kFabric, FaultClass::kIbLinkDown, Ref(ComponentType::kIb, "mlx5_3/1"), kT0 + kMin)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kIbLinkDown);
}

TEST(IsolateCausal, NvswitchFaultExplainsItsLinks) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kFabric, FaultClass::kNvswitchFault, Ref(ComponentType::kNvswitch, "2"), kT0),
                 Make(Layer::kFabric, FaultClass::kNvlinkDown, Ref(ComponentType::kNvlink, "0/4"), kT0 + kSec),
                 Make(Layer::kFabric, FaultClass::kNvlinkDown, Ref(ComponentType::kNvlink, "1/4"), kT0 + kSec)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kNvswitchFault);
  EXPECT_EQ(ds[0].explains.size(), 2u);
}

Finding KernelOffBus(int64_t at) {
  return Make(Layer::kOs, FaultClass::kGpuFellOffBus,
              Ref(ComponentType::kGpu, "0000:3b:00.0", {{"bdf", "0000:3b:00.0"}}), at)
      .Sev(Severity::kCritical)
      .Summary("Xid 79: GPU has fallen off the bus");
}

TEST(IsolateCausal, FellOffBusFromKernelAndNvmlIsOneDiagnosis) {
  IsolateInput in = AllLayers();
  in.findings = {KernelOffBus(kT0), Make(Layer::kGpu, FaultClass::kGpuFellOffBus, Gpu3(), kT0 + 5 * kSec)
                                        .Sev(Severity::kCritical)
                                        .Summary("NVML: GPU is lost")};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kGpuFellOffBus);
  EXPECT_EQ(ds[0].component.Id(), "gpu/3");  // the name with every key wins
  EXPECT_EQ(ds[0].component.keys.at("serial"), "1650923012345");
  EXPECT_EQ(ds[0].evidence.size(), 2u);
  EXPECT_EQ(ds[0].layer, Layer::kGpu);
  EXPECT_EQ(ds[0].action, Action::kDrain);
}

TEST(IsolateCausal, Xid79WithAerOnItsUpstreamPortBlamesTheLink) {
  IsolateInput in = AllLayers();
  ComponentRef port = PcieComponent("0000:3a:00.0");
  port.keys["downstream_bdf"] = "0000:3b:00.0";
  in.findings = {Make(Layer::kOs, FaultClass::kPcieLinkDegraded, port, kT0 - 20 * kSec).Summary("AER: Uncorrected"),
                 KernelOffBus(kT0),
                 Make(Layer::kGpu, FaultClass::kGpuFellOffBus, Gpu3(), kT0 + 5 * kSec).Sev(Severity::kCritical)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_EQ(ds[0].component.Id(), "pcie/0000:3a:00.0");
  ASSERT_EQ(ds[0].explains.size(), 1u);  // the kernel and NVML views of XID 79 are one symptom
  EXPECT_TRUE(ExplainsSomething(ds[0], "gpu_fell_off_bus on gpu/3"));
  EXPECT_EQ(ds[0].evidence.size(), 3u);
}

TEST(IsolateCausal, AerOnAnUnrelatedPortDoesNotTakeTheBlame) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOs, FaultClass::kPcieLinkDegraded, PcieComponent("0000:5e:00.0"), kT0 - 20 * kSec),
                 KernelOffBus(kT0)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kGpuFellOffBus);
  EXPECT_TRUE(ds[0].explains.empty());
}

TEST(IsolateCausal, RemapPendingAfterDbeIsOneDiagnosisWithTheDbeAsEvidence) {
  IsolateInput in = AllLayers();
  in.findings = {
      Make(Layer::kGpu, FaultClass::kHbmUncorrectable, Gpu3(), kT0)
          .Sev(Severity::kCritical)
          .Act(Action::kRma)
          .Summary("1 DBE"),
      Make(Layer::kGpu, FaultClass::kRowRemapPending, Gpu3(), kT0 + kSec)
          .Sev(Severity::kCritical)
          .Act(Action::kResetGpu),
      Make(Layer::kOs, FaultClass::kRowRemapPending, Ref(ComponentType::kGpu, "0000:3b:00.0"), kT0 + 2 * kSec)
          .Summary("Xid 63")};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kRowRemapPending);
  EXPECT_EQ(ds[0].action, Action::kResetGpu);
  EXPECT_TRUE(ExplainsSomething(ds[0], "hbm_uncorrectable on gpu/3"));
  EXPECT_EQ(ds[0].evidence.size(), 3u);
  EXPECT_EQ(ds[0].evidence.front().time_ns, kT0);  // the DBE leads the chain
}

TEST(IsolateCausal, RemapOnAnotherGpuDoesNotAbsorbTheDbe) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kGpu, FaultClass::kHbmUncorrectable, Gpu3(), kT0).Sev(Severity::kCritical),
                 Make(Layer::kGpu, FaultClass::kRowRemapPending, Ref(ComponentType::kGpu, "4"), kT0 + kSec)};
  EXPECT_EQ(Isolate(in).size(), 2u);
}

TEST(IsolateCausal, GpuHardwareFaultExplainsTheProgramCrashOnThatGpuOnly) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kGpu, FaultClass::kHbmUncorrectable, Gpu3(), kT0).Sev(Severity::kCritical),
                 Make(Layer::kOs, FaultClass::kUserApplication, Ref(ComponentType::kGpu, "0000:3b:00.0"), kT0 + kSec),
                 Make(Layer::kOs, FaultClass::kUserApplication, Ref(ComponentType::kGpu, "0000:5e:00.0"), kT0 + kSec)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kHbmUncorrectable);
  EXPECT_EQ(ds[0].explains.size(), 1u);
  EXPECT_EQ(ds[1].component.Id(), "gpu/0000:5e:00.0");
}

TEST(IsolateCausal, PowerExplainsSlowStepsDirectlyOnlyWhenTheGpuLayerIsBlind) {
  IsolateInput in;
  in.layers_with_data = {Layer::kOob, Layer::kWorkload};
  in.findings = {Psu(kT0), SlowSteps(kT0 + kMin)};
  auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPowerSupply);
  EXPECT_NE(ds[0].summary.find("no data from: gpu, os, fabric"), std::string::npos);
  // With GPU telemetry and no power brake, the PSU loss did not slow anything.
  in.layers_with_data.insert(Layer::kGpu);
  ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kWorkloadImbalance);
  EXPECT_NE(ds[0].summary.find("lines up"), std::string::npos);
}

TEST(IsolateCausal, SympatheticErrorIsExplainedByTheFaultItEchoes) {
  IsolateInput in = AllLayers();
  in.findings = {KernelOffBus(kT0),
                 Make(Layer::kOs, FaultClass::kDriverFault, Ref(ComponentType::kGpu, "5"), kT0 + kSec)
                     .Attr("sympathetic", "true")
                     .Act(Action::kRebootNode)};
  auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kGpuFellOffBus);
  // Alone, an echo is watched, not acted on, and says so.
  in.findings.erase(in.findings.begin());
  ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].action, Action::kMonitor);
  EXPECT_LT(ds[0].confidence, 0.5);
  EXPECT_NE(ds[0].summary.find("sympathetic"), std::string::npos);
}

}  // namespace
}  // namespace faultline
