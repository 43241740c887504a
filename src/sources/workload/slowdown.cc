#include "sources/workload/slowdown.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace faultline {
namespace {

struct Sample {
  int64_t time_ns;
  double seconds;
};

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

std::vector<Sample> SecondsPerUnit(const std::vector<Observation>& series) {
  std::vector<Sample> out;
  for (const Observation& o : series) {
    if (!o.value || !std::isfinite(*o.value) || *o.value <= 0) continue;
    if (o.kind == ObsKind::kStepTime) out.push_back({o.time_ns, *o.value});
    if (o.kind == ObsKind::kThroughput) out.push_back({o.time_ns, 1.0 / *o.value});
  }
  std::stable_sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.time_ns < b.time_ns; });
  return out;
}

// Earliest index from which on at least `fraction` of samples exceed `threshold`.
size_t SlowStart(const std::vector<Sample>& s, double threshold, double fraction) {
  size_t start = s.size() - 1, above = 0;
  for (size_t j = s.size(); j-- > 0;) {
    const bool slow = s[j].seconds > threshold;
    above += slow ? 1 : 0;
    if (slow && static_cast<double>(above) >= fraction * static_cast<double>(s.size() - j)) start = j;
  }
  return start;
}

}  // namespace

SlowdownVerdict DetectSlowdown(const std::vector<Observation>& series, const SlowdownOptions& o) {
  SlowdownVerdict v;
  if (!series.empty()) {
    v.kind = series.front().kind;
    auto it = series.front().attrs.find("job");
    if (it != series.front().attrs.end()) v.job = it->second;
  }
  const std::vector<Sample> s = SecondsPerUnit(series);
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

SlowdownVerdict DetectNodeSlowdown(const std::vector<Observation>& observations, const SlowdownOptions& o) {
  std::map<std::pair<std::string, ObsKind>, std::vector<Observation>> groups;
  for (const Observation& obs : observations) {
    if (obs.kind != ObsKind::kStepTime && obs.kind != ObsKind::kThroughput) continue;
    auto it = obs.attrs.find("job");
    groups[{it == obs.attrs.end() ? std::string() : it->second, obs.kind}].push_back(obs);
  }
  SlowdownVerdict best;
  bool have_slow = false;
  for (const auto& [key, series] : groups) {
    SlowdownVerdict v = DetectSlowdown(series, o);
    const bool better =
        v.slow ? (!have_slow || v.ratio > best.ratio || (v.ratio == best.ratio && v.began_ns < best.began_ns))
               : (!have_slow && v.samples > best.samples);
    if (better) best = v;
    have_slow = have_slow || v.slow;
  }
  return best;
}

}  // namespace faultline
