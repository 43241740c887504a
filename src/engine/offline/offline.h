// Offline analysis (DESIGN.md "one-shot diagnostician over saved logs"): the glue between
// observations read from saved snapshots of any layer and the isolator. Every observation
// goes through the same detectors the agent runs (all_detectors.h), in time
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
#include "engine/detect/all_detectors.h"
#include "engine/detect/detector.h"
#include "engine/isolate/isolator.h"
#include "parse/topology.h"

namespace faultline {

struct OfflineOptions {
  // The operator's topology, for the fabric detectors (switch ports, cables, risers).
  // Not owned; may be null; must outlive the call.
  const Topology* topology = nullptr;
  // GPU identities known beforehand (`--gpu-map`). What the observations say about GPU
  // identity (NVML / dcgm-exporter readings, the kernel log's identity lines: see
  // engine/detect/gpu_identity.h) is added to it, so a kernel-log line naming a PCI bus
  // id lands on the same gpu/<index> as NVML's readings.
  Inventory inventory;
  // Keep only observations inside [since_ns, until_ns]; undated ones (time 0: plain dmesg
  // without a boot time) cannot be placed and are always kept.
  std::optional<int64_t> since_ns;
  std::optional<int64_t> until_ns;
  // Layers whose source was read even when it yielded no observation in the window (a
  // clean kernel log is evidence that the OS layer is fine).
  std::set<Layer> layers_read;
};

// Feeds `observations` (any order, any mix of layers and snapshots) in time order
// (stable: same-time and undated observations keep their input order) to an
// IsolateContext and to a fresh set of the agent's detectors (MakeAllDetectors, sharing
// the context's inventory, which starts from options.inventory), and returns
// BuildIsolateInput of their findings and context (engine/isolate/input.h: the same
// builder the agent and why-slow use), with layers_with_data = layers_read plus every
// layer that had an observation or a finding.
IsolateInput BuildOfflineInput(std::vector<Observation> observations, const OfflineOptions& options);

}  // namespace faultline
