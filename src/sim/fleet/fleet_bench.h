// The fleet benchmark's generated fleet (`faultline bench fleet --nodes N`): racks of
// 16-32 nodes (two PDUs each on the a/b feeds of their row of ten racks, one cooling loop
// per two racks, one leaf switch
// per rack, one HCA per node cabled to its leaf), jobs of 16-512 nodes covering ~90% of
// the nodes (step 1.5-3 s, 2% noise, checkpoints), and injected faults with their truth:
// stragglers (~1% of the nodes, at least 5: a hot cold plate on one GPU, or a slow node
// with no hardware cause) and shared causes scaled with the fleet (a PDU sag, a cooling
// loop running hot, a bad node-to-node cable, a degraded leaf switch, a driver roll-out
// to one rack; no two sagging PDUs on one feed). Stragglers are drawn among nodes no shared
// slowdown touches, at most one in ten of a job's nodes. The truth is DeriveFleetTruth's.
//
// Deterministic for (nodes, seed).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/fleet/fleet_scenario.h"

namespace faultline::sim {

struct FleetBenchSpec {
  size_t nodes = 1000;
  uint64_t seed = 1;
  double duration_s = 900;
  double faults_from_s = 300;  // no fault before the analyzer's window has filled
};

FleetScenario GenerateBenchFleet(const FleetBenchSpec& spec);

}  // namespace faultline::sim
