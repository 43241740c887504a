#include "daemon/pipeline.h"

#include <algorithm>

#include "engine/offline/offline.h"
#include "sources/workload/slowdown.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {

// A finding is re-stored only when something a reader would act on changed.
bool SameForStorage(const Finding& a, const Finding& b) {
  return a.last_ns == b.last_ns && a.count == b.count && a.severity == b.severity && a.action == b.action &&
         a.confidence == b.confidence && a.attrs == b.attrs;
}

std::string DiagnosisSignature(const Diagnosis& d) {
  return std::string(ToString(d.fault_class)) + "|" + d.component.Id() + "|" + std::string(ToString(d.action)) + "|" +
         std::string(ToString(d.severity));
}

}  // namespace

std::string FindingKey(const Finding& f) {
  return std::string(ToString(f.layer)) + "|" + std::string(ToString(f.fault_class)) + "|" + f.component.Id() + "|" +
         std::to_string(f.first_ns);
}

PipelineOptions PipelineOptionsFor(const AgentConfig& config) {
  PipelineOptions o;
  o.window_ns = config.isolate.window_ns;
  o.store_unchanged_heartbeat_ns = config.agent.store_every_sample ? 0 : config.agent.store_unchanged_heartbeat_ns;
  return o;
}

Pipeline::Pipeline(Store& store, std::string node, PipelineOptions options, const Topology* topology)
    : store_(store), node_(std::move(node)), options_(options), detectors_(MakeAllDetectors(topology)) {
  if (options_.store_unchanged_heartbeat_ns > 0) {
    filter_ =
        std::make_unique<ChangeFilter>(ChangeFilterOptions{.heartbeat_ns = options_.store_unchanged_heartbeat_ns});
  }
}

Pipeline::~Pipeline() = default;

Status Pipeline::WarmStart(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  ObservationQuery q;
  q.node = node_;
  q.since_ns = now_ns - options_.window_ns;
  q.limit = options_.max_recent_observations;
  auto observations = store_.QueryObservations(q);
  if (!observations.ok()) return observations.status();
  for (const auto& row : observations->rows) Feed(row.value);
  // A truncated answer holds the window's oldest rows, not each series' last stored
  // point: priming from it could hide a change, so the filter then starts empty.
  const bool complete = q.limit == 0 || observations->rows.size() < q.limit;
  if (filter_ != nullptr && complete) {
    for (const auto& row : observations->rows) filter_->Prime(row.value);
  }
  RecordQuery rq;
  rq.node = node_;
  rq.since_ns = q.since_ns;
  rq.limit = 0;
  auto findings = store_.ListFindings(rq);
  if (!findings.ok()) return findings.status();
  for (const auto& row : findings->rows) stored_findings_[FindingKey(row.value)] = row.value;
  auto diagnoses = store_.ListDiagnoses(rq);
  if (!diagnoses.ok()) return diagnoses.status();
  if (!diagnoses->rows.empty()) stored_primary_ = DiagnosisSignature(diagnoses->rows.back().value);
  return Status::Ok();
}

Result<AppendStats> Pipeline::Ingest(Layer layer, SourceBatch batch) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Observation& o : batch.observations) {
    if (o.node.empty()) o.node = node_;
  }
  if (batch.observations.empty() && batch.cursors.empty()) return AppendStats{};
  // Time order before the filter too: it judges each series' heartbeat by time.
  std::stable_sort(batch.observations.begin(), batch.observations.end(),
                   [](const Observation& a, const Observation& b) { return a.time_ns < b.time_ns; });
  auto stats = StoreBatch(batch);
  if (!stats.ok()) return stats;
  for (const Observation& o : batch.observations) Feed(o);
  // The source's own layer had data even when its readings are filed under another
  // (NVML's NVLink/PCIe readings are fabric-layer).
  if (!batch.observations.empty()) {
    int64_t& seen = layer_last_seen_ns_[layer];
    seen = std::max(seen, batch.observations.back().time_ns);
  }
  return stats;
}

