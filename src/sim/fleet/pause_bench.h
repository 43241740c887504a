// Fleets whose jobs pause as training does, for judging the fleet analyzer's slow-node
// accuracy where it is hardest (`faultline bench fleet` "pause fleets", tests/sim_fleet):
// a 128-node fleet (8 racks of 16, as in issue 25), jobs of 8, 12 or 16 nodes taking 4
// nodes in each of 2-4 racks, every job with
//   - checkpoints every 40-120 steps lasting 1.5-3.5 agent report periods at 3-5x,
//   - an evaluation pass every 100-250 steps (10-30 s at 1.5-2.5x),
//   - data stalls (3-10 s at 2-6x) on average every 60-300 s,
//   - per-report jitter of 2-6% and 1% persistent spread between nodes;
// about one node in ten idle; and `stragglers` nodes slow for their own reasons from
// `faults_from_s` on (a hot cold plate on one GPU, published by the node as gpu_thermal,
// or a node 20-50% slower with no hardware cause), at most one per job. The truth is
// DeriveFleetTruth's. Deterministic in the spec.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fleet/analyzer.h"
#include "sim/fleet/fleet_scenario.h"

namespace faultline::sim {

struct PauseFleetSpec {
  uint64_t seed = 1;
  size_t stragglers = 0;
  double duration_s = 900;
  double faults_from_s = 300;
};

FleetScenario GeneratePauseFleet(const PauseFleetSpec& spec);

// Pause fleets over seeds first_seed.. (`seeds` healthy ones and `seeds` with 3
// stragglers each), run in process and scored.
struct PauseBenchResult {
  size_t fleets = 0;
  size_t nodes_per_fleet = 0;
  // Healthy fleets: everything named is false.
  size_t healthy_fleets = 0;
  size_t healthy_clean = 0;  // named nothing at all
  size_t healthy_false_stragglers = 0;
  size_t healthy_false_causes = 0;  // shared causes and racks
  // Fleets with stragglers.
  size_t truth = 0, true_positives = 0, false_positives = 0, false_negatives = 0;
  size_t false_causes = 0;
  size_t gpu_right = 0;    // of the found GPU stragglers, the GPU named right
  size_t gpu_truth = 0;    // found GPU stragglers
  size_t class_right = 0;  // found stragglers with their class: gpu_thermal for a hot GPU, else workload_imbalance
  size_t reopened = 0;     // found stragglers reported under more than one id
  double precision = 1, recall = 1;
  double healthy_jitter_min = 0, healthy_jitter_max = 0;  // the jobs' report jitter
  std::vector<std::string> false_named;                   // "seed <s>: <node or cause>", the first few
  double wall_s = 0;
};

PauseBenchResult RunPauseBench(size_t seeds, uint64_t first_seed = 1, const fleet::AnalyzerOptions& options = {});

}  // namespace faultline::sim
