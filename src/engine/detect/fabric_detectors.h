// Layer-4 (interconnect and fabric) detectors: PCIe, NVLink/NVSwitch and InfiniBand.
// They read the sysfs source's pcie/* and ib/* observations and the GPU collectors'
// PCIe replay / link gen / NVLink observations, and name the physical part to touch:
// the cable, switch port, riser or slot (see docs/fabric.md for every rule and the facts
// it relies on).
//
// Placement (the reason these detectors exist): errors on both ends of one link blame
// the cable/connector between them; errors on one end only blame that end's port or
// transceiver; many ports of one switch at once blame the switch; a device that is the
// single failing end again and again is an RMA candidate.
//
// The Topology (optional, may be null) supplies the far end of each link; without it
// findings name what sysfs and NVML know (BDF, slot, HCA/port, link number).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/detect/detector.h"
#include "parse/topology.h"

namespace faultline {

struct FabricOptions {
  // --- PCIe ---
  // Replays per lane per minute expected at a 1e-12 bit error rate (DCGM health check):
  // Gen3 0.48, Gen4 0.96, Gen5 1.92; Gen1-2 use the Gen3 figure, Gen6+ the Gen5 one.
  double pcie_replay_gen3_per_lane_min = 0.48;
  double pcie_replay_gen4_per_lane_min = 0.96;
  double pcie_replay_gen5_per_lane_min = 1.92;
  double pcie_replay_critical_factor = 10;  // this many times the expected rate -> critical
  int pcie_default_gen = 5;                 // when the link's gen/width were never observed
  int pcie_default_width = 16;
  // Corrected AER "storm": at least this rate and this many errors in one interval.
  double aer_storm_per_min = 60;
  uint64_t aer_storm_min_count = 10;
  // GPUs drop their link to 2.5 GT/s when idle to save power: not a fault.
  bool ignore_gpu_idle_speed = true;

  // --- NVLink ---
  double nvlink_crc_fail_per_s = 100;  // at or above: failure (DCGM)
  int nvlink_crc_warn_intervals = 3;   // consecutive intervals with any CRC errors: warning

  // --- InfiniBand ---
  double ib_symbol_errors_per_min = 10;
  double ib_rcv_errors_per_min = 10;
  int ib_flap_cycles = 3;  // link_downed increments in the window
  int64_t ib_flap_window_ns = 10LL * 60 * 1'000'000'000;
  int64_t ib_down_after_ns = 2LL * 60 * 1'000'000'000;  // down this long: a drop, not a blip
  double expected_ib_rate_gbps = 0;                     // 0: from topology or the collector only
  // Sibling comparison (no topology needed): a port/link slower than a strict majority of
  // at least this many siblings (same IB link layer + HCA model + board; same PCI id) is
  // downtrained. IB ports with an explicit expected rate are judged against that instead.
  int ib_sibling_min_agree = 2;
  int pcie_sibling_min_agree = 2;

  // --- Placement ---
  int switch_ports_for_switch_fault = 4;                     // distinct ports of one switch at once
  int rma_after_episodes = 3;                                // single failing end this many times -> rma
  int64_t episode_gap_ns = 10LL * 60 * 1'000'000'000;        // bad samples further apart: new episode
  int64_t correlation_window_ns = 5LL * 60 * 1'000'000'000;  // both ends "at once"
  size_t max_evidence = 8;                                   // per finding
};

// The PCIe, NVLink and InfiniBand detectors. `topology` may be null and must outlive them.
std::vector<std::unique_ptr<Detector>> MakeFabricDetectors(const FabricOptions& options, const Topology* topology);

}  // namespace faultline
