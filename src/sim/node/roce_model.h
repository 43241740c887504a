// The RoCE side of the simulated node (node.fabric: roce): per HCA port, the netdev's
// state and speed, its ethtool driver statistics (PFC per priority, PHY errors, link-down
// events) and the RDMA port's hw_counters, advanced in scenario time from the background
// rates and the active roce_errors / pfc_storm / link_downtrain faults. Pure state; the
// fake sysfs renderer (sim/fake_sysfs/fake_ethernet.h) publishes it.
//
// Physics, kept simple and deterministic (no random draws, so the rest of the node's
// noise is unchanged): background ECN marks at noise.roce_ecn_per_s per port with CNPs
// sent/handled at about 90% of them and a few PFC pauses; a bad link (roce_errors) gives
// CRC and symbol errors at `value`/min and the retransmissions they cause (sequence
// errors, out-of-sequence, ACK timeouts) but no congestion; a PFC storm gives pause frames
// and paused time on priority 3 plus a surge of ECN marks and CNPs, and no loss; a
// downtrained port retrains once (carrier flap) and runs at the lower speed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/fake_sysfs/fake_ethernet.h"
#include "sim/node/node_scenario.h"

namespace faultline::sim {

inline constexpr int kRocePfcPriority = 3;  // the lossless priority RoCE traffic uses here

struct SimRocePort {
  std::string operstate = "up";
  int64_t speed_mbps = 400000;
  uint64_t carrier_changes = 0;
  std::map<std::string, uint64_t> ethtool;  // driver statistics by name
  std::map<std::string, uint64_t> hw;       // RDMA hw_counters by file name
  std::map<std::string, double> acc;        // fractional parts not yet counted
  bool retrained = false;
};

// The ports of a RoCE node (one per HCA), counters at zero, link up at 400 Gb/s.
std::vector<SimRocePort> MakeRocePorts(size_t hcas);
// Advances every port by `dt` seconds at scenario time `t`.
void StepRoce(const NodeScenario& scenario, double t, double dt, std::vector<SimRocePort>& ports);
// How much the active RoCE faults slow a synchronous job's steps (1 = not at all).
double RoceSlowdown(const NodeScenario& scenario, double t);
// The netdev name of HCA `i`'s port on a RoCE node.
std::string RoceNetdev(size_t i);
// Writes what changed between `have` (what the tree holds) and `want` into the fake tree,
// then `have` = `want`. The first error is returned; the rest is still written.
Status PublishRoce(FakeEthernet& eth, const std::vector<SimRocePort>& want, std::vector<SimRocePort>& have);

}  // namespace faultline::sim
