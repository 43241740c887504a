// Shared causes from per-node diagnoses (docs/fleet.md "Correlation rules"): pure
// functions over the diagnoses the analyzer holds and the fleet topology.
//
// Each rule takes the diagnoses of one family of classes and groups their nodes by the
// part the topology says they share; a part with enough distinct nodes is a shared cause:
//   power   (power_supply, power_insufficient, voltage_out_of_range, gpu_power_brake):
//           nodes spanning two or more PDUs of one feed -> the feed, else one PDU -> the PDU;
//   cooling (thermal_inlet, cooling_degraded, coolant_leak, gpu_thermal) -> the cooling loop;
//   link    (ib_link_errors, ib_link_down, nvlink_errors, nvlink_down): both node ends of
//           one cable -> the cable (needs 2 nodes whatever min_nodes says); then ports of
//           min_switch_ports nodes whose cable (else leaf_switch) lands on one switch -> the switch;
//   congestion (fabric_congestion: RoCE PFC storms, ECN/CNP surges without loss): ports of
//           min_nodes nodes under one switch (as for link) -> cause "congestion" on that
//           switch, the fabric's traffic rather than a part;
//   driver  (driver_fault, gsp_firmware): min_nodes nodes on one driver version and no
//           such diagnosis on any other version -> the driver version.
// A diagnosis joins at most one cause (rules run in the order cable, switch, congestion,
// feed, PDU, loop, driver). Diagnoses of a node missing from the topology never correlate.
//
// Power and cooling need evidence of a shared cause on each node: a node counts only when
// one of its diagnoses of the family is node-wide (any class but gpu_power_brake /
// gpu_thermal, one of those on a non-GPU component, or that class on two or more of the
// node's GPUs); a single GPU braking or running hot is that GPU's own problem. A counted
// node links all its diagnoses of the family. And the nodes must be a real share of the
// part: >= min_nodes and >= min_share of the part's nodes that are reporting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/types.h"
#include "fleet/fleet_topology.h"

namespace faultline::fleet {

// Look-ups over a topology, built once (FleetTopology's own are linear scans).
class TopologyIndex {
 public:
  explicit TopologyIndex(const FleetTopology& topology);
  const FleetNode* Node(std::string_view name) const;
  // The nodes on one PDU, feed or cooling loop (`field` a FleetNode member); empty when none.
  const std::vector<const FleetNode*>& NodesOn(std::string FleetNode::*field, const std::string& part) const;
  // The cable on this node's device/port; nullptr when the file names none.
  const Cable* CableAt(std::string_view node, std::string_view device, int port) const;
  const FleetTopology& topology() const { return *topology_; }

 private:
  const FleetTopology* topology_;
  std::unordered_map<std::string, const FleetNode*> nodes_;
  std::map<std::tuple<std::string, std::string, int>, const Cable*> cable_ends_;
  // (which field: 0 pdu, 1 feed, 2 cooling_loop; part) -> its nodes.
  std::map<std::pair<int, std::string>, std::vector<const FleetNode*>> on_part_;
};

// One per-node diagnosis the rules read.
struct HeldRef {
  std::string node;
  int64_t row_id = 0;
  const Diagnosis* diagnosis = nullptr;
};

struct CorrelateOptions {
  size_t min_nodes = 2;         // AnalyzerOptions::min_correlated_nodes
  size_t min_switch_ports = 3;  // "many ports" on one switch
  // A PDU, feed or loop is named only when its affected nodes are at least this share of
  // its nodes that are reporting (a fixed share; not an AnalyzerOptions field yet).
  double min_share = 0.25;
};

// Whether a node is reporting (has anything held in the window). Nodes with a diagnosis
// in the refs always are. Empty function: only those.
using ReportingFn = std::function<bool(std::string_view node)>;

struct SharedCause {
  std::string cause;            // "feed", "pdu", "cooling_loop", "cable", "switch", "driver"
  std::string part;             // the part's name ("r12-a", "C-0193", "leaf-07", "550.54.15")
  std::vector<size_t> members;  // indexes into the refs given
};

// The family a class belongs to for correlation ("" = none).
std::string_view CorrelationFamily(FaultClass c);

// The (device, port) a link diagnosis names: component keys "device"/"port", else a name
// "<device>/<port>" ("mlx5_0/1", NVLink "3/11"). Port 0 when there is none.
std::pair<std::string, int> LinkEnd(const ComponentRef& component);

std::vector<SharedCause> Correlate(const std::vector<HeldRef>& refs, const TopologyIndex& topology,
                                   const CorrelateOptions& options, const ReportingFn& reporting = {});

// What the fleet diagnosis of a cause tells the policy to do (facility ticket for a PDU,
// feed, loop or switch; reseat/replace for a cable; driver upgrade/rollback for a driver).
Action ActionFor(std::string_view cause);
// The component id a fleet diagnosis names: "<cause>/<part>" ("pdu/r12-a", "cable/C-0193").
std::string CauseComponent(std::string_view cause, std::string_view part);

}  // namespace faultline::fleet
