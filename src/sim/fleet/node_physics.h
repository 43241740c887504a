// The single-node physics of the node simulator (src/sim/node/node_model.cc: ApplyPower,
// ApplyThermal, the clock rules of ApplyContinuous and the workload's "each step waits for
// the slowest GPU"), as a pure function of a node's conditions, so the fleet simulator can
// evaluate thousands of nodes at their sampling times without ticking a full NodeModel
// (PSUs, fans, NVLinks, kernel log) for each. tests/sim_fleet checks that both models give
// the same clocks, temperatures, brake and step factor for the same conditions.
//
// Pure and allocation-free.
#pragma once

#include <array>
#include <cstdint>

#include "sim/node/node_scenario.h"

namespace faultline::sim {

inline constexpr int kFleetMaxGpus = 8;
inline constexpr double kFleetNominalSmMhz = 1980;  // node_model.cc kNominalSmMhz
inline constexpr double kFleetGpuSlowdownC = 87;
inline constexpr double kFleetHbmSlowdownC = 95;
inline constexpr double kFleetPsuDerateBelowV = 200;  // high-line range; below, PSUs derate

// What the fleet's shared infrastructure and local faults impose on one node.
struct NodeConditions {
  double input_v = 230;          // every PSU's input (a PDU or feed sag)
  double coolant_supply_c = 32;  // the cooling loop's supply temperature
  double coolant_flow_lpm = 60;
  double inlet_c = 24;
  std::array<double, kFleetMaxGpus> gpu_extra_c{};  // local cooling faults (a blocked cold plate)
  double wander_c = 0;                              // the slow temperature drift at this moment
  bool job_running = true;
};

struct GpuPhysics {
  double clock_sm = kFleetNominalSmMhz;
  double power_w = 0;
  double temp_gpu = 0;
  double temp_mem = 0;
  uint64_t reasons = 0;  // NVML clock event reasons
};

struct NodePhysics {
  std::array<GpuPhysics, kFleetMaxGpus> gpus{};
  int gpu_count = 0;
  double load_w = 0;
  double capacity_w = 0;
  bool power_brake = false;
  double coolant_return_c = 0;
  double step_factor = 1;  // the node's step time over its healthy step time
};

NodePhysics EvaluateNodePhysics(const NodeSpec& spec, const NodeConditions& c);

}  // namespace faultline::sim
