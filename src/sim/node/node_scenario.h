// Node scenario files for `faultline sim` and `faultline bench accuracy`
// (format: docs/scenarios.md): the node's shape, its background noise, a timeline of
// injected faults, and the ground truth a correct diagnosis must match.
//
// ParseNodeScenario is pure (no I/O): YAML or JSON text in, a checked scenario out.
// Unknown keys, unknown fault kinds, missing parameters and out-of-range values are
// errors (kCorrupt, naming the fault index and key), never guesses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace faultline::sim {

// The node under simulation: an HGX-like 8-GPU box unless told otherwise.
struct NodeSpec {
  int gpus = 8;                  // 1..8 (the fake PCIe tree holds 8)
  int psus = 6;                  // power supplies installed
  double psu_capacity_w = 3300;  // each
  double gpu_busy_w = 700;       // per GPU under a training load
  double host_w = 4600;          // CPUs, NICs, NVSwitches, fans, drives
  int fans = 6;
  bool bmc = true;               // false: no Redfish source (out-of-band blind)
  bool row_remap = true;         // Ampere and later; false = page retirement
  bool psu_alert_brakes = true;  // a PSU in predictive-failure alert asserts PWRBRK (board option)
  double inlet_c = 24;
  double coolant_supply_c = 32;
  double coolant_flow_lpm = 60;
  // "infiniband" (default) or "roce": the 8 HCAs are RoCE NICs (link layer Ethernet, a
  // netdev each, RoCE hw_counters, PFC/ethtool statistics; sim/node/roce_model.h).
  std::string fabric = "infiniband";
  bool roce() const { return fabric == "roce"; }
  // "nvidia" (HGX, NVML, NVRM lines) or "amd" (MI300X-like GPUs on XGMI, AMD SMI, amdgpu
  // sysfs and kernel lines; sim/node/amd_node.h).
  std::string gpu_vendor = "nvidia";
  bool amd() const { return gpu_vendor == "amd"; }
  bool amdsmi = true;  // AMD node: the agent loads the fake AMD SMI; false = the amdgpu sysfs files only
};

// Background noise a healthy node shows (rates are per hour).
struct NoiseSpec {
  double sbe_per_gpu_hour = 0.3;      // benign correctable ECC
  double user_xid_per_hour = 0;       // programs faulting (XID 13/31/43) on random GPUs
  double aer_corrected_per_hour = 2;  // corrected PCIe errors on random endpoints
  double temp_wander_c = 1.0;         // amplitude of temperature drift
  double step_jitter = 0.02;          // relative noise of the job's step time
  double roce_ecn_per_s = 50;         // RoCE nodes: background ECN marks per port per second (CNPs follow)
};

struct WorkloadSpec {
  bool enabled = true;  // a training job reporting its step times
  double step_s = 1.0;  // healthy step time
  std::string job = "llm-pretrain";
};

// The agent's schedule in a lockstep run (seconds of scenario time). Absent from a
// scenario: the lockstep's defaults (LockstepOptions). Multi-day cases state a schedule
// closer to a deployed agent's, so a run costs what its polls and evaluations cost.
struct AgentSchedule {
  double fast_interval_s = 1;    // kmsg, workload and evaluation
  double sample_interval_s = 5;  // NVML, sysfs
  double redfish_interval_s = 10;
  double tick_s = 0.25;  // lockstep and model resolution
};

// What a correct diagnosis says. `components` lists the ids that name the faulty part
// (gpu/3, psu/PSU2, pcie/0000:1b:00.0, ...); any of them matches. Empty for none and
// workload_imbalance.
// Another incident a scenario holds besides its truth (a user program's bug before the host
// fault that matters, a link's errors before it goes down, a node built without PSU
// redundancy): a decision taken for it from `start_s` on is right, not "for a wrong
// diagnosis". The final answer is still the truth. `why` says what it is (required).
struct OtherIncident {
  FaultClass fault_class = FaultClass::kNone;
  double start_s = 0;
  std::string why;
};

