// Is this node slow relative to its own recent past? The arithmetic of the workload
// detector (workload_detector.h), which turns the verdict into a finding.
//
// Per series (one job; step time, or throughput turned into seconds per sample), in
// time order:
//   baseline = the first half of the samples (at least min_baseline_samples, always
//              leaving recent_samples after it): its median B and MAD (robust: a few
//              outliers or a slowdown in the later half do not move it);
//   recent   = median R of the last recent_samples;
//   slow     = R > max(B * (1 + min_relative_increase), B + mad_multiplier * 1.4826 * MAD).
// The slowdown began at the earliest sample above that threshold from which on at
// least min_slow_fraction of the samples are above it (isolated spikes before the real
// change do not pull the start time back). Pass a window that starts well before the
// symptom so the first half is representative.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace faultline {

struct SlowdownOptions {
  size_t min_baseline_samples = 8;
  size_t recent_samples = 5;
  double min_relative_increase = 0.15;  // 15% slower than baseline
  double mad_multiplier = 3.0;          // and beyond the baseline's own noise
  double min_slow_fraction = 0.75;
};

struct SlowdownVerdict {
  bool enough_data = false;
  bool slow = false;
  std::string job;
  ObsKind kind = ObsKind::kStepTime;  // the series judged
  double baseline_s = 0;              // seconds per step (per sample for throughput)
  double recent_s = 0;
  double threshold_s = 0;
  double ratio = 0;      // recent / baseline
  int64_t began_ns = 0;  // when slow
  size_t samples = 0;
};

// One sample of a series in seconds per unit: a step time as is, a throughput inverted.
struct StepSample {
  int64_t time_ns = 0;
  double seconds = 0;
};

// The sample an observation gives: kStepTime and kThroughput with a finite positive
// value; nullopt for anything else.
std::optional<StepSample> StepSampleOf(const Observation& obs);

// One series' samples (any order). The verdict's job and kind are left for the caller.
SlowdownVerdict JudgeSamples(std::vector<StepSample> samples, const SlowdownOptions& options = {});

// One series: kStepTime and kThroughput observations of one job (others ignored;
// non-positive values skipped). Observations need not be sorted.
SlowdownVerdict DetectSlowdown(const std::vector<Observation>& series, const SlowdownOptions& options = {});

// Which of two series' verdicts speaks for the node: a slow one over a calm one, then
// the larger ratio (ties: the earlier start); among calm ones the one with more samples.
bool WorseSlowdown(const SlowdownVerdict& candidate, const SlowdownVerdict& best);

// All workload observations of a node: groups by (attrs["job"], kind), judges each, and
// returns the worst verdict (WorseSlowdown).
SlowdownVerdict DetectNodeSlowdown(const std::vector<Observation>& observations, const SlowdownOptions& options = {});

}  // namespace faultline
