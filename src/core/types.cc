#include "core/types.h"

#include <array>
#include <utility>

namespace faultline {
namespace {

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

template <typename E, size_t N>
std::string_view NameOf(const NameTable<E, N>& table, E v) {
  for (const auto& [e, name] : table) {
    if (e == v) return name;
  }
  return "unknown";
}

template <typename E, size_t N>
std::optional<E> ValueOf(const NameTable<E, N>& table, std::string_view s) {
  for (const auto& [e, name] : table) {
    if (name == s) return e;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::vector<E> ValuesOf(const NameTable<E, N>& table) {
  std::vector<E> out;
  for (const auto& entry : table) out.push_back(entry.first);
  return out;
}

constexpr NameTable<Layer, 5> kLayers{{
    {Layer::kOob, "oob"},
    {Layer::kGpu, "gpu"},
    {Layer::kOs, "os"},
    {Layer::kFabric, "fabric"},
    {Layer::kWorkload, "workload"},
}};

constexpr NameTable<Source, 10> kSources{{
    {Source::kRedfish, "redfish"},
    {Source::kNvml, "nvml"},
    {Source::kDcgmExporter, "dcgm-exporter"},
    {Source::kKmsg, "kmsg"},
    {Source::kSysfs, "sysfs"},
    {Source::kIpmi, "ipmi"},
    {Source::kReplay, "replay"},
    {Source::kWorkload, "workload"},
    {Source::kSim, "sim"},
    {Source::kAmdSmi, "amdsmi"},
}};

constexpr NameTable<ObsKind, 61> kObsKinds{{
    {ObsKind::kXid, "xid"},
    {ObsKind::kSxid, "sxid"},
    {ObsKind::kXidRecoveryAction, "xid_recovery_action"},
    {ObsKind::kGpuFellOffBus, "gpu_fell_off_bus"},
    {ObsKind::kPcieAer, "pcie_aer"},
    {ObsKind::kHostMemoryError, "host_memory_error"},
    {ObsKind::kAppFault, "app_fault"},
    {ObsKind::kKernelHang, "kernel_hang"},
    {ObsKind::kDriverError, "driver_error"},
    {ObsKind::kNicEvent, "nic_event"},
    {ObsKind::kAmdgpuEvent, "amdgpu_event"},
    {ObsKind::kSelEntry, "sel_entry"},
    {ObsKind::kPsuState, "psu_state"},
    {ObsKind::kTemperature, "temperature"},
    {ObsKind::kVoltage, "voltage"},
    {ObsKind::kPower, "power"},
    {ObsKind::kPowerCapacity, "power_capacity"},
    {ObsKind::kFanSpeed, "fan_speed"},
    {ObsKind::kFanState, "fan_state"},
    {ObsKind::kCoolantTemp, "coolant_temp"},
    {ObsKind::kCoolantFlow, "coolant_flow"},
    {ObsKind::kPumpState, "pump_state"},
    {ObsKind::kLeak, "leak"},
    {ObsKind::kHealth, "health"},
    {ObsKind::kEccSbe, "ecc_sbe"},
    {ObsKind::kEccDbe, "ecc_dbe"},
    {ObsKind::kRowRemapCorrectable, "row_remap_correctable"},
    {ObsKind::kRowRemapUncorrectable, "row_remap_uncorrectable"},
    {ObsKind::kRowRemapPending, "row_remap_pending"},
    {ObsKind::kRowRemapFailure, "row_remap_failure"},
    {ObsKind::kRetiredPages, "retired_pages"},
    {ObsKind::kRetiredPagesPending, "retired_pages_pending"},
    {ObsKind::kClockThrottle, "clock_throttle"},
    {ObsKind::kClock, "clock"},
    {ObsKind::kPowerLimit, "power_limit"},
    {ObsKind::kGpuLost, "gpu_lost"},
    {ObsKind::kGpuIdentity, "gpu_identity"},
    {ObsKind::kPcieReplay, "pcie_replay"},
    {ObsKind::kPcieLinkWidth, "pcie_link_width"},
    {ObsKind::kPcieLinkSpeed, "pcie_link_speed"},
    {ObsKind::kPcieLinkGen, "pcie_link_gen"},
    {ObsKind::kNvlinkState, "nvlink_state"},
    {ObsKind::kNvlinkCrcFlit, "nvlink_crc_flit"},
    {ObsKind::kNvlinkCrcData, "nvlink_crc_data"},
    {ObsKind::kNvlinkReplay, "nvlink_replay"},
    {ObsKind::kNvlinkRecovery, "nvlink_recovery"},
    {ObsKind::kIbPortState, "ib_port_state"},
    {ObsKind::kIbRate, "ib_rate"},
    {ObsKind::kIbSymbolError, "ib_symbol_error"},
    {ObsKind::kIbLinkErrorRecovery, "ib_link_error_recovery"},
    {ObsKind::kIbLinkDowned, "ib_link_downed"},
    {ObsKind::kIbRcvError, "ib_rcv_error"},
    {ObsKind::kIbLinkIntegrity, "ib_link_integrity"},
    {ObsKind::kIbXmitDiscards, "ib_xmit_discards"},
    {ObsKind::kRoceCounter, "roce_counter"},
    {ObsKind::kEthCounter, "eth_counter"},
    {ObsKind::kEthLinkState, "eth_link_state"},
    {ObsKind::kEthSpeed, "eth_speed"},
    {ObsKind::kStepTime, "step_time"},
    {ObsKind::kThroughput, "throughput"},
    {ObsKind::kOther, "other"},
}};

constexpr NameTable<Severity, 4> kSeverities{{
    {Severity::kInfo, "info"},
    {Severity::kWarning, "warning"},
    {Severity::kCritical, "critical"},
    {Severity::kFatal, "fatal"},
}};

constexpr NameTable<FaultClass, 27> kFaultClasses{{
    {FaultClass::kPowerSupply, "power_supply"},
    {FaultClass::kPowerInsufficient, "power_insufficient"},
    {FaultClass::kVoltageOutOfRange, "voltage_out_of_range"},
    {FaultClass::kThermalInlet, "thermal_inlet"},
    {FaultClass::kCoolingDegraded, "cooling_degraded"},
    {FaultClass::kCoolantLeak, "coolant_leak"},
    {FaultClass::kHbmSbeAging, "hbm_sbe_aging"},
    {FaultClass::kHbmUncorrectable, "hbm_uncorrectable"},
    {FaultClass::kRowRemapPending, "row_remap_pending"},
    {FaultClass::kRowRemapExhausted, "row_remap_exhausted"},
    {FaultClass::kGpuSram, "gpu_sram"},
    {FaultClass::kGspFirmware, "gsp_firmware"},
    {FaultClass::kGpuThermal, "gpu_thermal"},
    {FaultClass::kGpuPowerBrake, "gpu_power_brake"},
    {FaultClass::kGpuFellOffBus, "gpu_fell_off_bus"},
    {FaultClass::kDriverFault, "driver_fault"},
    {FaultClass::kUserApplication, "user_application"},
    {FaultClass::kHostMemory, "host_memory"},
    {FaultClass::kPcieLinkDegraded, "pcie_link_degraded"},
    {FaultClass::kNvlinkErrors, "nvlink_errors"},
    {FaultClass::kNvlinkDown, "nvlink_down"},
    {FaultClass::kNvswitchFault, "nvswitch_fault"},
    {FaultClass::kIbLinkErrors, "ib_link_errors"},
    {FaultClass::kIbLinkDown, "ib_link_down"},
    {FaultClass::kFabricCongestion, "fabric_congestion"},
    {FaultClass::kWorkloadImbalance, "workload_imbalance"},
    {FaultClass::kNone, "none"},
}};

constexpr NameTable<Action, 12> kActions{{
    {Action::kNone, "none"},
    {Action::kMonitor, "monitor"},
    {Action::kNotifyUser, "notify_user"},
    {Action::kRestartJob, "restart_job"},
    {Action::kDriverUpgrade, "driver_upgrade"},
    {Action::kReseatOrReplaceLink, "reseat_or_replace_link"},
    {Action::kFacilityTicket, "facility_ticket"},
    {Action::kResetGpu, "reset_gpu"},
    {Action::kRebootNode, "reboot_node"},
    {Action::kCordon, "cordon"},
    {Action::kDrain, "drain"},
    {Action::kRma, "rma"},
}};

constexpr NameTable<ComponentType, 13> kComponentTypes{{
    {ComponentType::kGpu, "gpu"},
    {ComponentType::kPsu, "psu"},
    {ComponentType::kFan, "fan"},
    {ComponentType::kSensor, "sensor"},
    {ComponentType::kCoolant, "coolant"},
    {ComponentType::kPcie, "pcie"},
    {ComponentType::kNvlink, "nvlink"},
    {ComponentType::kNvswitch, "nvswitch"},
    {ComponentType::kIb, "ib"},
    {ComponentType::kChassis, "chassis"},
    {ComponentType::kHost, "host"},
    {ComponentType::kRoce, "roce"},
    {ComponentType::kEth, "eth"},
}};

}  // namespace

std::string ComponentRef::Id() const {
  std::string id(ToString(type));
  if (!name.empty()) {
    id += '/';
    id += name;
  }
  return id;
}

std::string_view ToString(Layer v) { return NameOf(kLayers, v); }
std::string_view ToString(Source v) { return NameOf(kSources, v); }
std::string_view ToString(ObsKind v) { return NameOf(kObsKinds, v); }
std::string_view ToString(Severity v) { return NameOf(kSeverities, v); }
std::string_view ToString(FaultClass v) { return NameOf(kFaultClasses, v); }
std::string_view ToString(Action v) { return NameOf(kActions, v); }
std::string_view ToString(ComponentType v) { return NameOf(kComponentTypes, v); }
std::optional<Layer> ParseLayer(std::string_view s) { return ValueOf(kLayers, s); }
std::optional<Source> ParseSource(std::string_view s) { return ValueOf(kSources, s); }
std::optional<ObsKind> ParseObsKind(std::string_view s) { return ValueOf(kObsKinds, s); }
std::optional<Severity> ParseSeverity(std::string_view s) { return ValueOf(kSeverities, s); }
std::optional<FaultClass> ParseFaultClass(std::string_view s) { return ValueOf(kFaultClasses, s); }
std::optional<Action> ParseAction(std::string_view s) { return ValueOf(kActions, s); }
std::optional<ComponentType> ParseComponentType(std::string_view s) { return ValueOf(kComponentTypes, s); }

const std::vector<FaultClass>& AllFaultClasses() {
  static const std::vector<FaultClass> all = ValuesOf(kFaultClasses);
  return all;
}
const std::vector<Action>& AllActions() {
  static const std::vector<Action> all = ValuesOf(kActions);
  return all;
}
const std::vector<ObsKind>& AllObsKinds() {
  static const std::vector<ObsKind> all = ValuesOf(kObsKinds);
  return all;
}

std::optional<ComponentRef> ParseComponentId(std::string_view id) {
  const size_t slash = id.find('/');
  auto type = ParseComponentType(id.substr(0, slash));
  if (!type) return std::nullopt;
  ComponentRef ref;
  ref.type = *type;
  if (slash != std::string_view::npos) ref.name = std::string(id.substr(slash + 1));
  return ref;
}

int64_t SortTimeNs(const Observation& obs) {
  if (obs.time_ns != 0) return obs.time_ns;
  if (obs.mono_us) return *obs.mono_us * 1000;
  return 0;
}

ComponentRef GpuComponent(std::string name) { return ComponentRef{ComponentType::kGpu, std::move(name), {}}; }
ComponentRef PcieComponent(std::string bdf) {
  ComponentRef ref{ComponentType::kPcie, bdf, {}};
  ref.keys["bdf"] = std::move(bdf);
  return ref;
}
ComponentRef HostComponent(std::string name) { return ComponentRef{ComponentType::kHost, std::move(name), {}}; }

bool IsKernelEventKind(ObsKind k) {
  switch (k) {
    case ObsKind::kXid:
    case ObsKind::kSxid:
    case ObsKind::kXidRecoveryAction:
    case ObsKind::kGpuFellOffBus:
    case ObsKind::kPcieAer:
    case ObsKind::kHostMemoryError:
    case ObsKind::kAppFault:
    case ObsKind::kKernelHang:
    case ObsKind::kDriverError:
    case ObsKind::kNicEvent:
    case ObsKind::kAmdgpuEvent:
      return true;
    default:
      return false;
  }
}

}  // namespace faultline