Result<AppendStats> Pipeline::StoreBatch(const SourceBatch& batch) {
  if (filter_ == nullptr) return store_.Append(batch.observations, batch.cursors);
  std::vector<Observation> kept;
  for (const Observation& o : batch.observations) {
    if (filter_->Keep(o)) kept.push_back(o);
  }
  if (kept.empty() && batch.cursors.empty()) {
    stats_.observations_unchanged += batch.observations.size();
    return AppendStats{};
  }
  auto stats = store_.Append(kept, batch.cursors);
  if (!stats.ok()) {
    // Not stored after all: their series must not count them as their last stored point.
    for (const Observation& o : kept) filter_->Forget(o);
    return stats;
  }
  stats_.observations_unchanged += batch.observations.size() - kept.size();
  return stats;
}

PipelineStats Pipeline::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Pipeline::Feed(const Observation& obs) {
  for (auto& d : detectors_) d->Observe(obs);
  layer_last_seen_ns_[obs.layer] = std::max(layer_last_seen_ns_[obs.layer], obs.time_ns);
  if (obs.layer == Layer::kWorkload) {
    workload_.push_back(obs);
    while (workload_.size() > options_.max_recent_observations) workload_.pop_front();
    return;
  }
  Observation& slot = latest_[{obs.component.Id(), obs.kind}];
  if (slot.time_ns <= obs.time_ns) slot = obs;
}

IsolateInput Pipeline::BuildInput(std::vector<Finding> findings, int64_t now_ns) const {
  const int64_t since = now_ns - options_.window_ns;
  IsolateInput in;
  in.findings = std::move(findings);
  for (const auto& [key, o] : latest_) {
    if (o.time_ns >= since) in.observations.push_back(o);
  }
  std::vector<Observation> workload;
  for (const Observation& o : workload_) {
    if (o.time_ns < since) continue;
    in.observations.push_back(o);
    workload.push_back(o);
  }
  for (const auto& [layer, last] : layer_last_seen_ns_) {
    if (last >= since) in.layers_with_data.insert(layer);
  }
  for (const Finding& f : in.findings) in.layers_with_data.insert(f.layer);
  // "Slow" is measured from the jobs' own step times, never guessed.
  const SlowdownVerdict slow = DetectNodeSlowdown(workload);
  if (slow.slow) {
    in.slowdown_reported = true;
    in.symptom_ns = slow.began_ns;
  }
  return in;
}

Result<EvaluateResult> Pipeline::Evaluate(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t since = now_ns - options_.window_ns;
  while (!workload_.empty() && workload_.front().time_ns < since) workload_.pop_front();
  std::erase_if(latest_, [since](const auto& entry) { return entry.second.time_ns < since; });
  EvaluateResult result;
  std::vector<Finding> findings;
  for (const auto& d : detectors_) {
    for (Finding& f : d->Findings()) findings.push_back(std::move(f));
  }
  for (const Finding& f : findings) {
    const std::string key = FindingKey(f);
    auto it = stored_findings_.find(key);
    if (it != stored_findings_.end() && SameForStorage(it->second, f)) continue;
    auto id = store_.PutFinding(node_, f);
    if (!id.ok()) return id.status();
    stored_findings_[key] = f;
    ++result.findings_stored;
  }
  std::erase_if(findings, [since](const Finding& f) { return f.last_ns != 0 && f.last_ns < since; });
  result.diagnoses = Isolate(BuildInput(std::move(findings), now_ns), options_.isolate);
  if (!result.diagnoses.empty()) {
    const std::string signature = DiagnosisSignature(result.diagnoses.front());
    if (signature != stored_primary_) {
      auto id = store_.PutDiagnosis(node_, result.diagnoses.front(), now_ns);
      if (!id.ok()) return id.status();
      stored_primary_ = signature;
      result.diagnosis_stored = true;
    }
  }
  return result;
}

}  // namespace faultline::daemon
