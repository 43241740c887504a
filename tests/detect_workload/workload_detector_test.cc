// The workload detector: a slowdown finding while a job's steps are slow against its own
// past, none otherwise; bounded history; the isolator's conventions for "slow steps".
#include "engine/detect/workload_detector.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1764410400LL * kNsPerSec;

Observation Report(int i, double value, const std::string& job = "llama", ObsKind kind = ObsKind::kStepTime) {
  Observation o;
  o.time_ns = kT0 + i * 10 * kNsPerSec;
  o.layer = Layer::kWorkload;
  o.source = Source::kWorkload;
  o.component = HostComponent();
  o.kind = kind;
  o.value = value;
  o.raw = "{\"job\":\"" + job + "\",\"step\":" + std::to_string(i) + "}";
  if (!job.empty()) o.attrs["job"] = job;
  return o;
}

void Feed(WorkloadDetector& d, int from, int to, double seconds, const std::string& job = "llama") {
  for (int i = from; i < to; ++i) d.Observe(Report(i, seconds, job));
}

TEST(WorkloadDetectorTest, SlowStepsAreOneWorkloadFindingFromWhenTheyBegan) {
  WorkloadDetector d;
  Feed(d, 0, 20, 1.0);
  Feed(d, 20, 35, 1.6);
  const std::vector<Finding> findings = d.Findings();
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.layer, Layer::kWorkload);
  EXPECT_EQ(f.fault_class, FaultClass::kWorkloadImbalance);
  EXPECT_EQ(f.component.type, ComponentType::kHost);
  EXPECT_EQ(f.first_ns, Report(20, 0).time_ns);
  EXPECT_EQ(f.last_ns, Report(34, 0).time_ns);
  EXPECT_EQ(f.count, 15u);
  EXPECT_EQ(f.attrs.at("symptom"), "true");
  EXPECT_EQ(f.attrs.at("job"), "llama");
  EXPECT_NE(f.summary.find("+60%"), std::string::npos) << f.summary;
  ASSERT_FALSE(f.evidence.empty());
  EXPECT_EQ(f.evidence.back().text, Report(34, 0).raw);  // the latest report, quoted
  // More slow steps extend the same finding: same start, same first evidence line (the
  // agent keys a stored finding by them), a later end.
  Feed(d, 35, 40, 1.7);
  const std::vector<Finding> later = d.Findings();
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].first_ns, f.first_ns);
  EXPECT_EQ(later[0].evidence.front(), f.evidence.front());
  EXPECT_EQ(later[0].last_ns, Report(39, 0).time_ns);
  EXPECT_NE(later[0].summary, f.summary);
}

TEST(WorkloadDetectorTest, SteadyOrTooFewStepsGiveNoFinding) {
  WorkloadDetector steady;
  Feed(steady, 0, 40, 1.0);
  EXPECT_TRUE(steady.Findings().empty());
  WorkloadDetector few;
  Feed(few, 0, 3, 1.0);
  Feed(few, 3, 6, 5.0);
  EXPECT_TRUE(few.Findings().empty());  // not enough baseline to call anything slow
  EXPECT_TRUE(WorkloadDetector().Findings().empty());
}

TEST(WorkloadDetectorTest, IgnoresOtherLayersKindsAndNonsenseValues) {
  WorkloadDetector d;
  Feed(d, 0, 20, 1.0);
  for (int i = 20; i < 35; ++i) {
    Observation gpu = Report(i, 9.0);
    gpu.layer = Layer::kGpu;  // a GPU reading that happens to carry a step-time kind
    d.Observe(gpu);
    Observation temp = Report(i, 90.0);
    temp.kind = ObsKind::kTemperature;
    d.Observe(temp);
    d.Observe(Report(i, -1.0));
    d.Observe(Report(i, std::numeric_limits<double>::infinity()));
    d.Observe(Report(i, std::numeric_limits<double>::quiet_NaN()));
  }
  EXPECT_TRUE(d.Findings().empty());
}

TEST(WorkloadDetectorTest, ThroughputDropCountsAsSlowSteps) {
  WorkloadDetector d;
  for (int i = 0; i < 20; ++i) d.Observe(Report(i, 1000.0, "bert", ObsKind::kThroughput));
  for (int i = 20; i < 32; ++i) d.Observe(Report(i, 500.0, "bert", ObsKind::kThroughput));
  const std::vector<Finding> findings = d.Findings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].attrs.at("kind"), "throughput");
  EXPECT_EQ(findings[0].first_ns, Report(20, 0).time_ns);
}

TEST(WorkloadDetectorTest, TheWorstJobSpeaksForTheNode) {
  WorkloadDetector d;
  Feed(d, 0, 40, 1.0, "calm");
  Feed(d, 0, 20, 1.0, "slow");
  Feed(d, 20, 35, 2.0, "slow");
  Feed(d, 0, 20, 1.0, "slower-but-short");
  const std::vector<Finding> findings = d.Findings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].attrs.at("job"), "slow");
}

TEST(WorkloadDetectorTest, WindowForgetsAnOldSlowdownOnceTheNewNormalFillsIt) {
  // With a 5-minute history (30 samples), ten minutes of steady slow steps are the baseline.
  WorkloadOptions options;
  options.window_ns = 5 * 60 * kNsPerSec;
  WorkloadDetector windowed(options);
  WorkloadDetector whole;
  for (WorkloadDetector* d : {&windowed, &whole}) {
    Feed(*d, 0, 100, 1.0);
    Feed(*d, 100, 160, 1.8);
  }
  EXPECT_TRUE(windowed.Findings().empty());
  EXPECT_FALSE(whole.Findings().empty());  // 0 = judged over everything it was given
}

TEST(WorkloadDetectorTest, HistoryAndSeriesAreBounded) {
  WorkloadOptions options;
  options.max_samples_per_series = 16;
  options.max_series = 2;
  WorkloadDetector d(options);
  // Many job names: only the first two series are kept, so none of the later ones, all
  // slow from their first step, can be judged at all.
  Feed(d, 0, 20, 1.0, "a");
  Feed(d, 0, 20, 1.0, "b");
  for (int j = 0; j < 100; ++j) {
    Feed(d, 0, 10, 1.0, "flood" + std::to_string(j));
    Feed(d, 10, 20, 9.0, "flood" + std::to_string(j));
  }
  EXPECT_TRUE(d.Findings().empty());
  // The per-series cap keeps the newest samples: 16 slow ones are a new, calm baseline.
  Feed(d, 20, 60, 3.0, "a");
  EXPECT_TRUE(d.Findings().empty());
}

}  // namespace
}  // namespace faultline
