#include "sim/fleet/node_physics.h"

#include <algorithm>
#include <cmath>

namespace faultline::sim {
namespace {

constexpr uint64_t kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40, kHwPowerBrake = 0x80;

// node_model.cc ApplyPower: PSUs derate below the high-line range and drop out near 90 V;
// a load above what the working PSUs deliver asserts the GPU power brake.
void Power(const NodeSpec& spec, const NodeConditions& c, NodePhysics& p) {
  double per_psu = spec.psu_capacity_w;
  if (c.input_v < kFleetPsuDerateBelowV) per_psu *= std::max(0.0, (c.input_v - 90) / 110);
  p.capacity_w = per_psu * spec.psus;
  const double gpu_demand = p.gpu_count * (c.job_running ? spec.gpu_busy_w : 90.0);
  p.load_w = spec.host_w + gpu_demand;
  p.power_brake = p.load_w > p.capacity_w;
}

// node_model.cc ApplyThermal: cold-plate temperature = supply + a rise that grows as flow
// drops + the air path + local faults + drift + a per-slot offset.
void Thermal(const NodeSpec& spec, const NodeConditions& c, NodePhysics& p) {
  const double flow = std::max(c.coolant_flow_lpm, 0.1);
  p.coolant_return_c = c.coolant_supply_c + p.load_w / 1000 * 0.8 * (60 / flow);
  const double flow_rise = 38 * std::sqrt(60 / flow);
  const double air = c.inlet_c - 24;
  const double busy = c.job_running ? 1.0 : 0.35;
  (void)spec;
  for (int i = 0; i < p.gpu_count; ++i) {
    GpuPhysics& g = p.gpus[static_cast<size_t>(i)];
    g.temp_gpu =
        c.coolant_supply_c + flow_rise * busy + air + c.gpu_extra_c[static_cast<size_t>(i)] + c.wander_c + 0.4 * i;
    g.temp_mem = g.temp_gpu + 6 + 0.5 * air;
  }
}

// node_model.cc ApplyContinuous (clocks) and ApplyWorkload (the step waits for the
// slowest GPU).
void Clocks(const NodeSpec& spec, const NodeConditions& c, NodePhysics& p) {
  double slowest = 1.0;
  for (int i = 0; i < p.gpu_count; ++i) {
    GpuPhysics& g = p.gpus[static_cast<size_t>(i)];
    g.reasons = 0;
    double clock = kFleetNominalSmMhz;
    if (g.temp_gpu >= kFleetGpuSlowdownC || g.temp_mem >= kFleetHbmSlowdownC) {
      g.reasons |= kHwThermal | kHwSlowdown | kSwThermal;
      clock *= 0.7;
    }
    if (p.power_brake && c.job_running) {
      g.reasons |= kHwPowerBrake | kHwSlowdown;
      clock = std::min(clock, kFleetNominalSmMhz * 0.5);
    }
    g.clock_sm = clock;
    g.power_w = c.job_running ? spec.gpu_busy_w * clock / kFleetNominalSmMhz : 90;
    slowest = std::max(slowest, kFleetNominalSmMhz / clock);
  }
  p.step_factor = slowest;
}

}  // namespace

NodePhysics EvaluateNodePhysics(const NodeSpec& spec, const NodeConditions& c) {
  NodePhysics p;
  p.gpu_count = std::clamp(spec.gpus, 0, kFleetMaxGpus);
  Power(spec, c, p);
  Thermal(spec, c, p);
  Clocks(spec, c, p);
  return p;
}

}  // namespace faultline::sim
