// Decoys, compound faults, and the answers when no hardware is at fault: the cases where
// a naive "worst finding wins" isolator takes the wrong action.
#include <gtest/gtest.h>

#include "engine/isolate/isolator.h"
#include "isolate_test_util.h"

namespace faultline {
namespace {

using namespace testing_isolate;  // NOLINT(google-build-using-namespace): test builders

Finding XidStorm(const std::string& gpu_bdf, int64_t at) {
  return Make(Layer::kOs, FaultClass::kUserApplication, Ref(ComponentType::kGpu, gpu_bdf, {{"bdf", gpu_bdf}}), at)
      .Until(at + 5 * kMin)
      .Act(Action::kNotifyUser)
      .Summary("Xid 13 x500: Graphics SM Warp Exception");
}

TEST(IsolateDecoy, UserXidStormWithBenignSbesIsTheProgramNotTheGpu) {
  IsolateInput in = AllLayers();
  in.findings = {
      XidStorm("0000:b5:00.0", kT0),
      Make(Layer::kGpu, FaultClass::kHbmSbeAging, Ref(ComponentType::kGpu, "4", {{"bdf", "0000:b5:00.0"}}), kT0 - kMin)
          .Sev(Severity::kInfo)
          .Act(Action::kMonitor)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kUserApplication);
  EXPECT_EQ(ds[0].action, Action::kNotifyUser);
  for (const Diagnosis& d : ds) EXPECT_LT(d.action, Action::kResetGpu) << ToString(d.fault_class);
}

TEST(IsolateDecoy, ProgramFaultNeverCarriesAHardwareAction) {
  IsolateInput in = AllLayers();
  Finding storm = XidStorm("0000:b5:00.0", kT0);
  storm.action = Action::kRma;  // a detector that got it wrong
  in.findings = {storm};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_LE(ds[0].action, Action::kRestartJob);
}

TEST(IsolateDecoy, CorrectedAerBurstOnANicIsNotAGpuFaultNorTheSlowdown) {
  IsolateInput in = AllLayers();
  ComponentRef nic = PcieComponent("0000:5e:00.0");
  nic.keys["device_class"] = "network";
  in.findings = {Make(Layer::kOs, FaultClass::kPcieLinkDegraded, nic, kT0)
                     .Sev(Severity::kInfo)
                     .Act(Action::kMonitor)
                     .Summary("AER corrected x40 (RxErr)"),
                 Make(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent("job/7"), kT0 + kMin)};
  auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kWorkloadImbalance);
  EXPECT_EQ(ds[1].component.Id(), "pcie/0000:5e:00.0");
  for (const Diagnosis& d : ds) EXPECT_NE(d.component.type, ComponentType::kGpu);
  // Without a slowdown the burst is background noise: the answer is "none".
  in.findings.pop_back();
  ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kNone);
  EXPECT_NE(ds[0].summary.find("1 informational finding"), std::string::npos);
}

TEST(IsolateDecoy, RedundantPsuFailureExplainsNothingAndIsLowUrgency) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "2"), kT0)
                     .Sev(Severity::kCritical)
                     .Act(Action::kRma)
                     .Summary("PSU2 failed")};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPowerSupply);
  EXPECT_EQ(ds[0].action, Action::kRma);
  EXPECT_EQ(ds[0].severity, Severity::kWarning);
  EXPECT_TRUE(ds[0].explains.empty());
  EXPECT_NE(ds[0].summary.find("redundancy held"), std::string::npos);
}

TEST(IsolateDecoy, PsuSagPlusUnrelatedSegfaultGivesTwoIndependentDiagnoses) {
  IsolateInput in = AllLayers();
  in.slowdown_reported = true;
  in.findings = {
      Make(Layer::kOob, FaultClass::kVoltageOutOfRange, Ref(ComponentType::kPsu, "1"), kT0).Sev(Severity::kCritical),
      Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Ref(ComponentType::kGpu, "0"), kT0 + 20 * kSec),
      Make(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent("job/1"), kT0 + kMin),
      Make(Layer::kOs, FaultClass::kUserApplication, HostComponent(), kT0 + 2 * kMin)
          .Sev(Severity::kCritical)
          .Summary("python[4242]: segfault at 0 in libfoo.so")};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kVoltageOutOfRange);
  EXPECT_EQ(ds[0].explains.size(), 2u);
  EXPECT_FALSE(ExplainsSomething(ds[0], "user_application"));
  EXPECT_EQ(ds[1].fault_class, FaultClass::kUserApplication);
  EXPECT_EQ(ds[1].action, Action::kNotifyUser);
  EXPECT_TRUE(ds[1].ruled_out.empty());  // the ruled-out list rides on the primary only
  // The segfault is the program's: the os layer's hardware is still ruled out, saying so.
  bool os_ruled_out = false;
  for (const RuledOut& r : ds[0].ruled_out) {
    if (r.layer != Layer::kOs) continue;
    os_ruled_out = true;
    EXPECT_NE(r.reason.find("1 program fault(s)"), std::string::npos) << r.reason;
  }
  EXPECT_TRUE(os_ruled_out);
}

