#include "daemon/pipeline.h"

#include <algorithm>

#include "engine/detect/fabric_detectors.h"
#include "engine/detect/gpu_detectors.h"
#include "engine/detect/kernel_detector.h"
#include "engine/detect/oob_detectors.h"
#include "sources/workload/slowdown.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {

std::vector<std::unique_ptr<Detector>> MakeAllDetectors(const Topology* topology) {
  std::vector<std::unique_ptr<Detector>> all;
  all.push_back(std::make_unique<KernelDetector>());
  auto add = [&all](std::vector<std::unique_ptr<Detector>> more) {
    for (auto& d : more) all.push_back(std::move(d));
  };
  add(MakeGpuDetectors());
  add(MakeOobDetectors());
  add(MakeFabricDetectors(FabricOptions{}, topology));
  return all;
}

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

Pipeline::Pipeline(Store& store, std::string node, PipelineOptions options, const Topology* topology)
    : store_(store), node_(std::move(node)), options_(options), detectors_(MakeAllDetectors(topology)) {}

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
  auto stats = store_.Append(batch.observations, batch.cursors);
  if (!stats.ok()) return stats;
  std::stable_sort(batch.observations.begin(), batch.observations.end(),
                   [](const Observation& a, const Observation& b) { return a.time_ns < b.time_ns; });
  for (const Observation& o : batch.observations) Feed(o);
  // The source's own layer had data even when its readings are filed under another
  // (NVML's NVLink/PCIe readings are fabric-layer).
  if (!batch.observations.empty()) {
    int64_t& seen = layer_last_seen_ns_[layer];
    seen = std::max(seen, batch.observations.back().time_ns);
  }
  return stats;
}

void Pipeline::Feed(const Observation& obs) {
  for (auto& d : detectors_) d->Observe(obs);
  layer_last_seen_ns_[obs.layer] = std::max(layer_last_seen_ns_[obs.layer], obs.time_ns);
  recent_.push_back(obs);
  while (recent_.size() > options_.max_recent_observations) recent_.pop_front();
}

IsolateInput Pipeline::BuildInput(std::vector<Finding> findings, int64_t now_ns) const {
  const int64_t since = now_ns - options_.window_ns;
  IsolateInput in;
  in.findings = std::move(findings);
  std::vector<Observation> workload;
  for (const Observation& o : recent_) {
    if (o.time_ns < since) continue;
    in.observations.push_back(o);
    if (o.layer == Layer::kWorkload) workload.push_back(o);
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
  while (!recent_.empty() && recent_.front().time_ns < since) recent_.pop_front();
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
