// The detector stage's one table (STYLE.md 2): every detector the agent and offline
// `diagnose` run, with its name, what it reads and its factory, in the order they run.
// Adding a detector is a folder entry (its .h/.cc) plus one row in all_detectors.cc; no
// registration through static initialisers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/inventory.h"
#include "engine/detect/detector.h"
#include "parse/topology.h"

namespace faultline {

// What a detector may be built with. Pointers are not owned, may be null and must
// outlive the detectors.
struct DetectorContext {
  const Topology* topology = nullptr;    // the operator's topology file (fabric detectors)
  const Inventory* inventory = nullptr;  // the caller's GPU inventory, filled as data arrives (gpu_identity.h)
  // How far back the detectors that judge a series against its own past look (the
  // workload detector's window_ns): the agent passes its isolator window; 0 = everything.
  int64_t history_ns = 0;
  // How long the detectors that keep one state per event (the kernel detector) hold an
  // event no line touched, in the log's own time: the agent passes [agent]
  // detector_horizon; 0 = every event (offline reading, up to the detectors' count caps).
  int64_t event_horizon_ns = 0;
};

struct DetectorDescriptor {
  std::string_view name;   // the detector's name()
  std::string_view reads;  // the observations it reads, for docs and `--help`
  std::unique_ptr<Detector> (*make)(const DetectorContext& context);
};

// Every detector, in the order they run: kernel, GPU, OOB, fabric, workload.
std::span<const DetectorDescriptor> DetectorTable();

// One instance of each detector of the table.
std::vector<std::unique_ptr<Detector>> MakeAllDetectors(const DetectorContext& context);

}  // namespace faultline
