#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "engine/detect/gpu_common.h"
#include "engine/detect/gpu_detectors.h"
#include "gpu_test_util.h"

namespace faultline {
namespace {

using testing::Attr;
using testing::GpuObs;
using testing::kDay;
using testing::kHour;
using testing::kMin;
using testing::kT0;
using testing::Of;

class GpuDetectSbeTest : public ::testing::Test {
 protected:
  // Feeds the aggregate SBE counter of `gpu` every `step` from `from` to `to`, with the
  // cumulative count given by `count_at(t)` (ns since kT0) plus `base`.
  void Feed(int gpu, int64_t from, int64_t to, int64_t step, const std::function<double(int64_t)>& count_at,
            double base = 0) {
    for (int64_t t = from; t <= to; t += step) {
      det_->Observe(GpuObs(ObsKind::kEccSbe, gpu, kT0 + t, base + std::floor(count_at(t)), {{"counter", "aggregate"}}));
    }
  }
  std::unique_ptr<Detector> det_ = MakeGpuSbeDetector({});
};

double PerHour(double rate, int64_t t) { return rate * static_cast<double>(t) / static_cast<double>(kHour); }

TEST_F(GpuDetectSbeTest, BenignLowRateOverDaysDoesNotFire) {
  // Two SBEs an hour for five days on top of a lifetime count: ordinary background.
  Feed(
      0, 0, 5 * kDay, 10 * kMin, [](int64_t t) { return PerHour(2, t); }, 1200);
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectSbeTest, JitteryLowRateDoesNotProjectALimit) {
  // 40 or 60 a day, alternating: no rising trend.
  double total = 0;
  for (int d = 0; d < 10; ++d) {
    const double per_day = d % 2 ? 60 : 40;
    for (int s = 0; s < 48; ++s) {
      total += per_day / 48;
      det_->Observe(
          GpuObs(ObsKind::kEccSbe, 2, kT0 + d * kDay + s * 30 * kMin, std::floor(total), {{"counter", "aggregate"}}));
    }
  }
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectSbeTest, SustainedHighRateFiresMonitor) {
  Feed(1, 0, 2 * kHour, kMin, [](int64_t t) { return PerHour(60, t); });
  auto f = Of(*det_, FaultClass::kHbmSbeAging);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].component.Id(), "gpu/1");
  EXPECT_EQ(f[0].action, Action::kMonitor);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  const double rate = std::stod(Attr(f[0], "rate_per_hour"));
  EXPECT_NEAR(rate, 60, 3);
  EXPECT_EQ(Attr(f[0], "plan"), "") << "two hours of data cannot project a trend";
  EXPECT_NE(f[0].summary.find("monitor"), std::string::npos);
  EXPECT_FALSE(f[0].evidence.empty());
  EXPECT_LE(f[0].evidence.size(), 16u);
}

TEST_F(GpuDetectSbeTest, HighRateNeedsTheMinimumSpan) {
  // 60/h, but only 20 minutes of samples: not yet a sustained rate.
  Feed(1, 0, 20 * kMin, kMin, [](int64_t t) { return PerHour(60, t); });
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectSbeTest, CounterResetDoesNotLookLikeABurst) {
  // A big lifetime count, then a driver reload zeroes the volatile counter, then a low
  // rate: the drop must not count, and the reload must not look like thousands of SBEs.
  for (int i = 0; i < 12; ++i) {
    det_->Observe(GpuObs(ObsKind::kEccSbe, 3, kT0 + i * 10 * kMin, 5000, {{"counter", "volatile"}}));
  }
  for (int i = 0; i < 24; ++i) {
    det_->Observe(GpuObs(ObsKind::kEccSbe, 3, kT0 + 2 * kHour + i * 10 * kMin, i / 6, {{"counter", "volatile"}}));
  }
  EXPECT_TRUE(det_->Findings().empty());
}