struct Truth {
  FaultClass fault_class = FaultClass::kNone;
  std::vector<std::string> components;
  Action action = Action::kNone;
  double start_s = 0;  // when the fault began (scenario seconds)
  bool slow = false;   // the fault slows the job down
  std::vector<OtherIncident> also;
};

enum class NodeFaultKind {
  kPsuFail,
  kPsuDegrade,
  kFeedLoss,
  kInputSag,
  kPowerLoad,
  kInletHigh,
  kFanFail,
  kPumpFail,
  kCoolantLeak,
  kGpuCooling,
  kSbeStorm,
  kDbe,
  kRemapFailure,
  kSramUncorrectable,
  kGspTimeout,
  kFallOffBus,
  kDriverMismatch,
  kUserXid,
  kSegfault,
  kHostMce,
  kPcieDowntrain,
  kPcieReplay,
  kNicAer,
  kNvlinkCrc,
  kNvlinkDown,
  kNvswitchFatal,
  kIbErrors,
  kIbDown,
  kStraggler,
  kJobStop,
  kKmsg,
  kSel,
  // RoCE nodes only (node.fabric: roce).
  kRoceErrors,     // hca, value: CRC errors per minute on the port, with the retransmissions they cause
  kPfcStorm,       // value: PFC pause frames per second (hca: one port; absent: every port), with an ECN/CNP surge
  kLinkDowntrain,  // hca, value: the speed it retrains at in Gb/s (default 200)
  // AMD nodes only (node.gpu_vendor: amd).
  kBadPageThreshold,  // gpu, value: pages retired at once (default: the threshold + 1)
  kRingTimeout,       // gpu: a job hangs a ring; `text` = the process named (default python3)
};

struct NodeFault {
  NodeFaultKind kind = NodeFaultKind::kKmsg;
  double at = 0;                // scenario seconds the fault begins
  std::optional<double> until;  // when it ends (absent: lasts)
  // Parameters; which apply depends on the kind (docs/scenarios.md).
  int gpu = -1, link = -1, psu = -1, fan = -1, nvswitch = -1, hca = -1, nic = -1;
  std::vector<int> psus;
  std::vector<int> gpus;
  double value = 0;    // celsius, volts, watts, rate, factor: per kind
  double ramp_s = 0;   // seconds to reach `value` (0 = at once)
  int count = 1;       // repeated events (user_xid)
  double every_s = 0;  // spacing of repeated events
  int xid = 13;
  int width = 0;  // pcie_downtrain
  double speed_gts = 0;
  std::string text;  // kmsg / sel message
  std::string severity = "Warning";
};

struct NodeScenario {
  std::string name;
  std::string description;
  double duration_s = 600;
  uint64_t seed = 1;
  NodeSpec node;
  NoiseSpec noise;
  WorkloadSpec workload;
  std::optional<AgentSchedule> agent;  // `agent:`; absent = the lockstep's defaults
  Truth truth;
  std::vector<NodeFault> faults;  // sorted by `at` (stable)
};

std::string_view ToString(NodeFaultKind kind);
std::optional<NodeFaultKind> ParseNodeFaultKind(std::string_view name);

// A scenario name is a plain file name: it names the run's work directory
// (<workdir>/<name>-XXXXXX) and appears in reports. Letters, digits, '-', '_', '.', at most
// kMaxScenarioNameBytes, not starting with '.' or '-'. kCorrupt naming "scenario.name" otherwise.
constexpr size_t kMaxScenarioNameBytes = 128;
Status CheckScenarioName(std::string_view name);

Result<NodeScenario> ParseNodeScenario(std::string_view text);
// Reads and parses a file (kNotFound / kCorrupt naming the path).
Result<NodeScenario> LoadNodeScenario(const std::string& path);

}  // namespace faultline::sim
