#include "engine/detect/workload_detector.h"

#include <cstdio>
#include <iterator>

namespace faultline {
namespace {

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s);
  return buf;
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f%%", (ratio - 1) * 100);
  return buf;
}

// "job llama step time 1.42 s against a 1.00 s baseline (+42%)".
std::string Summary(const SlowdownVerdict& v) {
  const bool throughput = v.kind == ObsKind::kThroughput;
  const std::string job = v.job.empty() ? "the job" : "job " + v.job;
  return job + (throughput ? " seconds per unit of throughput " : " step time ") + Seconds(v.recent_s) +
         " s against a " + Seconds(v.baseline_s) + " s baseline (" + Percent(v.ratio) + ")";
}

size_t SlowSamplesSince(const std::deque<StepSample>& samples, const SlowdownVerdict& v) {
  size_t n = 0;
  for (const StepSample& s : samples) n += (s.time_ns >= v.began_ns && s.seconds > v.threshold_s) ? 1 : 0;
  return n;
}

Finding SlowdownFinding(const SlowdownVerdict& v, const std::deque<StepSample>& samples, const Observation& latest) {
  Finding f;
  f.layer = Layer::kWorkload;
  f.component = HostComponent();
  f.fault_class = FaultClass::kWorkloadImbalance;
  f.severity = Severity::kWarning;
  f.action = Action::kNotifyUser;
  f.confidence = 0.6;
  f.first_ns = v.began_ns;
  f.last_ns = std::max(v.began_ns, samples.empty() ? v.began_ns : samples.back().time_ns);
  f.count = SlowSamplesSince(samples, v);
  f.summary = Summary(v);
  f.attrs = {{"symptom", "true"},
             {"kind", std::string(ToString(v.kind))},
             {"baseline_s", Seconds(v.baseline_s)},
             {"recent_s", Seconds(v.recent_s)},
             {"threshold_s", Seconds(v.threshold_s)},
             {"ratio", Seconds(v.ratio)}};
  if (!v.job.empty()) f.attrs["job"] = v.job;
  // The first line says only what stays true while the slowdown lasts (the agent keys a
  // stored finding by its first evidence line); the figures are in summary and attrs.
  Evidence began;
  began.time_ns = v.began_ns;
  began.source = Source::kWorkload;
  began.component = f.component.Id();
  began.text = (v.job.empty() ? std::string("the job") : "job " + v.job) + ": " +
               (v.kind == ObsKind::kThroughput ? "throughput" : "step time") + " worse than its baseline from here on";
  f.evidence.push_back(std::move(began));
  f.evidence.push_back(EvidenceFrom(latest));
  return f;
}

}  // namespace

WorkloadDetector::WorkloadDetector(WorkloadOptions options) : options_(options) {}

void WorkloadDetector::Observe(const Observation& obs) {
  if (obs.layer != Layer::kWorkload) return;
  const std::optional<StepSample> sample = StepSampleOf(obs);
  if (!sample) return;
  ++revision_;
  auto job = obs.attrs.find("job");
  const std::pair<std::string, ObsKind> key{job == obs.attrs.end() ? std::string() : job->second, obs.kind};
  auto it = series_.find(key);
  if (it == series_.end()) {
    if (series_.size() >= options_.max_series) return;  // a flood of job names cannot grow memory
    it = series_.emplace(key, Series{}).first;
  }
  Series& s = it->second;
  s.samples.push_back(*sample);
  if (s.latest.time_ns <= obs.time_ns) s.latest = obs;
  const int64_t newest = s.latest.time_ns;
  while (options_.window_ns > 0 && !s.samples.empty() && s.samples.front().time_ns < newest - options_.window_ns) {
    s.samples.pop_front();
  }
  while (s.samples.size() > std::max<size_t>(1, options_.max_samples_per_series)) s.samples.pop_front();
}

std::vector<Finding> WorkloadDetector::Findings() const {
  SlowdownVerdict worst;
  const Series* worst_series = nullptr;
  for (const auto& [key, s] : series_) {
    SlowdownVerdict v = JudgeSamples({s.samples.begin(), s.samples.end()}, options_.slowdown);
    v.job = key.first;
    v.kind = key.second;
    if (worst_series == nullptr || WorseSlowdown(v, worst)) {
      worst = v;
      worst_series = &s;
    }
  }
  if (worst_series == nullptr || !worst.slow) return {};
  return {SlowdownFinding(worst, worst_series->samples, worst_series->latest)};
}

std::unique_ptr<Detector> MakeWorkloadDetector(const WorkloadOptions& options) {
  return std::make_unique<WorkloadDetector>(options);
}

}  // namespace faultline