TEST_F(GpuDetectSbeTest, RateAfterAResetIsMeasuredFromTheNewBaseline) {
  det_->Observe(GpuObs(ObsKind::kEccSbe, 3, kT0, 90000, {{"counter", "volatile"}}));
  Feed(3, kMin, 2 * kHour, kMin, [](int64_t t) { return PerHour(40, t); });
  auto f = Of(*det_, FaultClass::kHbmSbeAging);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(std::stod(Attr(f[0], "rate_per_hour")), 40, 3);
}

TEST_F(GpuDetectSbeTest, ResetMidWindowKeepsCountingNewErrors) {
  // 30/h for 25 minutes (too short to judge), a driver reload zeroes the counter, 30/h
  // again: the drop is neither subtracted (a negative step would hide the 30/h) nor added.
  Feed(4, 0, 25 * kMin, kMin, [](int64_t t) { return PerHour(30, t); });
  EXPECT_TRUE(det_->Findings().empty());
  Feed(4, 26 * kMin, 65 * kMin, kMin, [](int64_t t) { return PerHour(30, t - 25 * kMin); });
  auto f = Of(*det_, FaultClass::kHbmSbeAging);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(std::stod(Attr(f[0], "rate_per_hour")), 30, 3);
}

TEST(GpuDetectCounterTest, BackwardsIsANewBaseline) {
  GpuCounterSeries c;
  auto s = c.Update(7);
  EXPECT_TRUE(s.first);
  EXPECT_EQ(s.delta, 0);
  s = c.Update(10);
  EXPECT_EQ(s.delta, 3);
  EXPECT_FALSE(s.reset);
  s = c.Update(2);
  EXPECT_TRUE(s.reset);
  EXPECT_EQ(s.delta, 0);
  s = c.Update(5);
  EXPECT_EQ(s.delta, 3);
  EXPECT_EQ(c.last(), 5);
}

TEST_F(GpuDetectSbeTest, RisingDailyTrendSaysPlanRma) {
  // 50, 150, 250, 350 SBEs per day: under 20/h every day, but the daily rate rises by
  // ~100/day and reaches the 1000/day limit within the 30-day horizon.
  double total = 0;
  for (int d = 0; d < 4; ++d) {
    const double per_day = 50 + 100 * d;
    for (int s = 0; s < 48; ++s) {
      total += per_day / 48;
      det_->Observe(
          GpuObs(ObsKind::kEccSbe, 5, kT0 + d * kDay + s * 30 * kMin, std::floor(total), {{"counter", "aggregate"}}));
    }
  }
  auto f = Of(*det_, FaultClass::kHbmSbeAging);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kMonitor);
  EXPECT_EQ(Attr(f[0], "plan"), "rma");
  EXPECT_NE(f[0].summary.find("plan RMA"), std::string::npos) << f[0].summary;
  EXPECT_GT(std::stod(Attr(f[0], "trend_per_day")), 50);
  EXPECT_LE(std::stod(Attr(f[0], "days_to_limit")), 30);
}

TEST_F(GpuDetectSbeTest, ThresholdsAreConfigurable) {
  GpuSbeOptions opt;
  opt.rate_per_hour = 1;
  opt.rate_min_count = 1;
  det_ = MakeGpuSbeDetector(opt);
  Feed(0, 0, 2 * kHour, 10 * kMin, [](int64_t t) { return PerHour(2, t); });
  EXPECT_EQ(Of(*det_, FaultClass::kHbmSbeAging).size(), 1u);
}

TEST_F(GpuDetectSbeTest, PerLocationCountersAreNotCountedTwice) {
  for (int i = 0; i < 120; ++i) {
    det_->Observe(GpuObs(ObsKind::kEccSbe, 0, kT0 + i * kMin, i * 10.0,
                         {{"counter", "volatile"}, {"location", "device_memory"}}));
  }
  EXPECT_TRUE(det_->Findings().empty());
}

}  // namespace
}  // namespace faultline
