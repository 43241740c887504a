// Plain data types that travel between faultline's stages (DESIGN.md section 1):
// sources emit Observations, detectors turn them into Findings, the isolator turns
// Findings into Diagnoses. Every type has a JSON round trip (see json.h) so each
// stage's output can be saved, replayed and compared.
//
// The enums are closed on purpose: the accuracy benchmark scores against FaultClass,
// and the policy reasons about Action. Extend them with care and keep the string
// tables in types.cc in step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline {

// The four telemetry layers plus the workload signal (slow steps).
enum class Layer { kOob, kGpu, kOs, kFabric, kWorkload };

// Where an observation came from.
enum class Source { kRedfish, kNvml, kDcgmExporter, kKmsg, kSysfs, kIpmi, kReplay, kWorkload, kSim, kAmdSmi };

// What an observation measures or reports. Counters carry their cumulative value;
// detectors compute rates from consecutive samples.
enum class ObsKind {
  // kernel log / driver
  kXid,
  kSxid,
  kXidRecoveryAction,
  kGpuFellOffBus,
  kPcieAer,
  kHostMemoryError,
  kAppFault,
  kKernelHang,
  kDriverError,
  kNicEvent,
  kAmdgpuEvent,  // an amdgpu driver line (RAS, reset, ring timeout): attrs event/block (docs/amd.md)
  // out-of-band
  kSelEntry,
  kPsuState,
  kTemperature,
  kVoltage,
  kPower,
  kPowerCapacity,
  kFanSpeed,
  kFanState,
  kCoolantTemp,
  kCoolantFlow,
  kPumpState,
  kLeak,
  kHealth,
  // GPU integrity
  kEccSbe,
  kEccDbe,
  kRowRemapCorrectable,
  kRowRemapUncorrectable,
  kRowRemapPending,
  kRowRemapFailure,
  kRetiredPages,
  kRetiredPagesPending,
  kClockThrottle,
  kClock,
  kPowerLimit,
  kGpuLost,
  kGpuIdentity,
  // interconnect
  kPcieReplay,
  kPcieLinkWidth,
  kPcieLinkSpeed,
  kPcieLinkGen,
  kNvlinkState,
  kNvlinkCrcFlit,
  kNvlinkCrcData,
  kNvlinkReplay,
  kNvlinkRecovery,
  kIbPortState,
  kIbRate,
  kIbSymbolError,
  kIbLinkErrorRecovery,
  kIbLinkDowned,
  kIbRcvError,
  kIbLinkIntegrity,
  kIbXmitDiscards,
  // RoCE / Ethernet (sources/ethernet): an RDMA port's hw_counters, an interface's
  // counters (sysfs, ethtool stats), its operstate/carrier and its negotiated speed.
  kRoceCounter,
  kEthCounter,
  kEthLinkState,
  kEthSpeed,
  // workload
  kStepTime,
  kThroughput,
  // anything a source wants to keep as evidence without a closer kind
  kOther,
};

enum class Severity { kInfo, kWarning, kCritical, kFatal };

enum class FaultClass {
  kPowerSupply,
  kPowerInsufficient,
  kVoltageOutOfRange,
  kThermalInlet,
  kCoolingDegraded,
  kCoolantLeak,
  kHbmSbeAging,
  kHbmUncorrectable,
  kRowRemapPending,
  kRowRemapExhausted,
  kGpuSram,
  kGspFirmware,
  kGpuThermal,
  kGpuPowerBrake,
  kGpuFellOffBus,
  kDriverFault,
  kUserApplication,
  kHostMemory,
  kPcieLinkDegraded,
  kNvlinkErrors,
  kNvlinkDown,
  kNvswitchFault,
  kIbLinkErrors,
  kIbLinkDown,
  // PFC pause storms, ECN/CNP surges without loss: the fabric or the traffic, not a part.
  kFabricCongestion,
  kWorkloadImbalance,
  kNone,
};

// Ordered from least to most disruptive; the isolator and policy rely on this order.
enum class Action {
  kNone,
  kMonitor,
  kNotifyUser,
  kRestartJob,
  kDriverUpgrade,
  kReseatOrReplaceLink,
  kFacilityTicket,
  kResetGpu,
  kRebootNode,
  kCordon,
  kDrain,
  kRma,
};

// The kinds of physical or logical part a finding can name (DESIGN.md "component").
// kRoce: an RDMA port whose link layer is Ethernet ("roce/mlx5_0/1"); kEth: an Ethernet
// interface ("eth/eth2").
enum class ComponentType {
  kGpu,
  kPsu,
  kFan,
  kSensor,
  kCoolant,
  kPcie,
  kNvlink,
  kNvswitch,
  kIb,
  kChassis,
  kHost,
  kRoce,
  kEth,
};

// A typed component reference: `type/name` is the canonical id ("gpu/3", "pcie/0000:3b:00.0",
// "nvlink/3/11"). `keys` carries every identity key known for it (uuid, serial, bdf, slot, ...),
// so evidence from different layers can land on the same part. Unknown keys stay absent.
struct ComponentRef {
  ComponentType type = ComponentType::kHost;
  std::string name;
  std::map<std::string, std::string> keys;

