// The operator's fleet topology file (docs/fleet.md): where each node sits and what it
// shares with others (rack, PDU, power feed, cooling loop, leaf switch, driver version),
// and the cables between nodes or between a node and a switch port. The fleet analyzer
// correlates per-node diagnoses through it; nodes missing from it are still compared
// with their job's peers, only not correlated.
//
// Format: JSON, one object; unknown keys are an error so typos are caught. Parsing is a
// pure function of the text. Immutable after parsing (thread-compatible).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::fleet {

struct FleetNode {
  std::string name;
  std::string site;  // "" = the file's site
  std::string rack;
  std::string pdu;
  std::string feed;
  std::string cooling_loop;
  std::string leaf_switch;
  std::string driver;  // driver version the node runs
};

// One end of a cable: a node's HCA/NIC port, or a switch port.
struct CableEnd {
  std::string node;    // set for a node end
  std::string device;  // "mlx5_0"
  int port = 1;
  std::string switch_name;  // set for a switch end
  std::string switch_port;
};

struct Cable {
  std::string id;
  CableEnd a;
  CableEnd b;
};

struct FleetTopology {
  std::string site = "default";
  std::vector<FleetNode> nodes;
  std::vector<Cable> cables;

  // Linear scans (the analyzer indexes the file once: correlate.h TopologyIndex).
  const FleetNode* FindNode(std::string_view name) const;  // nullptr when unknown
  // Cables with an end on this node's device/port (device "" = any device of the node).
  std::vector<const Cable*> CablesOf(std::string_view node, std::string_view device = "", int port = 0) const;
};

inline constexpr size_t kMaxFleetTopologyBytes = 64 << 20;
inline constexpr size_t kMaxFleetTopologyEntries = 1'000'000;

// kCorrupt naming the offending key/path on malformed input, wrong types, unknown keys,
// duplicate node names; kInvalidArgument over the limits.
Result<FleetTopology> ParseFleetTopology(std::string_view text);

}  // namespace faultline::fleet
