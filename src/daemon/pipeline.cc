#include "daemon/pipeline.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "engine/detect/all_detectors.h"
#include "engine/detect/critical.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {


bool SameGpus(const std::vector<GpuIdentity>& a, const std::vector<GpuIdentity>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const GpuIdentity& x, const GpuIdentity& y) {
    return x.index == y.index && x.uuid == y.uuid && x.serial == y.serial && x.bdf == y.bdf && x.name == y.name;
  });
}

// The latest window start that leaves `input` as it is: past it, a finding, reading or
// report ages out of the window, or a layer stops counting as having data (the same
// tests as Evaluate's, BuildIsolateInput's and IsolateContext::Forget's: kept while
// its time >= the window's start; a finding with no time stays).
// A layer already out of the window (a kernel log silent since boot) cannot leave it:
// counted, it would expire every answer at once and the isolator would run at every
// evaluation.
int64_t EarliestExpiry(const IsolateInput& input, const std::map<Layer, int64_t>& layer_last_seen, int64_t since_ns) {
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (const Finding& f : input.findings) {
    if (f.first_ns != 0) earliest = std::min(earliest, std::max(f.first_ns, f.last_ns));
    if (f.last_ns != 0) earliest = std::min(earliest, f.last_ns);
  }
  for (const Observation& o : input.observations) earliest = std::min(earliest, o.time_ns);
  for (const auto& [layer, last] : layer_last_seen) {
    if (last >= since_ns) earliest = std::min(earliest, last);
  }
  return earliest;
}

std::string DiagnosisSignature(const Diagnosis& d) {
  return std::string(ToString(d.fault_class)) + "|" + d.component.Id() + "|" + std::string(ToString(d.action)) + "|" +
         std::string(ToString(d.severity));
}

}  // namespace

std::string FindingKey(const Finding& f) {
  std::string key;
  auto field = [&key](std::string_view s) {
    key += std::to_string(s.size());
    key += ':';
    key += s;
  };
  field(ToString(f.layer));
  field(ToString(f.fault_class));
  field(f.component.Id());
  if (!f.key.empty()) {  // the detector's own identity of the event: nothing else needed
    field("key");
    field(f.key);
    return key;
  }
  field(std::to_string(f.first_ns));
  if (!f.evidence.empty()) {
    const Evidence& e = f.evidence.front();
    field(ToString(e.source));
    field(std::to_string(e.time_ns));
    field(e.mono_us ? std::to_string(*e.mono_us) : std::string("-"));
    field(e.component);
    field(e.text);
  }
  return key;
}

PipelineOptions PipelineOptionsFor(const AgentConfig& config) {
  PipelineOptions o;
  o.window_ns = config.isolate.window_ns;
  o.store_unchanged_heartbeat_ns = config.agent.store_every_sample ? 0 : config.agent.store_unchanged_heartbeat_ns;
  o.store_deadband = config.agent.store_deadband;
  o.event_horizon_ns = config.agent.detector_horizon_ns;
  return o;
}

