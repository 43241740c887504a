#include <gtest/gtest.h>

#include "engine/detect/gpu_detectors.h"
#include "gpu_test_util.h"

namespace faultline {
namespace {

using testing::Attr;
using testing::GpuObs;
using testing::kDay;
using testing::kMin;
using testing::kT0;
using testing::Of;

class GpuDetectMemoryTest : public ::testing::Test {
 protected:
  void Feed(ObsKind kind, int gpu, int64_t t, double v, std::map<std::string, std::string> attrs = {}) {
    det_->Observe(GpuObs(kind, gpu, t, v, std::move(attrs)));
  }
  void Dbe(int gpu, int64_t t, double v, const std::string& counter = "volatile") {
    Feed(ObsKind::kEccDbe, gpu, t, v, {{"counter", counter}});
  }
  std::unique_ptr<Detector> det_ = MakeGpuMemoryDetector({});
};

TEST_F(GpuDetectMemoryTest, VolatileDbeAtFirstSightIsRecentAndFires) {
  Dbe(3, kT0, 2);
  auto f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].component.Id(), "gpu/3");
  EXPECT_EQ(f[0].layer, Layer::kGpu);
  EXPECT_EQ(f[0].action, Action::kResetGpu);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(Attr(f[0], "new_errors"), "2");
  ASSERT_EQ(f[0].evidence.size(), 1u);
  EXPECT_EQ(f[0].evidence[0].component, "gpu/3");
  EXPECT_EQ(f[0].component.keys.at("uuid"), "GPU-00000003");
}

TEST_F(GpuDetectMemoryTest, AggregateHistoryAloneDoesNotFire) {
  for (int i = 0; i < 10; ++i) Dbe(1, kT0 + i * 10 * kMin, 4, "aggregate");
  Dbe(1, kT0, 0, "volatile");
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectMemoryTest, AggregateIncreaseFires) {
  Dbe(1, kT0, 4, "aggregate");
  Dbe(1, kT0 + kMin, 4, "aggregate");
  EXPECT_TRUE(det_->Findings().empty());
  Dbe(1, kT0 + 2 * kMin, 5, "aggregate");
  auto f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "new_errors"), "1");
  EXPECT_EQ(f[0].first_ns, kT0 + 2 * kMin);
}

TEST_F(GpuDetectMemoryTest, CounterResetIsANewBaselineNotANegativeRate) {
  Dbe(0, kT0, 0);
  Dbe(0, kT0 + kMin, 3);      // three new errors
  Dbe(0, kT0 + 2 * kMin, 0);  // driver reload: volatile counter restarts
  Dbe(0, kT0 + 3 * kMin, 0);
  auto f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].count, 1u);
  EXPECT_EQ(Attr(f[0], "new_errors"), "3");
  Dbe(0, kT0 + 4 * kMin, 1);  // a genuinely new error after the reset
  f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].count, 2u);
  EXPECT_EQ(Attr(f[0], "new_errors"), "4");
  EXPECT_EQ(f[0].last_ns, kT0 + 4 * kMin);
}

TEST_F(GpuDetectMemoryTest, SramLocationIsGpuSramNotHbm) {
  Feed(ObsKind::kEccDbe, 2, kT0, 0, {{"counter", "volatile"}, {"location", "l2"}});
  Feed(ObsKind::kEccDbe, 2, kT0 + kMin, 1, {{"counter", "volatile"}, {"location", "l2"}});
  EXPECT_TRUE(Of(*det_, FaultClass::kHbmUncorrectable).empty());
  auto f = Of(*det_, FaultClass::kGpuSram);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "location"), "l2");
}

TEST_F(GpuDetectMemoryTest, TotalCounterRepeatingAnSramErrorIsNotHbm) {
  // NVML's total counts the SRAM error too; with per-location counters (dram included)
  // the locations decide, so one SRAM error is one gpu_sram finding and no HBM one.
  for (int64_t t : {kT0, kT0 + kMin}) {
    const double n = t == kT0 ? 0 : 1;
    Feed(ObsKind::kEccDbe, 2, t, n, {{"counter", "volatile"}});
    Feed(ObsKind::kEccDbe, 2, t, n, {{"counter", "aggregate"}});
    Feed(ObsKind::kEccDbe, 2, t, 0, {{"counter", "volatile"}, {"location", "dram"}});
    Feed(ObsKind::kEccDbe, 2, t, n, {{"counter", "volatile"}, {"location", "sram"}});
  }
  EXPECT_TRUE(Of(*det_, FaultClass::kHbmUncorrectable).empty());
  EXPECT_EQ(Of(*det_, FaultClass::kGpuSram).size(), 1u);
  // An HBM error shows on the dram location and is still HBM.
  Feed(ObsKind::kEccDbe, 2, kT0 + 2 * kMin, 2, {{"counter", "volatile"}});
  Feed(ObsKind::kEccDbe, 2, kT0 + 2 * kMin, 1, {{"counter", "volatile"}, {"location", "dram"}});
  EXPECT_EQ(Of(*det_, FaultClass::kHbmUncorrectable).size(), 1u);
}

TEST_F(GpuDetectMemoryTest, DbeWithRemapFailureDrainsInsteadOfReset) {
  Dbe(4, kT0, 1);
  EXPECT_EQ(Of(*det_, FaultClass::kHbmUncorrectable)[0].action, Action::kResetGpu);
  Feed(ObsKind::kRowRemapFailure, 4, kT0 + kMin, 1);
  auto f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kDrain);
  // Another GPU's DBE is not affected by gpu/4's failure.
  Dbe(5, kT0 + kMin, 1);
  for (const Finding& x : Of(*det_, FaultClass::kHbmUncorrectable)) {
    EXPECT_EQ(x.action, x.component.Id() == "gpu/4" ? Action::kDrain : Action::kResetGpu) << x.component.Id();
  }
}

