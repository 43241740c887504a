// Hostile and degenerate inputs: extreme times, nonsense confidences, floods of findings.
// The isolator must answer (never crash, never overflow) and keep its own invariants.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/isolate/input.h"
#include "engine/isolate/isolator.h"
#include "isolate_test_util.h"

namespace faultline {
namespace {

using namespace testing_isolate;  // NOLINT(google-build-using-namespace): test builders

void ExpectInvariants(const std::vector<Diagnosis>& ds) {
  ASSERT_FALSE(ds.empty());
  for (const Diagnosis& d : ds) {
    EXPECT_TRUE(d.confidence >= 0.0 && d.confidence <= 1.0) << d.confidence;
    for (size_t i = 1; i < d.evidence.size(); ++i) {
      const Evidence& a = d.evidence[i - 1];
      const Evidence& b = d.evidence[i];
      if (a.time_ns != 0 && b.time_ns != 0) {
        EXPECT_LE(a.time_ns, b.time_ns);
      }
    }
  }
}

TEST(IsolateRobustness, ExtremeTimesAndOptionsDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMinTime = std::numeric_limits<int64_t>::min();
  IsolateInput in = AllLayers();
  in.slowdown_reported = true;
  in.symptom_ns = kMinTime;
  in.findings = {Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "1"), kMax)
                     .Attr("clock_skew_ns", "9223372036854775807"),
                 Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Gpu3(), kMinTime).Until(kMax),
                 Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Gpu3(), -5).Attr("clock_skew_ns", "-7")};
  IsolateOptions opt;
  opt.explain_before_ns = kMax;
  opt.explain_skew_ns = kMinTime;
  ExpectInvariants(Isolate(in, opt));
  opt.explain_skew_ns = kMax;
  ExpectInvariants(Isolate(in, opt));
}

TEST(IsolateRobustness, NonsenseConfidenceIsSanitized) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kGpu, FaultClass::kGpuSram, Ref(ComponentType::kGpu, "1"), kT0)
                     .Confidence(std::numeric_limits<double>::quiet_NaN()),
                 Make(Layer::kGpu, FaultClass::kGpuSram, Ref(ComponentType::kGpu, "2"), kT0).Confidence(-3),
                 Make(Layer::kGpu, FaultClass::kGpuSram, Ref(ComponentType::kGpu, "4"), kT0)
                     .Confidence(std::numeric_limits<double>::infinity())};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 3u);
  ExpectInvariants(ds);
}

TEST(IsolateRobustness, FloodOfFindingsIsFoldedAndEvidenceIsCapped) {
  IsolateInput in = AllLayers();
  for (int i = 0; i < 1500; ++i) {
    in.findings.push_back(
        Make(Layer::kOs, FaultClass::kUserApplication, Ref(ComponentType::kGpu, "0000:b5:00.0"), kT0 + i * kSec));
  }
  IsolateOptions opt;
  opt.max_evidence = 100;
  const auto ds = Isolate(in, opt);
  ASSERT_EQ(ds.size(), 1u);  // one fault on one GPU, however many lines
  EXPECT_EQ(ds[0].evidence.size(), 100u);
  EXPECT_EQ(ds[0].evidence.front().time_ns, kT0);
  EXPECT_NE(ds[0].summary.find("1400 newer evidence line(s) omitted"), std::string::npos);
  ExpectInvariants(ds);
}

TEST(IsolateRobustness, DuplicateEvidenceFromTwoFindingsIsListedOnce) {
  IsolateInput in = AllLayers();
  Finding a = Make(Layer::kOs, FaultClass::kGpuFellOffBus, Gpu3(), kT0);
  Finding b = a;
  b.layer = Layer::kGpu;
  in.findings = {a, b};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].evidence.size(), 1u);
}

TEST(IsolateRobustness, FindingsWithoutEvidenceStillLeaveAChain) {
  IsolateInput in = AllLayers();
  in.findings = {Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "1"), kT0)
                     .NoEvidence()
                     .Summary("PSU1 failed"),
                 Make(Layer::kGpu, FaultClass::kGpuPowerBrake, Gpu3(), kT0 + kSec).NoEvidence()};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  ASSERT_EQ(ds[0].evidence.size(), 2u);
  EXPECT_EQ(ds[0].evidence[0].text, "PSU1 failed");
  EXPECT_EQ(ds[0].evidence[0].source, Source::kRedfish);
  EXPECT_EQ(ds[0].evidence[1].source, Source::kNvml);
}

TEST(IsolateRobustness, MonotonicOnlyEvidenceFollowsTimedEvidence) {
  IsolateInput in = AllLayers();
  Finding f = Make(Layer::kOs, FaultClass::kGpuFellOffBus, Gpu3(), kT0);
  Evidence mono;
  mono.time_ns = 0;
  mono.mono_us = 5'000'000;
  mono.text = "[    5.000000] NVRM: GPU has fallen off the bus";
  f.evidence.insert(f.evidence.begin(), mono);
  in.findings = {f};
  const auto ds = Isolate(in);
  ASSERT_EQ(ds[0].evidence.size(), 2u);
  EXPECT_EQ(ds[0].evidence[0].time_ns, kT0);
  EXPECT_EQ(ds[0].evidence[1].mono_us, 5'000'000);
}

TEST(IsolateWindow, BuildIsolateInputKeepsOverlapsAndMarksLayers) {
  std::vector<Finding> findings = {
      Make(Layer::kOob, FaultClass::kPowerSupply, Ref(ComponentType::kPsu, "1"), kT0 - 2 * kMin).Until(kT0),
      Make(Layer::kGpu, FaultClass::kGpuThermal, Gpu3(), kT0 - 10 * kMin),
      Make(Layer::kFabric, FaultClass::kNvlinkErrors, Ref(ComponentType::kNvlink, "1/1"), kT0 + 20 * kMin),
      Make(Layer::kOs, FaultClass::kHostMemory, HostComponent(), 0)};
  std::vector<Observation> obs = {
      Reading(Layer::kGpu, Gpu3(), ObsKind::kTemperature, 60, "gpu/3 60 C", kT0 + kMin),
      Reading(Layer::kFabric, PcieComponent("0000:3b:00.0"), ObsKind::kPcieLinkWidth, 16, "x16", kT0 + 30 * kMin)};
  IsolateInputParts parts{.findings = findings, .readings = obs, .slowdown_reported = true};
  parts.window = {kT0 - kMin, kT0 + 10 * kMin};
  const IsolateInput in = BuildIsolateInput(parts);
  EXPECT_TRUE(in.slowdown_reported);
  ASSERT_EQ(in.findings.size(), 2u);  // the PSU (overlaps) and the untimed one
  EXPECT_EQ(in.findings[0].fault_class, FaultClass::kPowerSupply);
  EXPECT_EQ(in.findings[1].fault_class, FaultClass::kHostMemory);
  ASSERT_EQ(in.observations.size(), 1u);
  EXPECT_EQ(in.layers_with_data, (std::set<Layer>{Layer::kOob, Layer::kGpu, Layer::kOs}));
  // Open bounds keep everything.
  EXPECT_EQ(BuildIsolateInput({.findings = findings, .readings = obs}).findings.size(), 4u);
}

}  // namespace
}  // namespace faultline
