#include "engine/detect/slowdown.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace faultline {
namespace {

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

// Earliest index from which on at least `fraction` of samples exceed `threshold`.
size_t SlowStart(const std::vector<StepSample>& s, double threshold, double fraction) {
  size_t start = s.size() - 1, above = 0;
  for (size_t j = s.size(); j-- > 0;) {
    const bool slow = s[j].seconds > threshold;
    above += slow ? 1 : 0;
    if (slow && static_cast<double>(above) >= fraction * static_cast<double>(s.size() - j)) start = j;
  }
  return start;
}

std::string JobOf(const Observation& obs) {
  auto it = obs.attrs.find("job");
  return it == obs.attrs.end() ? std::string() : it->second;
}

}  // namespace

std::optional<StepSample> StepSampleOf(const Observation& o) {
  if (!o.value || !std::isfinite(*o.value) || *o.value <= 0) return std::nullopt;
  if (o.kind == ObsKind::kStepTime) return StepSample{o.time_ns, *o.value};
  if (o.kind == ObsKind::kThroughput) return StepSample{o.time_ns, 1.0 / *o.value};
  return std::nullopt;
}

SlowdownVerdict JudgeSamples(std::vector<StepSample> s, const SlowdownOptions& o) {
  std::stable_sort(s.begin(), s.end(), [](const StepSample& a, const StepSample& b) { return a.time_ns < b.time_ns; });
  SlowdownVerdict v;
  v.samples = s.size();
  const size_t recent = std::max<size_t>(1, o.recent_samples);
  if (s.size() < std::max<size_t>(1, o.min_baseline_samples) + recent) return v;
  v.enough_data = true;
  const size_t base_end = std::min(std::max(o.min_baseline_samples, s.size() / 2), s.size() - recent);
  std::vector<double> base, tail;
  for (size_t i = 0; i < base_end; ++i) base.push_back(s[i].seconds);
  for (size_t i = s.size() - recent; i < s.size(); ++i) tail.push_back(s[i].seconds);
  v.baseline_s = Median(base);
  std::vector<double> dev;
  for (double x : base) dev.push_back(std::fabs(x - v.baseline_s));
  const double mad = Median(dev);
  v.recent_s = Median(tail);
  v.threshold_s =
      std::max(v.baseline_s * (1 + o.min_relative_increase), v.baseline_s + o.mad_multiplier * 1.4826 * mad);
  v.ratio = v.recent_s / v.baseline_s;
  v.slow = v.recent_s > v.threshold_s;
  if (v.slow) v.began_ns = s[SlowStart(s, v.threshold_s, o.min_slow_fraction)].time_ns;
  return v;
}

SlowdownVerdict DetectSlowdown(const std::vector<Observation>& series, const SlowdownOptions& o) {
  std::vector<StepSample> samples;
  for (const Observation& obs : series) {
    if (auto s = StepSampleOf(obs)) samples.push_back(*s);
  }
  SlowdownVerdict v = JudgeSamples(std::move(samples), o);
  if (!series.empty()) {
    v.kind = series.front().kind;
    v.job = JobOf(series.front());
  }
  return v;
}

bool WorseSlowdown(const SlowdownVerdict& v, const SlowdownVerdict& best) {
  if (v.slow != best.slow) return v.slow;
  if (v.slow) return v.ratio > best.ratio || (v.ratio == best.ratio && v.began_ns < best.began_ns);
  return v.samples > best.samples;
}

SlowdownVerdict DetectNodeSlowdown(const std::vector<Observation>& observations, const SlowdownOptions& o) {
  std::map<std::pair<std::string, ObsKind>, std::vector<Observation>> groups;
  for (const Observation& obs : observations) {
    if (obs.kind != ObsKind::kStepTime && obs.kind != ObsKind::kThroughput) continue;
    groups[{JobOf(obs), obs.kind}].push_back(obs);
  }
  SlowdownVerdict best;
  for (const auto& [key, series] : groups) {
    SlowdownVerdict v = DetectSlowdown(series, o);
    if (WorseSlowdown(v, best)) best = v;
  }
  return best;
}

}  // namespace faultline