TEST_F(GpuDetectMemoryTest, RemapFailureIsExhaustedDrainThenRma) {
  Feed(ObsKind::kRowRemapFailure, 7, kT0, 0);
  EXPECT_TRUE(det_->Findings().empty());
  for (int i = 1; i <= 5; ++i) Feed(ObsKind::kRowRemapFailure, 7, kT0 + i * kMin, 1);
  auto f = Of(*det_, FaultClass::kRowRemapExhausted);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kRma);
  EXPECT_EQ(f[0].severity, Severity::kFatal);
  EXPECT_EQ(Attr(f[0], "first"), "drain");
  EXPECT_EQ(Attr(f[0], "then"), "rma");
  EXPECT_NE(f[0].summary.find("drain"), std::string::npos);
  EXPECT_EQ(f[0].count, 1u);
  EXPECT_EQ(f[0].first_ns, kT0 + kMin);
  EXPECT_EQ(f[0].last_ns, kT0 + 5 * kMin);
}

TEST_F(GpuDetectMemoryTest, RemapPendingAsksForResetAndClearsAfterIt) {
  Feed(ObsKind::kRowRemapPending, 3, kT0, 0);
  EXPECT_TRUE(det_->Findings().empty());
  Feed(ObsKind::kRowRemapPending, 3, kT0 + kMin, 1);
  Feed(ObsKind::kRowRemapPending, 3, kT0 + 2 * kMin, 1);
  auto f = Of(*det_, FaultClass::kRowRemapPending);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kResetGpu);
  EXPECT_EQ(f[0].count, 1u);
  Feed(ObsKind::kRowRemapPending, 3, kT0 + 3 * kMin, 0);  // reset applied the remap
  f = Of(*det_, FaultClass::kRowRemapPending);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "cleared"), "true");
  EXPECT_EQ(f[0].action, Action::kNone);
  Feed(ObsKind::kRowRemapPending, 3, kT0 + 4 * kMin, 1);  // a new pending remap
  f = Of(*det_, FaultClass::kRowRemapPending);
  EXPECT_EQ(f[0].count, 2u);
  EXPECT_EQ(Attr(f[0], "cleared"), "");
  EXPECT_EQ(f[0].action, Action::kResetGpu);
}

TEST_F(GpuDetectMemoryTest, NewUncorrectableRemapFiresButHistoryDoesNot) {
  Feed(ObsKind::kRowRemapUncorrectable, 6, kT0, 3);
  EXPECT_TRUE(det_->Findings().empty());
  Feed(ObsKind::kRowRemapUncorrectable, 6, kT0 + kMin, 4);
  auto f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "rule"), "remap_uncorrectable");
}

TEST_F(GpuDetectMemoryTest, RetiredPagesLimitIsSixtyThreeInTotal) {
  Feed(ObsKind::kRetiredPages, 2, kT0, 40, {{"cause", "sbe"}});
  Feed(ObsKind::kRetiredPages, 2, kT0, 22, {{"cause", "dbe"}});
  EXPECT_TRUE(det_->Findings().empty()) << "62 pages is under the limit";
  Feed(ObsKind::kRetiredPages, 2, kT0 + kDay, 41, {{"cause", "sbe"}});
  auto f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kRma);
  EXPECT_EQ(Attr(f[0], "retired_total"), "63");
}

TEST_F(GpuDetectMemoryTest, DbeRetirementsAboveFifteenWithTwoThisWeekMeanRma) {
  Feed(ObsKind::kRetiredPages, 1, kT0, 15, {{"cause", "dbe"}});
  Feed(ObsKind::kRetiredPages, 1, kT0 + 2 * kDay, 16, {{"cause", "dbe"}});
  EXPECT_TRUE(det_->Findings().empty()) << "only one new DBE retirement this week";
  Feed(ObsKind::kRetiredPages, 1, kT0 + 3 * kDay, 17, {{"cause", "dbe"}});
  auto f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kRma);
  EXPECT_EQ(Attr(f[0], "retired_dbe_recent"), "2");
}

TEST_F(GpuDetectMemoryTest, DbeRetirementsSpreadOverMonthsDoNotFire) {
  // 16 -> 18 DBE retirements, but one every ten days: never two within a week.
  for (int i = 0; i < 3; ++i) Feed(ObsKind::kRetiredPages, 1, kT0 + i * 10 * kDay, 16 + i, {{"cause", "dbe"}});
  EXPECT_TRUE(det_->Findings().empty());
}

// Page retirement (no row remapping): the HBM's uncorrectable error, repaired by a reset.
TEST_F(GpuDetectMemoryTest, RetirementPendingAsksForReset) {
  Feed(ObsKind::kRetiredPagesPending, 0, kT0, 1);
  EXPECT_TRUE(Of(*det_, FaultClass::kRowRemapPending).empty());
  auto f = Of(*det_, FaultClass::kHbmUncorrectable);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Attr(f[0], "mechanism"), "page_retirement");
  EXPECT_EQ(f[0].action, Action::kResetGpu);
}

TEST_F(GpuDetectMemoryTest, IgnoresOtherLayersAndComponents) {
  Observation o = GpuObs(ObsKind::kEccDbe, 0, kT0, 5, {{"counter", "volatile"}});
  o.layer = Layer::kOob;
  det_->Observe(o);
  o = GpuObs(ObsKind::kEccDbe, 0, kT0, 5, {{"counter", "volatile"}});
  o.value.reset();
  det_->Observe(o);
  EXPECT_TRUE(det_->Findings().empty());
}

}  // namespace
}  // namespace faultline
