#include <gtest/gtest.h>

#include <set>

#include "engine/detect/gpu_detectors.h"
#include "gpu_test_util.h"

namespace faultline {
namespace {

using testing::Attr;
using testing::GpuObs;
using testing::kMin;
using testing::kT0;
using testing::Of;

Observation Lost(int gpu, int64_t t, const std::string& error) {
  return GpuObs(ObsKind::kGpuLost, gpu, t, 1, {{"error", error}});
}

TEST(GpuDetectLostTest, FallenOffTheBusRebootsTheNode) {
  auto det = MakeGpuLostDetector({});
  det->Observe(GpuObs(ObsKind::kGpuIdentity, 3, kT0, 0));
  for (int i = 1; i <= 4; ++i) det->Observe(Lost(3, kT0 + i * kMin, "GPU_IS_LOST"));
  auto f = Of(*det, FaultClass::kGpuFellOffBus);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kRebootNode);
  EXPECT_EQ(f[0].severity, Severity::kFatal);
  EXPECT_EQ(f[0].count, 1u) << "one loss, sampled four times";
  EXPECT_EQ(f[0].first_ns, kT0 + kMin);
  EXPECT_EQ(f[0].last_ns, kT0 + 4 * kMin);
  EXPECT_EQ(Attr(f[0], "error"), "GPU_IS_LOST");
}

TEST(GpuDetectLostTest, ResetRequiredAsksForAReset) {
  auto det = MakeGpuLostDetector({});
  det->Observe(Lost(1, kT0, "RESET_REQUIRED"));
  auto f = Of(*det, FaultClass::kGpuFellOffBus);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kResetGpu);
}

TEST(GpuDetectLostTest, LostAgainAfterRecoveryDrainsThenRma) {
  auto det = MakeGpuLostDetector({});
  det->Observe(Lost(6, kT0, "GPU_IS_LOST"));
  det->Observe(GpuObs(ObsKind::kGpuIdentity, 6, kT0 + 30 * kMin, 0));  // back after reboot
  det->Observe(GpuObs(ObsKind::kTemperature, 6, kT0 + 31 * kMin, 40, {{"sensor", "gpu"}}));
  det->Observe(Lost(6, kT0 + 60 * kMin, "GPU_IS_LOST"));
  auto f = Of(*det, FaultClass::kGpuFellOffBus);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].count, 2u);
  EXPECT_EQ(f[0].action, Action::kDrain);
  EXPECT_EQ(Attr(f[0], "then"), "rma");
  EXPECT_EQ(Attr(f[0], "losses"), "2");
}

TEST(GpuDetectLostTest, OtherGpusAreUnaffected) {
  auto det = MakeGpuLostDetector({});
  det->Observe(Lost(0, kT0, "GPU_IS_LOST"));
  det->Observe(GpuObs(ObsKind::kGpuIdentity, 1, kT0, 0));
  auto f = det->Findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].component.Id(), "gpu/0");
}

TEST(GpuDetectSetTest, MakeGpuDetectorsBuildsTheWholeLayer) {
  auto set = MakeGpuDetectors();
  std::set<std::string> names;
  for (const auto& d : set) names.insert(std::string(d->name()));
  EXPECT_EQ(names, (std::set<std::string>{"gpu_memory", "gpu_sbe", "gpu_throttle", "gpu_lost"}));
  // Every detector sees the stream; each picks its own kinds.
  Observation dbe = GpuObs(ObsKind::kEccDbe, 2, kT0, 1, {{"counter", "volatile"}});
  Observation brake = GpuObs(ObsKind::kClockThrottle, 2, kT0, 0x80);
  Observation lost = GpuObs(ObsKind::kGpuLost, 4, kT0, 1, {{"error", "GPU_IS_LOST"}});
  std::multiset<FaultClass> classes;
  for (auto& d : set) {
    for (const Observation* o : {&dbe, &brake, &lost}) d->Observe(*o);
    for (const Finding& f : d->Findings()) classes.insert(f.fault_class);
  }
  EXPECT_EQ(classes, (std::multiset<FaultClass>{FaultClass::kHbmUncorrectable, FaultClass::kGpuPowerBrake,
                                                FaultClass::kGpuFellOffBus}));
}

}  // namespace
}  // namespace faultline
