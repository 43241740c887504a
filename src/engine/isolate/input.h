// The isolator's one input builder (DESIGN.md "no second path"): the agent
// (daemon/pipeline), offline `diagnose` (engine/offline) and `why-slow` (daemon/why_slow)
// all gather their context with an IsolateContext and build the IsolateInput with
// BuildIsolateInput, so the same observations give the same input, the same diagnoses
// and the same component names whichever path they took.
//
// Pure functions and plain data; never prints; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/inventory.h"
#include "core/types.h"
#include "engine/isolate/isolator.h"

namespace faultline {

// [since_ns, until_ns]; a bound of 0 is open.
struct IsolateWindow {
  int64_t since_ns = 0;
  int64_t until_ns = 0;
};

struct IsolateInputParts {
  std::vector<Finding> findings;      // every detector's (or the store's) findings
  std::vector<Observation> readings;  // context: the latest reading of each (component, kind)
  std::vector<Observation> workload;  // the jobs' reports (step times, throughput)
  // Readings and reports borrowed from an IsolateContext (Parts) instead of copied: taken
  // as `readings` and `workload` are; they must outlive BuildIsolateInput.
  std::vector<const Observation*> borrowed;
  std::set<Layer> layers_with_data;      // layers read even when they yielded nothing (a clean kernel log)
  const Inventory* inventory = nullptr;  // names every GPU (CanonicalGpu); null = names as seen
  IsolateWindow window;
  bool slowdown_reported = false;  // the caller asks "why is this node slow?" (why-slow)
  // Context readings kept per hardware layer: the isolator quotes at most
  // IsolateOptions::max_ruled_out_evidence of them; a caller raising that raises this.
  size_t context_per_layer = IsolateOptions{}.max_ruled_out_evidence;
};

// The isolator's input:
//  - findings whose span overlaps the window (undated ones kept: evidence is not
//    silently lost), each GPU component renamed to the inventory's canonical one;
//  - as context, what the isolator reads of it (the healthy readings that rule a layer
//    out, docs/isolator.md): of the readings and reports dated inside the window or
//    undated, GPU components renamed the same way, for each hardware layer the latest
//    reading (not an event) of each (component, kind), the first context_per_layer in
//    (component, kind) order. Only those are copied: an agent's context holds a thousand
//    series, and copying them all at every evaluation was most of its cost;
//  - layers_with_data = the given layers plus the layer of every kept finding, and of
//    every reading and report dated inside the window or undated;
//  - slowdown_reported as given; symptom_ns unset (the workload detector's finding
//    carries when the slowdown began).
IsolateInput BuildIsolateInput(IsolateInputParts parts);

struct IsolateContextOptions {
  size_t max_readings = 100'000;  // distinct (component, kind) series kept; later new series are dropped
  size_t max_workload = 200'000;  // workload reports kept (the oldest go first)
};

// What the isolator needs besides findings, gathered as observations stream past in
// (roughly) time order: the GPU inventory (LearnGpuIdentity), the latest reading of
// each (component, kind), and the workload reports. Bounded by the options.
class IsolateContext {
 public:
  explicit IsolateContext(Inventory inventory = {}, IsolateContextOptions options = {});

  // Learns the GPU identity `obs` carries, then keeps it as a reading or a report.
  void Observe(const Observation& obs);
  // Observe in two steps, for a caller that hands the observation over: Learn before
  // the detectors see it (they read the inventory), Keep after (moved in: an agent
  // feeds ~100 readings a second and copying each one's maps was a fifth of its ingest).
  void Learn(const Observation& obs);
  // True when `obs` became its series' latest reading, i.e. what the isolator quotes
  // moved (a caller caching its answer refreshes it); false for a workload report (never
  // quoted), an older reading, or a series past max_readings.
  bool Keep(Observation&& obs);
  // Drops readings and reports dated before `before_ns` (the agent's sliding window).
  void Forget(int64_t before_ns);

  // The inventory: hand it to the detectors (DetectorContext) so they name GPUs alike.
  // Its address is stable for the context's life.
  const Inventory& inventory() const { return inventory_; }
  // Readings and reports (borrowed: pointers into this context) and the inventory; the
  // context must outlive the parts and stay unchanged until BuildIsolateInput has run.
  // The caller adds findings, window and layers it read.
  IsolateInputParts Parts() const;
  // Series dropped for max_readings.
  size_t readings_dropped() const { return readings_dropped_; }

 private:
  Inventory inventory_;
  IsolateContextOptions options_;
  std::map<std::pair<std::string, ObsKind>, Observation> latest_;
  std::deque<Observation> workload_;
  size_t readings_dropped_ = 0;
  // No reading in latest_ is older than this: Forget scans the map only when the window's
  // start passed it (readings refresh every poll, so a scan is rare, not every evaluation).
  int64_t oldest_reading_ns_ = 0;
};

}  // namespace faultline
