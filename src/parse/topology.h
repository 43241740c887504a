// The operator's fabric topology file (docs/topology.md): which NVSwitch port each GPU
// NVLink lands on, which switch port and cable each InfiniBand HCA port is plugged
// into, and which riser carries each PCIe slot. sysfs and NVML cannot know these
// physical facts; with this file a fabric finding can name the part to touch.
//
// Format: JSON (one object; unknown keys are an error so typos are caught). Parsing is a
// pure function of the text; the caller reads the file. Thread-compatible (immutable
// after parsing).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline {

// One NVLink of one GPU and what sits at its far end.
struct TopoNvlink {
  int link = -1;
  std::string nvswitch;         // NVSwitch name (as in `nvswitches[].name`), "" for a GPU-GPU link
  int port = -1;                // NVSwitch port number, -1 if unknown
  std::optional<int> peer_gpu;  // direct GPU-GPU NVLink (no switch)
  std::optional<int> peer_link;
  std::string cable;  // cable / connector id for external NVLink (e.g. GB200 NVL72), "" if none
};

struct TopoGpu {
  int index = -1;
  std::string bdf;  // normalized when given
  std::string serial;
  std::vector<TopoNvlink> nvlinks;
};

struct TopoNvswitch {
  std::string name;  // "0".."3", matches nvswitch/<name> components
  std::string bdf;
};

// One InfiniBand (or RoCE) HCA port and where its cable goes.
struct TopoIbPort {
  std::string device;  // "mlx5_0"
  int port = 1;
  std::string switch_name;        // "leaf-07"
  std::string switch_port;        // "17" or "1/17"
  std::string cable;              // cable id printed on the label
  double expected_rate_gbps = 0;  // 0 = use Topology::expected_ib_rate_gbps
};

// Names where a port's cable goes as component keys ("switch", "switch_port", "cable"; empty
// fields are left out): the keys the fabric detectors and the fleet read the placement from.
void AddPlacementKeys(const TopoIbPort& port, std::map<std::string, std::string>& keys);

// A PCIe slot (by sysfs slot name and/or BDF) and the riser that carries it.
struct TopoPcieSlot {
  std::string slot;  // /sys/bus/pci/slots/<name>
  std::string bdf;   // alternatively the device or bridge BDF
  std::string riser;
};

struct Topology {
  std::string node;
  double expected_ib_rate_gbps = 0;  // 0 = unknown
  std::vector<TopoGpu> gpus;
  std::vector<TopoNvswitch> nvswitches;
  std::vector<TopoIbPort> ib_ports;
  std::vector<TopoPcieSlot> pcie_slots;

  // Look-ups; nullptr / "" when the file does not say.
  const TopoNvlink* FindNvlink(int gpu, int link) const;
  // Every GPU link that lands on `nvswitch` port `port`, as (gpu index, link).
  std::vector<std::pair<int, int>> GpuLinksOnSwitchPort(std::string_view nvswitch, int port) const;
  const TopoIbPort* FindIbPort(std::string_view device, int port) const;
  const TopoIbPort* FindIbBySwitchPort(std::string_view switch_name, std::string_view switch_port) const;
  // The expected rate for an HCA port (per-port value, else the node default; 0 = unknown).
  double ExpectedIbRate(std::string_view device, int port) const;
  // Riser for a slot name or a BDF ("" when unknown).
  std::string RiserFor(std::string_view slot, std::string_view bdf) const;
  // Resolves an NVSwitch by name or BDF to its name ("" when unknown).
  std::string NvswitchName(std::string_view name_or_bdf) const;
};

// Limits that keep a hostile file from exhausting memory.
inline constexpr size_t kMaxTopologyBytes = 4 << 20;
inline constexpr size_t kMaxTopologyEntries = 65536;

// Parses the JSON text. kCorrupt with the offending key/path on malformed input,
// wrong types, unknown keys or out-of-range numbers; kInvalidArgument when over the limits.
Result<Topology> ParseTopology(std::string_view text);

}  // namespace faultline