TEST(IsolateDecoy, SlowdownWithNoCauseIsTheWorkloadWithEveryLayerRuledOut) {
  IsolateInput in = AllLayers();
  in.slowdown_reported = true;
  in.symptom_ns = kT0;
  in.observations = {Reading(Layer::kOob, Ref(ComponentType::kPsu, "1"), ObsKind::kPsuState, 1, "PSU1 OK", kT0),
                     Reading(Layer::kOob, Ref(ComponentType::kPsu, "2"), ObsKind::kPsuState, 1, "PSU2 OK", kT0),
                     Reading(Layer::kOob, Ref(ComponentType::kSensor, "inlet"), ObsKind::kTemperature, 24,
                             "inlet 24 C below 40 C threshold", kT0),
                     Reading(Layer::kGpu, Gpu3(), ObsKind::kClockThrottle, 0, "gpu/3 no clock event reasons", kT0)};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  const Diagnosis& d = ds[0];
  EXPECT_EQ(d.fault_class, FaultClass::kWorkloadImbalance);
  EXPECT_EQ(d.action, Action::kNotifyUser);
  EXPECT_EQ(d.summary, "no hardware or fabric cause found; suspect the workload");
  ASSERT_EQ(d.evidence.size(), 1u);
  EXPECT_EQ(d.evidence[0].time_ns, kT0);
  ASSERT_EQ(d.ruled_out.size(), 4u);
  EXPECT_EQ(d.ruled_out[0].layer, Layer::kOob);
  EXPECT_EQ(d.ruled_out[0].reason, "no fault in the oob layer: PSU1 OK; PSU2 OK; inlet 24 C below 40 C threshold");
  EXPECT_EQ(d.ruled_out[0].evidence.size(), 3u);
  EXPECT_EQ(d.ruled_out[2].layer, Layer::kOs);
  EXPECT_NE(d.ruled_out[2].reason.find("answered with no finding"), std::string::npos);
  EXPECT_GE(d.confidence, 0.85);
}

TEST(IsolateDecoy, WorkloadAnswerIsLessSureWhenLayersHadNoData) {
  IsolateInput blind;
  blind.slowdown_reported = true;
  IsolateInput seen = AllLayers();
  seen.slowdown_reported = true;
  const auto a = Isolate(blind);
  const auto b = Isolate(seen);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].fault_class, FaultClass::kWorkloadImbalance);
  EXPECT_TRUE(a[0].ruled_out.empty());
  EXPECT_NE(a[0].summary.find("no data from: oob, gpu, os, fabric"), std::string::npos);
  EXPECT_LT(a[0].confidence, b[0].confidence);
}

TEST(IsolateDecoy, NothingAtAllIsNone) {
  const auto ds = Isolate(AllLayers());
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kNone);
  EXPECT_EQ(ds[0].action, Action::kNone);
  EXPECT_EQ(ds[0].summary, "no fault found in the window");
  EXPECT_EQ(ds[0].ruled_out.size(), 4u);
  EXPECT_EQ(Isolate(IsolateInput{})[0].fault_class, FaultClass::kNone);
}

TEST(IsolateDecoy, LayerWithAFaultOrWithoutDataIsNeverRuledOut) {
  IsolateInput in;
  in.layers_with_data = {Layer::kGpu, Layer::kOs};
  in.findings = {Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Gpu3(), kT0),
                 Make(Layer::kOs, FaultClass::kHbmSbeAging, Gpu3(), kT0).Sev(Severity::kInfo)};
  const auto ds = Isolate(in);
  ASSERT_FALSE(ds.empty());
  ASSERT_EQ(ds[0].ruled_out.size(), 1u);
  EXPECT_EQ(ds[0].ruled_out[0].layer, Layer::kOs);
  EXPECT_NE(ds[0].ruled_out[0].reason.find("informational findings only"), std::string::npos);
  EXPECT_NE(ds[0].summary.find("no data from: oob, fabric"), std::string::npos);
}

TEST(IsolateDecoy, RuledOutQuotesTheLatestReadingPerSensorAndIsCapped) {
  IsolateInput in = AllLayers();
  in.observations = {
      Reading(Layer::kOob, Ref(ComponentType::kSensor, "inlet"), ObsKind::kTemperature, 24, "inlet 24 C", kT0 + kMin),
      Reading(Layer::kOob, Ref(ComponentType::kSensor, "inlet"), ObsKind::kTemperature, 31, "inlet 31 C", kT0)};
  for (int i = 0; i < 3; ++i) {
    in.observations.push_back(
        Reading(Layer::kOob, Ref(ComponentType::kFan, std::to_string(i)), ObsKind::kFanSpeed, 9000, "", kT0));
  }
  IsolateOptions opt;
  opt.max_ruled_out_evidence = 4;
  auto ds = Isolate(in, opt);
  const RuledOut* oob = &ds[0].ruled_out[0];
  EXPECT_EQ(oob->evidence.size(), 4u);
  EXPECT_NE(oob->reason.find("inlet 24 C"), std::string::npos);
  EXPECT_EQ(oob->reason.find("inlet 31 C"), std::string::npos);
  EXPECT_NE(oob->reason.find("fan/0 fan_speed 9000"), std::string::npos);
  opt.max_ruled_out_evidence = 2;
  ds = Isolate(in, opt);
  oob = &ds[0].ruled_out[0];
  EXPECT_EQ(oob->evidence.size(), 2u);
  EXPECT_EQ(oob->reason.find("inlet"), std::string::npos);
}

}  // namespace
}  // namespace faultline
