#include "engine/detect/slowdown.h"

#include <gtest/gtest.h>

#include <random>

#include "core/time.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1764410400LL * kNsPerSec;

Observation Step(int i, double seconds, const std::string& job = "llama") {
  Observation o;
  o.time_ns = kT0 + i * 10 * kNsPerSec;
  o.node = "gpu-node-07";
  o.layer = Layer::kWorkload;
  o.source = Source::kWorkload;
  o.kind = ObsKind::kStepTime;
  o.value = seconds;
  o.seq = static_cast<uint64_t>(i);
  o.attrs["job"] = job;
  return o;
}

// `fast` steps at ~1 s with +-3% deterministic jitter, then `slow` steps at `slow_s`.
std::vector<Observation> Series(int fast, int slow, double slow_s, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(-0.03, 0.03);
  std::vector<Observation> out;
  for (int i = 0; i < fast + slow; ++i) out.push_back(Step(i, (i < fast ? 1.0 : slow_s) * (1 + jitter(rng))));
  return out;
}

TEST(WorkloadSlowdownTest, DetectsASustainedSlowdownAndWhenItBegan) {
  auto v = DetectSlowdown(Series(40, 20, 1.4));
  ASSERT_TRUE(v.enough_data);
  EXPECT_TRUE(v.slow);
  EXPECT_EQ(v.job, "llama");
  EXPECT_NEAR(v.baseline_s, 1.0, 0.03);
  EXPECT_NEAR(v.recent_s, 1.4, 0.05);
  EXPECT_NEAR(v.ratio, 1.4, 0.07);
  EXPECT_EQ(v.began_ns, Step(40, 0).time_ns);
}

TEST(WorkloadSlowdownTest, OrderOfInputDoesNotMatter) {
  auto series = Series(40, 20, 1.4);
  std::reverse(series.begin(), series.end());
  EXPECT_EQ(DetectSlowdown(series).began_ns, Step(40, 0).time_ns);
}

TEST(WorkloadSlowdownTest, SpikesAndNoiseAreNotASlowdown) {
  auto series = Series(60, 0, 1.0);
  for (int i : {5, 17, 33, 58}) series[static_cast<size_t>(i)].value = 3.0;  // checkpoints, GC pauses
  auto v = DetectSlowdown(series);
  EXPECT_TRUE(v.enough_data);
  EXPECT_FALSE(v.slow);
  EXPECT_EQ(v.began_ns, 0);
}

TEST(WorkloadSlowdownTest, SmallDriftBelowTheThresholdIsNotSlow) {
  EXPECT_FALSE(DetectSlowdown(Series(40, 20, 1.08)).slow);
}

TEST(WorkloadSlowdownTest, AnEarlySpikeDoesNotPullTheStartBack) {
  auto series = Series(40, 20, 1.5);
  series[30].value = 2.0;
  EXPECT_EQ(DetectSlowdown(series).began_ns, Step(40, 0).time_ns);
}

TEST(WorkloadSlowdownTest, ThroughputDropCountsAsSlowdown) {
  std::vector<Observation> series;
  for (int i = 0; i < 30; ++i) {
    Observation o = Step(i, 0);
    o.kind = ObsKind::kThroughput;
    o.value = i < 20 ? 1000.0 : 600.0;
    series.push_back(o);
  }
  auto v = DetectSlowdown(series);
  EXPECT_TRUE(v.slow);
  EXPECT_EQ(v.kind, ObsKind::kThroughput);
  EXPECT_NEAR(v.ratio, 1000.0 / 600.0, 1e-9);
  EXPECT_EQ(v.began_ns, Step(20, 0).time_ns);
}

TEST(WorkloadSlowdownTest, TooFewSamplesSaysSo) {
  auto v = DetectSlowdown(Series(5, 5, 2.0));
  EXPECT_FALSE(v.enough_data);
  EXPECT_FALSE(v.slow);
  EXPECT_EQ(v.samples, 10u);
}

TEST(WorkloadSlowdownTest, BadValuesAreSkipped) {
  auto series = Series(40, 20, 1.4);
  series[3].value.reset();
  series[4].value = -1;
  series[5].value = std::numeric_limits<double>::quiet_NaN();
  auto v = DetectSlowdown(series);
  EXPECT_EQ(v.samples, 57u);
  EXPECT_TRUE(v.slow);
}

TEST(WorkloadSlowdownTest, DegenerateOptionsAndInputsDoNotCrash) {
  EXPECT_FALSE(DetectSlowdown({}).enough_data);
  EXPECT_FALSE(DetectNodeSlowdown({}).enough_data);
  SlowdownOptions o;
  o.min_baseline_samples = 0;
  o.recent_samples = 0;
  auto v = DetectSlowdown({Step(0, 1.0), Step(1, 2.0)}, o);
  EXPECT_TRUE(v.slow);
  EXPECT_EQ(v.began_ns, Step(1, 0).time_ns);
}

TEST(WorkloadSlowdownTest, NodeVerdictPicksTheSlowJob) {
  std::vector<Observation> all = Series(40, 0, 1.0);
  for (Observation o : Series(30, 20, 2.0, 9)) {
    o.attrs["job"] = "bert";
    o.time_ns += 5 * kNsPerSec;
    all.push_back(o);
  }
  Observation unrelated = Step(0, 100);
  unrelated.kind = ObsKind::kTemperature;
  all.push_back(unrelated);
  auto v = DetectNodeSlowdown(all);
  EXPECT_TRUE(v.slow);
  EXPECT_EQ(v.job, "bert");
  EXPECT_EQ(v.began_ns, Step(30, 0).time_ns + 5 * kNsPerSec);
  auto calm = DetectNodeSlowdown(Series(40, 0, 1.0));
  EXPECT_TRUE(calm.enough_data);
  EXPECT_FALSE(calm.slow);
}

}  // namespace
}  // namespace faultline