  std::string Id() const;
  bool operator==(const ComponentRef& o) const { return type == o.type && name == o.name && keys == o.keys; }
};

// One fact from one source at one time (DESIGN.md "Observation").
struct Observation {
  int64_t time_ns = 0;             // UTC nanoseconds; 0 = unknown
  std::optional<int64_t> mono_us;  // kernel monotonic microseconds since boot, when known
  std::optional<uint64_t> seq;     // source sequence number (kmsg SEQ, SEL Id), when known
  std::string node;
  Layer layer = Layer::kOs;
  ComponentRef component;
  ObsKind kind = ObsKind::kOther;
  std::optional<double> value;
  std::optional<int64_t> code;
  std::string text;
  Source source = Source::kKmsg;
  std::string raw;                           // original line or JSON fragment, kept as evidence
  std::map<std::string, std::string> attrs;  // parsed fields (pid, process, gpc, link, severity, ...)
  uint64_t count = 1;                        // identical observations folded into this one

  bool operator==(const Observation&) const = default;
};

// One line of an evidence chain: when, from where, what.
struct Evidence {
  int64_t time_ns = 0;             // UTC; 0 when only the kernel monotonic time is known
  std::optional<int64_t> mono_us;  // kernel monotonic time, when known
  Source source = Source::kKmsg;
  std::string component;  // canonical id
  std::string text;       // human-readable summary or the raw line
  uint64_t count = 1;
  bool operator==(const Evidence&) const = default;
};

// A detector's conclusion about one component (DESIGN.md "Finding").
struct Finding {
  Layer layer = Layer::kOs;
  ComponentRef component;
  FaultClass fault_class = FaultClass::kNone;
  Severity severity = Severity::kInfo;
  Action action = Action::kNone;
  double confidence = 0.0;  // 0..1
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  uint64_t count = 1;
  std::string summary;
  std::vector<Evidence> evidence;
  std::map<std::string, std::string> attrs;  // rule-specific facts (e.g. "sympathetic": "true")
  // The event's identity, set by the detector when it starts the finding and never changed
  // as the finding grows: the rule and the event's own identity (e.g. "xid13|<bdf>|<unit>"
  // plus the time of its first line), never evidence text. With layer, class and component
  // it tells findings apart across evaluations and restarts (daemon/pipeline.h FindingKey).
  // "" = the detector sets none (the pipeline then falls back to the first evidence line).
  std::string key;
  bool operator==(const Finding&) const = default;
};

// A layer the isolator ruled out, with what rules it out.
struct RuledOut {
  Layer layer = Layer::kOob;
  std::string reason;
  std::vector<Evidence> evidence;
  bool operator==(const RuledOut&) const = default;
};

// The isolator's answer for one root cause (DESIGN.md "Isolator").
struct Diagnosis {
  FaultClass fault_class = FaultClass::kNone;
  Layer layer = Layer::kOs;
  ComponentRef component;
  Action action = Action::kNone;
  double confidence = 0.0;
  Severity severity = Severity::kInfo;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  std::string summary;
  std::vector<Evidence> evidence;  // the chain, oldest first
  std::vector<RuledOut> ruled_out;
  std::vector<std::string> explains;  // symptoms this root cause explains
  // The worst slowdown of the job's steps this diagnosis explains (recent / baseline step
  // time, e.g. 2.0 = twice as slow); 0 when it explains no measured slowdown. The policy
  // drains for a hardware fault that slows jobs beyond its threshold (policy/plans.h).
  double slowdown_ratio = 0.0;
  bool operator==(const Diagnosis&) const = default;
};

// String names used in JSON and on the command line. Parse functions return nullopt
// for unknown names rather than guessing.
std::string_view ToString(Layer v);
std::string_view ToString(Source v);
std::string_view ToString(ObsKind v);
std::string_view ToString(Severity v);
std::string_view ToString(FaultClass v);
std::string_view ToString(Action v);
std::string_view ToString(ComponentType v);
std::optional<Layer> ParseLayer(std::string_view s);
std::optional<Source> ParseSource(std::string_view s);
std::optional<ObsKind> ParseObsKind(std::string_view s);
std::optional<Severity> ParseSeverity(std::string_view s);
std::optional<FaultClass> ParseFaultClass(std::string_view s);
std::optional<Action> ParseAction(std::string_view s);
std::optional<ComponentType> ParseComponentType(std::string_view s);

// Every value of each enum, for tables, tests and help text.
const std::vector<FaultClass>& AllFaultClasses();
const std::vector<Action>& AllActions();
const std::vector<ObsKind>& AllObsKinds();

// Parses "gpu/3" or "pcie/0000:3b:00.0" back into a reference (keys empty).
std::optional<ComponentRef> ParseComponentId(std::string_view id);

// The kinds the kernel log reports: events (a line happened), not sampled readings.
bool IsKernelEventKind(ObsKind k);

// Time used for ordering observations: UTC when known, else kernel monotonic time
// (as nanoseconds since boot), else 0.
int64_t SortTimeNs(const Observation& obs);

// Convenience constructors for the common component kinds.
ComponentRef GpuComponent(std::string name);
ComponentRef PcieComponent(std::string bdf);
ComponentRef HostComponent(std::string name = "");

}  // namespace faultline
