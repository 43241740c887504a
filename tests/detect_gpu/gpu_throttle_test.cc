#include <gtest/gtest.h>

#include "engine/detect/gpu_detectors.h"
#include "gpu_test_util.h"

namespace faultline {
namespace {

using testing::Attr;
using testing::GpuObs;
using testing::kMin;
using testing::kT0;
using testing::Of;

constexpr int64_t kTenSec = 10 * kNsPerSec;

class GpuDetectThrottleTest : public ::testing::Test {
 protected:
  void Mask(int gpu, int64_t t, uint64_t mask) {
    det_->Observe(GpuObs(ObsKind::kClockThrottle, gpu, t, static_cast<double>(mask)));
  }
  void Temp(int gpu, int64_t t, double c, std::map<std::string, std::string> attrs) {
    det_->Observe(GpuObs(ObsKind::kTemperature, gpu, t, c, std::move(attrs)));
  }
  // Samples every 10 s for `n` samples, mask chosen per sample index.
  template <typename F>
  void Masks(int gpu, int64_t from, int n, F mask_at) {
    for (int i = 0; i < n; ++i) Mask(gpu, from + i * kTenSec, mask_at(i));
  }
  std::unique_ptr<Detector> det_ = MakeGpuThrottleDetector({});
};

TEST_F(GpuDetectThrottleTest, HwThermalIsGpuThermal) {
  Mask(2, kT0, 0x0);
  Mask(2, kT0 + kTenSec, 0x48);  // HW_SLOWDOWN | HW_THERMAL
  auto f = Of(*det_, FaultClass::kGpuThermal);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].component.Id(), "gpu/2");
  EXPECT_EQ(Attr(f[0], "mask"), "0x48");
  EXPECT_EQ(Attr(f[0], "symptom"), "");
  EXPECT_EQ(f[0].first_ns, kT0 + kTenSec);
}

TEST_F(GpuDetectThrottleTest, PowerBrakeIsASymptom) {
  Mask(5, kT0, 0x88);
  auto f = Of(*det_, FaultClass::kGpuPowerBrake);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "symptom"), "true");
  EXPECT_EQ(f[0].action, Action::kMonitor);
}

TEST_F(GpuDetectThrottleTest, FlappingPowerBrakeCountsEpisodesNotSamples) {
  // On for two samples, off for one, three times; then held for six samples.
  for (int ep = 0; ep < 3; ++ep) {
    Mask(1, kT0 + (ep * 3) * kTenSec, 0x80);
    Mask(1, kT0 + (ep * 3 + 1) * kTenSec, 0x80);
    Mask(1, kT0 + (ep * 3 + 2) * kTenSec, 0x0);
  }
  Masks(1, kT0 + 9 * kTenSec, 6, [](int) { return 0x80; });
  auto f = Of(*det_, FaultClass::kGpuPowerBrake);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].count, 4u);
  EXPECT_EQ(f[0].last_ns, kT0 + 14 * kTenSec);
}

TEST_F(GpuDetectThrottleTest, PolicyReasonsAreNotFaults) {
  // Idle, application clocks, SW power cap, sync boost, SW thermal: ordinary policy.
  Masks(0, kT0, 120, [](int i) { return i % 2 ? 0x4 : 0x1 | 0x2 | 0x10 | 0x20; });
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectThrottleTest, SustainedHwSlowdownWithoutThermalCauseIsPowerBrake) {
  Temp(4, kT0, 62, {{"sensor", "gpu"}, {"slowdown", "90"}});
  Masks(4, kT0, 30, [](int) { return 0x0; });
  Masks(4, kT0 + 30 * kTenSec, 60, [](int) { return 0x8; });  // 10 minutes of HW_SLOWDOWN
  auto f = Of(*det_, FaultClass::kGpuPowerBrake);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "rule"), "hw_slowdown_power");
  EXPECT_EQ(Attr(f[0], "symptom"), "true");
  EXPECT_EQ(f[0].count, 1u);
  EXPECT_TRUE(Of(*det_, FaultClass::kGpuThermal).empty());
  // Fires once six of the last ten minutes are covered, not before.
  EXPECT_GE(f[0].first_ns, kT0 + 30 * kTenSec + 6 * kMin);
  EXPECT_LE(f[0].first_ns, kT0 + 30 * kTenSec + 7 * kMin);
}

TEST_F(GpuDetectThrottleTest, HwSlowdownWithHotGpuIsThermal) {
  Temp(4, kT0, 88, {{"sensor", "gpu"}, {"slowdown", "90"}});
  Masks(4, kT0, 60, [](int) { return 0x8; });
  auto f = Of(*det_, FaultClass::kGpuThermal);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "rule"), "hw_slowdown_thermal");
  EXPECT_TRUE(Of(*det_, FaultClass::kGpuPowerBrake).empty());
}

TEST_F(GpuDetectThrottleTest, BriefHwSlowdownDoesNotFire) {
  Masks(3, kT0, 60, [](int i) { return i >= 20 && i < 38 ? 0x8 : 0x0; });  // 3 minutes
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectThrottleTest, HwSlowdownFlappingHalfTheTimeDoesNotFire) {
  Masks(3, kT0, 120, [](int i) { return i % 2 ? 0x8 : 0x0; });
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectThrottleTest, HwSlowdownFlappingMostOfTheTimeFires) {
  Masks(3, kT0, 120, [](int i) { return i % 4 == 3 ? 0x0 : 0x8; });  // 75%
  EXPECT_EQ(Of(*det_, FaultClass::kGpuPowerBrake).size(), 1u);
}

TEST_F(GpuDetectThrottleTest, SparseSamplesAcrossAGapAreNotAssumedAsserted) {
  // Two samples with the bit, 20 minutes apart: the gap is unknown, not "asserted".
  Mask(0, kT0, 0x8);
  Mask(0, kT0 + 20 * kMin, 0x8);
  Mask(0, kT0 + 21 * kMin, 0x8);
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectThrottleTest, HbmAboveItsSlowdownThresholdIsGpuThermal) {
  Temp(6, kT0, 93, {{"sensor", "memory"}, {"slowdown", "95"}});
  Temp(6, kT0 + kTenSec, 96, {{"sensor", "memory"}, {"slowdown", "95"}});
  EXPECT_TRUE(det_->Findings().empty()) << "one sample is a spike";
  Temp(6, kT0 + 2 * kTenSec, 97, {{"sensor", "memory"}, {"slowdown", "95"}});
  auto f = Of(*det_, FaultClass::kGpuThermal);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "sensor"), "memory");
  EXPECT_EQ(Attr(f[0], "slowdown_c"), "95");
  EXPECT_EQ(f[0].evidence.size(), 1u);
}

TEST_F(GpuDetectThrottleTest, HbmUsesTheDefaultThresholdWhenNoneIsGiven) {
  GpuThrottleOptions opt;
  opt.memory_slowdown_c = 85;
  det_ = MakeGpuThrottleDetector(opt);
  Temp(6, kT0, 86, {{"sensor", "memory"}});
  Temp(6, kT0 + kTenSec, 86, {{"sensor", "memory"}});
  EXPECT_EQ(Of(*det_, FaultClass::kGpuThermal).size(), 1u);
}

TEST_F(GpuDetectThrottleTest, GpuCoreTemperatureWithoutAThresholdIsNotJudged) {
  for (int i = 0; i < 10; ++i) Temp(0, kT0 + i * kTenSec, 99, {{"sensor", "gpu"}});
  EXPECT_TRUE(det_->Findings().empty());
}

}  // namespace
}  // namespace faultline