Pipeline::Pipeline(Store& store, std::string node, PipelineOptions options, const Topology* topology)
    : store_(store),
      node_(std::move(node)),
      options_(options),
      context_(Inventory{}, IsolateContextOptions{.max_workload = options.max_recent_observations}),
      detectors_(MakeAllDetectors(
          {.topology = topology, .inventory = &context_.inventory(), .history_ns = options.window_ns,
           .event_horizon_ns = options.event_horizon_ns > 0 ? std::max(options.event_horizon_ns, options.window_ns)
                                                            : 0})),
      caches_(detectors_.size()) {
  if (options_.store_unchanged_heartbeat_ns > 0) {
    ChangeFilterOptions fo{.heartbeat_ns = options_.store_unchanged_heartbeat_ns};
    if (!options_.store_deadband) fo.deadbands.clear();
    filter_ = std::make_unique<ChangeFilter>(std::move(fo));
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
  // A truncated answer holds the window's oldest rows, not each series' last stored
  // point: priming from it could hide a change, so the filter then starts empty.
  const bool complete = q.limit == 0 || observations->rows.size() < q.limit;
  if (filter_ != nullptr && complete) {
    for (const auto& row : observations->rows) filter_->Prime(row.value);
  }
  for (auto& row : observations->rows) Feed(std::move(row.value));  // last use of the rows
  RecordQuery rq;
  rq.node = node_;
  rq.since_ns = q.since_ns;
  rq.limit = 0;
  auto findings = store_.ListFindings(rq);
  if (!findings.ok()) return findings.status();
  for (const auto& row : findings->rows) stored_findings_[FindingKey(row.value)] = Remembered(row.value);
  // The newest stored diagnosis whatever its time: a "none" diagnosis has no time span,
  // so a window query would miss it and a restart would store it again.
  auto latest = store_.LatestDiagnosis(node_);
  if (!latest.ok()) return latest.status();
  if (latest->has_value()) stored_primary_ = DiagnosisSignature((*latest)->value);
  return Status::Ok();
}

Result<AppendStats> Pipeline::Ingest(Layer layer, SourceBatch batch) { return TryIngest(layer, batch); }

Result<AppendStats> Pipeline::TryIngest(Layer layer, SourceBatch& batch, size_t* critical) {
  std::lock_guard<std::mutex> lock(mu_);
  if (critical != nullptr) *critical = 0;
  for (Observation& o : batch.observations) {
    if (o.node.empty()) o.node = node_;
  }
  if (batch.observations.empty() && batch.cursors.empty()) return AppendStats{};
  // Time order before the filter too: it judges each series' heartbeat by time. A poll's
  // readings share one time: checked first, a sort of a thousand observations is saved.
  auto by_time = [](const Observation& a, const Observation& b) { return a.time_ns < b.time_ns; };
  if (!std::is_sorted(batch.observations.begin(), batch.observations.end(), by_time)) {
    std::stable_sort(batch.observations.begin(), batch.observations.end(), by_time);
  }
  auto stats = StoreBatch(batch);
  if (!stats.ok()) return stats;
  // A pure duplicate is a fact the store already had, so the detectors already saw it
  // (live, or replayed by the warm start): fed again it would be counted twice (an
  // identical copy of a log read after a restart re-stored every finding with double
  // counts).
  const std::vector<size_t>& known = stats->duplicate_indexes;  // ascending
  for (size_t i = 0, k = 0; i < batch.observations.size(); ++i) {
    if (k < known.size() && known[k] == i) {
      ++k;
      continue;
    }
    if (critical != nullptr && IsCritical(batch.observations[i])) ++*critical;
    Feed(std::move(batch.observations[i]));
  }
  // The source's own layer had data even when its readings are filed under another
  // (NVML's NVLink/PCIe readings are fabric-layer).
  if (!batch.observations.empty()) NoteLayer(layer, batch.observations.back().time_ns);
  return stats;
}

Result<AppendStats> Pipeline::StoreBatch(const SourceBatch& batch) {
  if (filter_ == nullptr) return store_.Append(batch.observations, batch.cursors);
  std::vector<Observation> kept;
  std::vector<size_t> kept_at;    // the batch position of each kept observation
  std::vector<Observation> seen;  // unchanged: only their series' last-seen time moves
  for (size_t i = 0; i < batch.observations.size(); ++i) {
    const StoreDecision d = filter_->Decide(batch.observations[i]);
    if (d == StoreDecision::kSeen) seen.push_back(batch.observations[i]);
    if (d != StoreDecision::kStore) continue;
    kept.push_back(batch.observations[i]);
    kept_at.push_back(i);
  }
  if (kept.empty() && seen.empty() && batch.cursors.empty()) {
    stats_.observations_unchanged += batch.observations.size();
    return AppendStats{};
  }
  auto stats = store_.Append(kept, batch.cursors, seen);
  if (!stats.ok()) {
    // Not stored after all: their series must not count them as their last stored point.
    for (const Observation& o : kept) filter_->Forget(o);
    for (const Observation& o : seen) filter_->Forget(o);
    return stats;
  }
  stats_.observations_unchanged += batch.observations.size() - kept.size();
  for (size_t& i : stats->duplicate_indexes) i = kept_at[i];  // positions in the batch, still ascending
  return stats;
}

PipelineStats Pipeline::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Pipeline::Feed(Observation obs) {
  context_.Learn(obs);  // first: the detectors read the inventory it fills
  for (auto& d : detectors_) d->Observe(obs);
  NoteLayer(obs.layer, obs.time_ns);
  // The isolator reads readings only to quote them in its ruled-out layers (its findings
  // and layers with data decide): a reading new, changed or only newer moves quotes, not
  // conclusions, so it is refreshed at most every isolate_refresh_ns.
  if (context_.Keep(std::move(obs))) ++quotes_moved_;
}

void Pipeline::NoteLayer(Layer layer, int64_t time_ns) {
  auto [it, added] = layer_last_seen_ns_.try_emplace(layer, time_ns);
  if (added) {
    ++news_;
    return;
  }
  // A layer silent past the last isolation's window and heard again is news; one still in
  // the window already counted as having data.
  if (it->second < last_isolation_.since_ns && time_ns > it->second) ++news_;
  it->second = std::max(it->second, time_ns);
}

IsolateInput Pipeline::BuildInput(std::vector<Finding> findings, int64_t now_ns) const {
  IsolateInputParts parts = context_.Parts();
  parts.findings = std::move(findings);
  // Open at the end: a BMC clock running ahead dates readings after now.
  parts.window = {.since_ns = now_ns - options_.window_ns, .until_ns = 0};
  for (const auto& [layer, last] : layer_last_seen_ns_) {
    if (last >= parts.window.since_ns) parts.layers_with_data.insert(layer);
  }
  return BuildIsolateInput(std::move(parts));
}

bool Pipeline::RefreshFindings() {
  // The kernel detector reads the shared inventory at Findings(): a change to it
  // (a GPU's index learnt) renames components, so every cache starts over.
  const bool inventory_moved = !SameGpus(context_.inventory().gpus(), cache_inventory_);
  if (inventory_moved) cache_inventory_ = context_.inventory().gpus();
  bool moved = false;
  for (size_t i = 0; i < detectors_.size(); ++i) {
    DetectorCache& c = caches_[i];
    const std::optional<uint64_t> revision = detectors_[i]->Revision();
    const bool reuse = options_.reuse_unchanged_findings && c.valid && !inventory_moved && revision.has_value() &&
                       revision == c.revision;
    if (reuse) {
      ++stats_.detector_reuses;
      continue;
    }
    ++stats_.detector_recomputations;
    ++stats_.recomputations_by_detector[std::string(detectors_[i]->name())];
    std::vector<Finding> fresh = detectors_[i]->Findings();
    c.revision = revision;
    // Asked because a reading reached it (every poll of an idle node), a detector mostly
    // answers what it did before: then its keys, its comparison with the store and the
    // isolator's answer all stand.
    if (options_.reuse_unchanged_findings && c.valid && !inventory_moved && fresh == c.findings) continue;
    c.findings = std::move(fresh);
    c.valid = true;
    c.stored = false;
    c.keys.clear();
    c.ordinals.clear();
    moved = true;
  }
  return moved;
}

std::vector<Finding> Pipeline::AllFindings() const {
  size_t n = 0;
  for (const DetectorCache& c : caches_) n += c.findings.size();
  std::vector<Finding> all;
  all.reserve(n);
  for (const DetectorCache& c : caches_) all.insert(all.end(), c.findings.begin(), c.findings.end());
  return all;
}

Result<size_t> Pipeline::StoreFindings() {
  // Keys: FindingKey, and for two findings identical down to it an ordinal in detector
  // order (detectors are deterministic), so neither overwrites the other every time.
  // Unchanged detectors keep their keys; recounting the ordinals is cheap next to
  // building findings, and a key that moved (another detector's finding took its
  // ordinal) sends that detector's findings to the comparison again.
  std::unordered_map<std::string_view, int> keys_seen;  // views into the caches' keys
  size_t stored = 0;
  bool compared = false;
  for (DetectorCache& c : caches_) {
    if (c.keys.size() != c.findings.size()) {
      c.keys.clear();
      c.keys.reserve(c.findings.size());
      for (const Finding& f : c.findings) c.keys.push_back(FindingKey(f));
    }
    std::vector<int> ordinals(c.keys.size());
    for (size_t j = 0; j < c.keys.size(); ++j) ordinals[j] = keys_seen[c.keys[j]]++;
    if (c.stored && ordinals == c.ordinals) continue;  // compared already, under the same keys
    c.stored = false;
    c.ordinals = std::move(ordinals);
    for (size_t j = 0; j < c.findings.size(); ++j) {
      ++stats_.findings_compared;
      const Finding& f = c.findings[j];
      std::string key = c.StoredKey(j);
      auto it = stored_findings_.find(key);
      if (it != stored_findings_.end() && it->second.SameAs(f)) continue;
      auto id = store_.PutFinding(node_, f);
      if (!id.ok()) return id.status();  // this detector is compared again next time
      stored_findings_[std::move(key)] = Remembered(f);
      ++stored;
    }
    c.stored = true;
    compared = true;
  }
  if (compared) ForgetUnreported();
  stats_.findings_remembered = stored_findings_.size();
  return stored;
}

std::string Pipeline::DetectorCache::StoredKey(size_t j) const {
  return ordinals[j] > 0 ? keys[j] + "#" + std::to_string(ordinals[j]) : keys[j];
}

// A finding is re-stored only when something a reader would act on changed.
bool Pipeline::StoredFinding::SameAs(const Finding& f) const {
  return last_ns == f.last_ns && count == f.count && severity == f.severity && action == f.action &&
         confidence == f.confidence && attrs == f.attrs;
}

Pipeline::StoredFinding Pipeline::Remembered(const Finding& f) {
  return {.last_ns = f.last_ns,
          .count = f.count,
          .severity = f.severity,
          .action = f.action,
          .confidence = f.confidence,
          .attrs = f.attrs};
}

void Pipeline::ForgetUnreported() {
  // A finding no detector reports any more (its state aged out or was evicted, or a
  // stored one from before a restart that the replay did not re-derive) has nothing to
  // be compared with: kept, the map would grow with every finding the node ever had.
  std::set<std::string, std::less<>> reported;
  for (const DetectorCache& c : caches_) {
    for (size_t j = 0; j < c.keys.size() && j < c.ordinals.size(); ++j) reported.insert(c.StoredKey(j));
  }
  std::erase_if(stored_findings_, [&reported](const auto& entry) { return !reported.contains(entry.first); });
}

Result<EvaluateResult> Pipeline::Evaluate(int64_t now_ns, EvaluateOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t since = now_ns - options_.window_ns;
  context_.Forget(since);
  EvaluateResult result;
  const bool findings_moved = RefreshFindings();
  auto stored = StoreFindings();
  if (!stored.ok()) return stored.status();
  result.findings_stored = *stored;
  const LastIsolation& last = last_isolation_;
  const bool fresh_enough = last.quotes_moved == quotes_moved_ || now_ns - last.now_ns < options_.isolate_refresh_ns;
  if (options_.reuse_unchanged_findings && last.valid && !findings_moved && last.news == news_ && fresh_enough &&
      now_ns >= last.now_ns && since <= last.expires_ns) {
    ++stats_.isolations_skipped;
    result.diagnoses = last.diagnoses;
  } else {
    std::vector<Finding> findings = AllFindings();
    std::erase_if(findings, [since](const Finding& f) { return f.last_ns != 0 && f.last_ns < since; });
    const IsolateInput input = BuildInput(std::move(findings), now_ns);
    result.diagnoses = Isolate(input, options_.isolate);
    last_isolation_ = {.valid = true,
                       .news = news_,
                       .quotes_moved = quotes_moved_,
                       .now_ns = now_ns,
                       .since_ns = since,
                       .expires_ns = EarliestExpiry(input, layer_last_seen_ns_, since),
                       .diagnoses = result.diagnoses};
  }
  if (Status st = StorePrimary(result, now_ns, options); !st.ok()) return st;
  return result;
}

Status Pipeline::StorePrimary(EvaluateResult& result, int64_t now_ns, EvaluateOptions options) {
  if (result.diagnoses.empty()) return Status::Ok();
  const Diagnosis& primary = result.diagnoses.front();
  const std::string signature = DiagnosisSignature(primary);
  if (signature == stored_primary_) return Status::Ok();
  // stored_primary_ stays the last one stored, so "none" is stored once a source sees again.
  if (primary.fault_class == FaultClass::kNone && !options.may_store_none) {
    result.none_withheld = true;
    return Status::Ok();
  }
  auto id = store_.PutDiagnosis(node_, primary, now_ns);
  if (!id.ok()) return id.status();
  stored_primary_ = signature;
  result.diagnosis_stored = true;
  result.diagnosis_id = *id;
  return Status::Ok();
}

}  // namespace faultline::daemon
