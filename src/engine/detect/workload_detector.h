// Workload detector ("workload"): is the node slow relative to its own recent past?
// Reads the jobs' step times and throughput (layer workload, kinds step_time and
// throughput, any source) and judges each (job, kind) series with JudgeSamples
// (slowdown.h). While the worst series (WorseSlowdown) is slow it reports one finding:
//   layer workload, class workload_imbalance (the isolator's convention for "slow
//   steps": a symptom that a lower-layer cause may explain), component host,
//   severity warning, action notify_user, attrs symptom=true plus job / kind /
//   baseline_s / recent_s / ratio / threshold_s, first_ns = when the slowdown began,
//   last_ns = the series' latest sample, count = the slow samples since then.
// With no series slow there is no finding: "slow" is measured, never guessed.
//
// Memory is bounded: per series the samples of the last window_ns (before the series'
// newest sample) and at most max_samples_per_series of them; at most max_series series
// (later ones are ignored). Not thread-safe (see detector.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/detect/detector.h"
#include "engine/detect/slowdown.h"

namespace faultline {

struct WorkloadOptions {
  SlowdownOptions slowdown;
  // How far back a series is judged: the agent passes its isolator window, so the
  // baseline is the first half of that window. 0 = every sample given (offline and
  // why-slow: the question's window), up to the caps below.
  int64_t window_ns = 0;
  size_t max_samples_per_series = 50'000;
  size_t max_series = 64;
};

class WorkloadDetector final : public Detector {
 public:
  explicit WorkloadDetector(WorkloadOptions options = {});

  std::string_view name() const override { return "workload"; }
  void Observe(const Observation& obs) override;
  std::vector<Finding> Findings() const override;
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  struct Series {
    std::deque<StepSample> samples;  // arrival order (sources deliver in time order)
    Observation latest;              // the newest report, quoted as evidence
  };
  WorkloadOptions options_;
  std::map<std::pair<std::string, ObsKind>, Series> series_;  // by (job, kind)
  uint64_t revision_ = 0;
};

std::unique_ptr<Detector> MakeWorkloadDetector(const WorkloadOptions& options = {});

}  // namespace faultline
