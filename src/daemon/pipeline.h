// The agent's data path: source batches -> store (observations + cursors, one
// transaction) -> detectors -> findings (stored when new or changed) -> isolator ->
// diagnosis (stored when the primary changes). Periodic readings equal to their series'
// last stored point are not stored (change_filter.h), but every observation reaches the
// detectors.
//
// Thread-safety: every method takes one internal mutex, so the per-source threads may
// call Ingest concurrently (detectors are not thread-safe; this serialises them).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "daemon/change_filter.h"
#include "daemon/config.h"
#include "daemon/source.h"
#include "engine/detect/detector.h"
#include "engine/isolate/input.h"
#include "engine/isolate/isolator.h"
#include "parse/topology.h"
#include "store/records.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

struct PipelineOptions {
  int64_t window_ns = 1800'000'000'000;      // what the isolator looks at (config [isolate] window)
  size_t max_recent_observations = 200'000;  // warm-start replay bound, and of the workload history kept
  IsolateOptions isolate;
  // Change-only storage: a periodic reading unchanged since its series' last stored
  // point is not stored; its series' last-seen time is written this often
  // ([agent] store_unchanged_heartbeat). 0 = store every sample ([agent] store_every_sample).
  int64_t store_unchanged_heartbeat_ns = 300'000'000'000;
  // The change filter's dead-band for wandering analog readings ([agent] store_deadband).
  bool store_deadband = true;
  // Reuse a detector's last findings while nothing new reached it (Detector::Revision)
  // and the GPU inventory did not change; false = ask every detector at every
  // evaluation (tests compare the two).
  bool reuse_unchanged_findings = true;
  // Detector events untouched this long (log time) are forgotten ([agent]
  // detector_horizon; DetectorContext::event_horizon_ns); never shorter than window_ns.
  int64_t event_horizon_ns = 86'400'000'000'000;
  // The isolator's last answer is reused while its findings and layers with data are the
  // same; readings (every poll of an idle node) move only what its ruled-out layers quote
  // (the latest reading of each series, its value and time), so they make it run again
  // at most this often. 0 = at every evaluation after any reading, as if uncached.
  int64_t isolate_refresh_ns = 60'000'000'000;
};

// The pipeline options the agent config asks for.
PipelineOptions PipelineOptionsFor(const AgentConfig& config);

struct PipelineStats {
  uint64_t observations_unchanged = 0;                         // periodic readings fed to detectors but not stored
  uint64_t detector_recomputations = 0;                        // Detector::Findings() calls made by evaluations
  uint64_t detector_reuses = 0;                                // times an evaluation reused a detector's last findings
  uint64_t findings_compared = 0;                              // findings compared with their stored version
  uint64_t isolations_skipped = 0;                             // evaluations that reused the isolator's last answer
  size_t findings_remembered = 0;  // findings whose stored version is kept to compare with (what detectors report)
  std::map<std::string, uint64_t> recomputations_by_detector;  // Findings() calls, by Detector::name()
};

// How one evaluation may answer.
struct EvaluateOptions {
  // False when no source is known to see the node (the agent is blind, or none has read yet:
  // daemon/agent.h "Blind"): a "none" primary is then neither stored nor allowed to replace
  // the stored one, since silence from sources that all fail is not health. Findings and a
  // real diagnosis are stored as ever (a GPU that fell off the bus may take NVML with it).
  bool may_store_none = true;
};

struct EvaluateResult {
  size_t findings_stored = 0;        // new or changed findings written this time
  bool diagnosis_stored = false;     // the primary changed and was written
  bool none_withheld = false;        // a new "none" primary was kept out of the store (EvaluateOptions)
  int64_t diagnosis_id = 0;          // its store row id when diagnosis_stored (the policy's input)
  std::vector<Diagnosis> diagnoses;  // the isolator's current answer, primary first
};

class Pipeline {
 public:
  // `store` and `topology` (may be null) must outlive the pipeline.
  Pipeline(Store& store, std::string node, PipelineOptions options, const Topology* topology);
  ~Pipeline();

  // Replays the last window's stored observations into the detectors and remembers the
  // stored findings, so a restarted agent keeps its state without re-reading sources
  // and without storing its findings again.
  // Also primes the change filter with the stored readings, so an unchanged reading right
  // after a restart is not stored again.
  Status WarmStart(int64_t now_ns);
  // Stores the batch's cursors and its observations minus the unchanged periodic
  // readings in one transaction (the cursors even when every observation was dropped),
  // then feeds the detectors every observation except those the store already had
  // (pure duplicates: the detectors saw them when they were stored, or at warm start).
  // On a store error nothing is fed.
  Result<AppendStats> Ingest(Layer layer, SourceBatch batch);
  // Ingest that leaves `batch` whole on a store error (a full disk), with its node
  // filled in and its observations in time order, so the caller can hold it and retry
  // it later instead of losing it; a retry of a batch is exactly one ingest. Once
  // stored, the batch's observations are handed to the detectors (moved from).
  // `critical` (when given) is set to how many of the observations fed to the detectors
  // are critical (engine/detect/critical.h): the agent then evaluates at once.
  Result<AppendStats> TryIngest(Layer layer, SourceBatch& batch, size_t* critical = nullptr);
  // Collects findings, stores the new/changed ones, runs the isolator over the window
  // ending at now_ns and stores the primary diagnosis when it changed (a "none" one only
  // when options.may_store_none).
  Result<EvaluateResult> Evaluate(int64_t now_ns, EvaluateOptions options = {});
  PipelineStats stats() const;

