// The AMD side of the simulated node (node.gpu_vendor: amd): 8 MI300X-like GPUs on XGMI.
// The node model's physics is vendor-neutral (temperatures, power, counters, links); this
// file supplies what differs:
//  - which fault kinds an AMD node takes (CheckAmdFault): not the NVIDIA-only ones (GSP,
//    NVSwitch, driver/NVML mismatch, NVLink down), and the AMD-only bad_page_threshold and
//    ring_timeout;
//  - the one-off consequences of a GPU fault in amdgpu's words (AmdStartFault): RAS lines,
//    bad pages saved / the threshold exceeded, "device lost from bus!", ring timeouts and
//    VM faults naming the process, GPU resets;
//  - the boot log (amdgpu init lines);
//  - AmdPublisher: the node's GPUs as the fake AMD SMI library's state file and as a fake
//    amdgpu sysfs tree (ras/*_err_count, gpu_vram_bad_pages, hwmon), written only when
//    what they show changed.
// Mapping of the model's GPU state: HBM (UMC) ce/ue = the SBE/DBE counters minus SRAM,
// on-chip (GFX) ue = the SRAM counter, XGMI (xgmi_wafl) ce = the links' CRC counts, bad
// pages R = retired DBE pages, P = a retirement pending, F = a failed remap; hotspot = the
// GPU temperature + 18 C (critical 105 C, where the model throttles), HBM = the memory
// temperature (critical 95 C); NVML's HW_THERMAL -> a socket-thermal violation,
// HW_POWER_BRAKE -> PROCHOT.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/node/node_scenario.h"

namespace faultline::sim {

struct NodeState;
struct NodeLayout;

inline constexpr int64_t kAmdVramBytes = 192LL << 30;                           // MI300X HBM3
inline constexpr int64_t kAmdBadPageThreshold = kAmdVramBytes / (100LL << 20);  // amdgpu auto: 1 page per 100 MB

// OK when `kind` fits a node of this vendor; else the reason ("needs node.gpu_vendor: amd").
Status CheckAmdFault(NodeFaultKind kind, bool amd_node);

using KmsgSink = std::function<void(double t, int level, std::string text)>;

// An AMD node's one-off consequences of `f` starting at `t`. True when handled (the GPU
// fault kinds); false for the vendor-neutral kinds the node model handles itself.
bool AmdStartFault(const NodeFault& f, double t, NodeState& state, const NodeLayout& layout, const KmsgSink& kmsg);

// The amdgpu lines of an AMD node's boot log: (uptime seconds, text).
std::vector<std::pair<double, std::string>> AmdBootLines(const NodeLayout& layout);

class AmdPublisher {
 public:
  // Writes under `dir` (amdsmi-state.json) and `sysfs_root` (the cards, the threshold).
  static Result<std::unique_ptr<AmdPublisher>> Create(const std::string& dir, const std::string& sysfs_root);
  ~AmdPublisher();
  Status Publish(const NodeState& state, const NodeLayout& layout);
  const std::string& state_path() const { return state_path_; }
  uint64_t writes() const { return writes_; }

 private:
  AmdPublisher(std::string state_path, std::string sysfs_root)
      : state_path_(std::move(state_path)), sysfs_root_(std::move(sysfs_root)) {}
  std::string state_path_, sysfs_root_;
  std::string last_state_;
  std::vector<std::string> last_cards_;
  uint64_t writes_ = 0;
};

}  // namespace faultline::sim
