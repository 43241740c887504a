// The agent's data path: source batches -> store (observations + cursors, one
// transaction) -> detectors -> findings (stored when new or changed) -> isolator ->
// diagnosis (stored when the primary changes).
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
#include "daemon/source.h"
#include "engine/detect/detector.h"
#include "engine/isolate/isolator.h"
#include "parse/topology.h"
#include "store/records.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

struct PipelineOptions {
  int64_t window_ns = 1800'000'000'000;           // what the isolator looks at (config [isolate] window)
  size_t max_recent_observations = 200'000;       // memory bound on the isolator's context
  IsolateOptions isolate;
};

struct EvaluateResult {
  size_t findings_stored = 0;         // new or changed findings written this time
  bool diagnosis_stored = false;      // the primary changed and was written
  std::vector<Diagnosis> diagnoses;   // the isolator's current answer, primary first
};

class Pipeline {
 public:
  // `store` and `topology` (may be null) must outlive the pipeline.
  Pipeline(Store& store, std::string node, PipelineOptions options, const Topology* topology);
  ~Pipeline();

  // Replays the last window's stored observations into the detectors and remembers the
  // stored findings, so a restarted agent keeps its state without re-reading sources
  // and without storing its findings again.
  Status WarmStart(int64_t now_ns);
  // Stores the batch's observations and cursors in one transaction, then feeds the
  // observations to the detectors. On a store error nothing is fed.
  Result<AppendStats> Ingest(Layer layer, SourceBatch batch);
  // Collects findings, stores the new/changed ones, runs the isolator over the window
  // ending at now_ns and stores the primary diagnosis when it changed.
  Result<EvaluateResult> Evaluate(int64_t now_ns);

 private:
  void Feed(const Observation& obs);
  IsolateInput BuildInput(std::vector<Finding> findings, int64_t now_ns) const;

  std::mutex mu_;
  Store& store_;
  std::string node_;
  PipelineOptions options_;
  std::vector<std::unique_ptr<Detector>> detectors_;
  std::deque<Observation> recent_;                 // time-ordered-ish, pruned to the window
  std::map<Layer, int64_t> layer_last_seen_ns_;    // which layers had data, and when
  std::map<std::string, Finding> stored_findings_;  // by FindingKey, as last written
  std::optional<std::string> stored_primary_;      // signature of the last stored primary
};

// Identity of a finding across evaluations: layer, class, component, start.
std::string FindingKey(const Finding& f);

}  // namespace faultline::daemon