 private:
  // Takes the observation: the detectors see it, then the isolator's context keeps it.
  void Feed(Observation obs);
  // `layer` had data at `time_ns`: news for the isolator when the layer was out of the
  // last isolation's window (or never seen), since it then joins layers_with_data.
  void NoteLayer(Layer layer, int64_t time_ns);
  // One Store::Append of the cursors and the observations the filter keeps.
  Result<AppendStats> StoreBatch(const SourceBatch& batch);
  IsolateInput BuildInput(std::vector<Finding> findings, int64_t now_ns) const;
  // Refreshes caches_ (asks each detector whose input moved); true when any detector's
  // findings changed (or the inventory did).
  bool RefreshFindings();
  // Every detector's current findings, in detector order.
  std::vector<Finding> AllFindings() const;
  // Stores each new or changed finding of the detectors whose findings or keys moved.
  Result<size_t> StoreFindings();
  // Drops from stored_findings_ every key no cache holds.
  void ForgetUnreported();
  // Stores the result's primary when it changed and options allow it (fills its
  // diagnosis_stored / diagnosis_id / none_withheld).
  Status StorePrimary(EvaluateResult& result, int64_t now_ns, EvaluateOptions options);

  mutable std::mutex mu_;
  Store& store_;
  std::string node_;
  PipelineOptions options_;
  // The isolator's context, kept to the window because it is rebuilt at every
  // evaluation: the GPU inventory (shared with the detectors, so one GPU is one
  // component), the latest reading per (component, kind) and the workload reports.
  // Declared before detectors_, which point into it.
  IsolateContext context_;
  std::vector<std::unique_ptr<Detector>> detectors_;
  // One detector's last findings and what they were computed from: reused while the
  // detector's Revision() and the inventory stay the same (its findings are then the
  // same: a pure function of what it observed). Findings leave the isolator's window by
  // their own last_ns at every evaluation, cached or not.
  struct DetectorCache {
    bool valid = false;
    std::optional<uint64_t> revision;
    std::vector<Finding> findings;
    std::vector<std::string> keys;  // FindingKey of each (filled at the first comparison)
    std::vector<int> ordinals;      // of each key among this evaluation's equal keys (0: first)
    bool stored = false;            // all of them compared with stored_findings_ under these keys
    // The j-th finding's key in stored_findings_: its FindingKey, plus "#ordinal" after the first.
    std::string StoredKey(size_t j) const;
  };
  std::vector<DetectorCache> caches_;         // parallel to detectors_
  std::vector<GpuIdentity> cache_inventory_;  // the inventory the caches were computed with
  // The isolator's last answer and what it was computed from: reused while no detector's
  // findings changed, no layer came back and the window's start has not passed anything in
  // its input (its conclusions are then the same), and for at most isolate_refresh_ns
  // after readings arrived (they move only what it quotes).
  struct LastIsolation {
    bool valid = false;
    uint64_t news = 0;          // news_ then
    uint64_t quotes_moved = 0;  // quotes_moved_ then
    int64_t now_ns = 0;      // the evaluation's time (a clock stepped back recomputes)
    int64_t since_ns = 0;    // its window's start
    int64_t expires_ns = 0;  // the window's start past this drops something from the input
    std::vector<Diagnosis> diagnoses;
  };
  LastIsolation last_isolation_;
  uint64_t news_ = 0;          // layers (back) in the isolator's window so far
  uint64_t quotes_moved_ = 0;  // readings kept as the latest of their series so far
  std::map<Layer, int64_t> layer_last_seen_ns_;  // which layers had data, and when
  // What a stored finding's row says that can change, as last written: enough to tell
  // news from a repeat (SameAs) without keeping a third copy of every finding's
  // evidence (the detectors' state and the caches hold it already).
  struct StoredFinding {
    int64_t last_ns = 0;
    uint64_t count = 0;
    Severity severity = Severity::kInfo;
    Action action = Action::kNone;
    double confidence = 0;
    std::map<std::string, std::string> attrs;
    bool SameAs(const Finding& f) const;  // nothing a reader would act on changed
  };
  // By FindingKey (plus "#ordinal"); only the keys some detector still reports, so it is
  // bounded by the detectors' own bounded state however long the agent runs.
  std::map<std::string, StoredFinding> stored_findings_;
  static StoredFinding Remembered(const Finding& f);
  std::optional<std::string> stored_primary_;       // signature of the last stored primary
  std::unique_ptr<ChangeFilter> filter_;            // null = store every sample
  PipelineStats stats_;
};

// Identity of a finding across evaluations and restarts: layer, class, component and
// the detector's own identity of the event (Finding::key: rule, group, time of the first
// line; set once when the finding starts, never from evidence text). A finding that grows
// (later evidence, count, last_ns, severity) keeps its key; two distinct events never
// share one, and one multi-line event (an XID 13's GPC/TPC and ESR lines, an AER error
// and its detail lines) is one finding with one key. A finding without a key (a detector
// that sets none) falls back to its start and first evidence line (source, times,
// component, text). Fields are length-prefixed, so no text can pose as another field.
std::string FindingKey(const Finding& f);

}  // namespace faultline::daemon
