// Offline analysis (DESIGN.md "one-shot diagnostician over saved logs"): the glue between
// observations read from saved snapshots of any layer and the isolator. Every observation
// goes through the same detectors the agent runs (kernel, GPU, OOB, fabric), in time
// order, and the findings plus the layers that had data become the isolator's input.
//
// Pure functions: no I/O, nothing printed; thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/inventory.h"
#include "core/types.h"
#include "engine/detect/detector.h"
#include "engine/isolate/isolator.h"
#include "parse/topology.h"

namespace faultline {

struct OfflineOptions {
  // The operator's topology, for the fabric detectors (switch ports, cables, risers).
  // Not owned; may be null; must outlive the call.
  const Topology* topology = nullptr;
  // GPU identities known beforehand (`--gpu-map`). The GPUs that snapshots describe
  // (components of type gpu carrying a "bdf" key, e.g. NVML's) are added to it, so a
  // kernel-log line naming a PCI bus id lands on the same gpu/<index> as NVML's readings.
  Inventory inventory;
  // Keep only observations inside [since_ns, until_ns]; undated ones (time 0: plain dmesg
  // without a boot time) cannot be placed and are always kept.
  std::optional<int64_t> since_ns;
  std::optional<int64_t> until_ns;
  // Layers whose source was read even when it yielded no observation in the window (a
  // clean kernel log is evidence that the OS layer is fine).
  std::set<Layer> layers_read;
};

// The detector set the agent runs, in the agent's order: kernel, GPU, OOB, fabric.
std::vector<std::unique_ptr<Detector>> MakeAllDetectors(const Topology* topology, Inventory inventory = {});

// Feeds `observations` (any order, any mix of layers and snapshots) to a fresh detector
// set in time order (stable: same-time and undated observations keep their input order)
// and returns the isolator's input: every detector's findings, as context (what rules
// layers out) the latest observation in the window of each (component, kind) plus every
// workload step time, as the agent gives it, layers_with_data = layers_read plus every
// layer that had an observation or a finding, and the slowdown verdict when workload
// step times are among the observations.
IsolateInput BuildOfflineInput(std::vector<Observation> observations, const OfflineOptions& options);

}  // namespace faultline
