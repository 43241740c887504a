#include "engine/isolate/causal_rules.h"

#include <array>

namespace faultline::isolate {
namespace {

using enum FaultClass;
constexpr Severity kWarn = Severity::kWarning;
constexpr Layer kGpuLayer = Layer::kGpu;

// Facts, in the order docs/isolator.md cites them.
constexpr std::string_view kSagDropsPsu =
    "an input-voltage sag makes PSUs drop out and lowers the capacity they deliver (Redfish Power registry: "
    "VoltageBelow*/LossOfInputPower precede PowerSupplyFailed)";
constexpr std::string_view kPsuLossCapacity = "a lost PSU lowers the chassis power capacity below the load";
constexpr std::string_view kPowerBrake =
    "HW_POWER_BRAKE (clock event reason 0x80) is asserted by the board when PSUs cannot carry the load";
constexpr std::string_view kPowerBlind =
    "with no GPU telemetry the power brake cannot be seen; power loss under load throttles every GPU";
constexpr std::string_view kLeakCooling = "a coolant leak lowers flow and the loop's cooling capacity";
constexpr std::string_view kThermal =
    "GPU thermal slowdown (HW_THERMAL 0x40 / SW_THERMAL 0x20) follows hot inlet air, failed fans or a degraded "
    "coolant loop";
constexpr std::string_view kThermalBlind =
    "with no GPU telemetry the thermal slowdown cannot be seen; hot inlet or lost cooling throttles GPUs";
constexpr std::string_view kClocksSlow = "a throttled GPU runs at lower clocks, so every synchronous step waits for it";
constexpr std::string_view kPcieSlow =
    "a downtrained PCIe link or a replay storm lowers host-device bandwidth (SIGNALS: replay rate vs 1e-12 BER)";
constexpr std::string_view kNvlinkSlow = "NVLink CRC errors and replays retransmit flits, slowing collectives";
constexpr std::string_view kNvswitchLinks = "an NVSwitch fault shows as errors or downed links on its ports";
constexpr std::string_view kIbSlow = "IB symbol errors, link recovery or a downed port cut inter-node bandwidth";
constexpr std::string_view kCongestionSlow =
    "PFC pauses stop the port's lossless priority and ECN marks make senders cut their rate (CNPs): RDMA "
    "throughput drops with no part at fault (SIGNALS-ethernet-amd A5)";
constexpr std::string_view kAerOffBus =
    "XID 79 (fallen off the bus) with AER errors on its upstream port: the link failed";
constexpr std::string_view kSupplyOffBus =
    "a supply that loses its input (SEL/Redfish AC lost, input lost, input out of range) drops the GPUs it feeds "
    "off the bus within a second or two: one power fault, the GPUs are not at fault";
constexpr std::string_view kSupplyLinkDown =
    "a supply that loses its input takes the links of the devices it feeds down (surprise down) at the same moment";
constexpr std::string_view kLinkKillsApp =
    "after a fatal PCIe error on a GPU's link (surprise down, completion timeout, recovery failed) the program on "
    "that GPU sees XID 31/13/43 and the driver fails to reach it (XID 79/62/109)";
constexpr std::string_view kRemapDbe =
    "on GPUs with row remapping a DBE triggers a remap; pending until reset, the remap state decides (SIGNALS)";
constexpr std::string_view kSbeBeforeDbe = "SBEs that precede a DBE on the same GPU are part of the same memory fault";
constexpr std::string_view kDownAbsorbsErrors = "errors on a link or port precede it going down: one fault";
constexpr std::string_view kHwKillsApp =
    "after a GPU hardware fault (XID 48/63/64/79/94/95/119) the program on that GPU sees XID 13/31/43";
constexpr std::string_view kOffBusDriver = "after a GPU falls off the bus the driver fails to talk to it";
constexpr std::string_view kGpuStall = "a GPU that faults or is lost stalls the collectives of the job using it";

constexpr int64_t kSupplyWindowNs = 2LL * 1'000'000'000;  // "within a second or two"
// The kernel may print a link's AER lines just after the driver's "fallen off the bus";
// a link first seen degraded later than this after the fall is the fall's consequence.
constexpr int64_t kLinkLagNs = 1LL * 1'000'000'000;

constexpr std::array kRules{
    // Physical power: input sag -> PSU -> capacity -> power brake -> slow steps.
    CausalRule{kVoltageOutOfRange, kPowerSupply, Relation::kNode, false, Severity::kInfo, {}, kSagDropsPsu},
    CausalRule{kVoltageOutOfRange, kPowerInsufficient, Relation::kNode, false, Severity::kInfo, {}, kSagDropsPsu},
    CausalRule{kPowerSupply, kPowerInsufficient, Relation::kNode, false, Severity::kInfo, {}, kPsuLossCapacity},
    CausalRule{kVoltageOutOfRange, kGpuPowerBrake, Relation::kNode, false, Severity::kInfo, {}, kPowerBrake},
    CausalRule{kPowerSupply, kGpuPowerBrake, Relation::kNode, false, Severity::kInfo, {}, kPowerBrake},
    CausalRule{kPowerInsufficient, kGpuPowerBrake, Relation::kNode, false, Severity::kInfo, {}, kPowerBrake},
    CausalRule{kVoltageOutOfRange, kSlowdown, Relation::kNode, false, Severity::kInfo, kGpuLayer, kPowerBlind},
    CausalRule{kPowerSupply, kSlowdown, Relation::kNode, false, Severity::kInfo, kGpuLayer, kPowerBlind},
    CausalRule{kPowerInsufficient, kSlowdown, Relation::kNode, false, Severity::kInfo, kGpuLayer, kPowerBlind},
    // Physical cooling: leak -> loop -> GPU thermal slowdown -> slow steps.
    CausalRule{kCoolantLeak, kCoolingDegraded, Relation::kNode, false, Severity::kInfo, {}, kLeakCooling},
    CausalRule{kCoolantLeak, kGpuThermal, Relation::kNode, false, Severity::kInfo, {}, kThermal},
    CausalRule{kCoolingDegraded, kGpuThermal, Relation::kNode, false, Severity::kInfo, {}, kThermal},
    CausalRule{kThermalInlet, kGpuThermal, Relation::kNode, false, Severity::kInfo, {}, kThermal},
    CausalRule{kCoolantLeak, kSlowdown, Relation::kNode, false, Severity::kInfo, kGpuLayer, kThermalBlind},
    CausalRule{kCoolingDegraded, kSlowdown, Relation::kNode, false, Severity::kInfo, kGpuLayer, kThermalBlind},
    CausalRule{kThermalInlet, kSlowdown, Relation::kNode, false, Severity::kInfo, kGpuLayer, kThermalBlind},
    // GPU throttling -> slow steps.
    CausalRule{kGpuPowerBrake, kSlowdown, Relation::kNode, false, Severity::kInfo, {}, kClocksSlow},
    CausalRule{kGpuThermal, kSlowdown, Relation::kNode, false, Severity::kInfo, {}, kClocksSlow},
    // Interconnect -> lower bandwidth -> slow steps.
    CausalRule{kPcieLinkDegraded, kSlowdown, Relation::kNode, false, kWarn, {}, kPcieSlow},
    CausalRule{kNvlinkErrors, kSlowdown, Relation::kNode, false, kWarn, {}, kNvlinkSlow},
    CausalRule{kNvlinkDown, kSlowdown, Relation::kNode, false, Severity::kInfo, {}, kNvlinkSlow},
    CausalRule{kNvswitchFault, kNvlinkErrors, Relation::kNode, false, Severity::kInfo, {}, kNvswitchLinks},
    CausalRule{kNvswitchFault, kNvlinkDown, Relation::kNode, false, Severity::kInfo, {}, kNvswitchLinks},
    CausalRule{kNvswitchFault, kSlowdown, Relation::kNode, false, Severity::kInfo, {}, kNvlinkSlow},
    CausalRule{kIbLinkErrors, kSlowdown, Relation::kNode, false, kWarn, {}, kIbSlow},
    CausalRule{kIbLinkDown, kSlowdown, Relation::kNode, false, Severity::kInfo, {}, kIbSlow},
    CausalRule{kFabricCongestion, kSlowdown, Relation::kNode, false, kWarn, {}, kCongestionSlow},
    CausalRule{
        kPcieLinkDegraded, kGpuFellOffBus, Relation::kAttached, false, Severity::kInfo, {}, kAerOffBus, 0, kLinkLagNs},
    // A fatal link error explains what the program and the driver saw on the GPU behind it.
    CausalRule{kPcieLinkDegraded,
               kUserApplication,
               Relation::kAttached,
               false,
               Severity::kCritical,
               {},
               kLinkKillsApp,
               0,
               kLinkLagNs},
    CausalRule{kPcieLinkDegraded,
               kDriverFault,
               Relation::kAttached,
               false,
               Severity::kCritical,
               {},
               kLinkKillsApp,
               0,
               kLinkLagNs},
    // A supply losing its input, then GPUs off the bus within seconds: one power fault.
    CausalRule{
        kPowerSupply, kGpuFellOffBus, Relation::kNode, false, Severity::kInfo, {}, kSupplyOffBus, kSupplyWindowNs},
    CausalRule{kVoltageOutOfRange,
               kGpuFellOffBus,
               Relation::kNode,
               false,
               Severity::kInfo,
               {},
               kSupplyOffBus,
               kSupplyWindowNs},
    CausalRule{
        kPowerSupply, kPcieLinkDegraded, Relation::kNode, false, Severity::kInfo, {}, kSupplyLinkDown, kSupplyWindowNs},
    CausalRule{kVoltageOutOfRange,
               kPcieLinkDegraded,
               Relation::kNode,
               false,
               Severity::kInfo,
               {},
               kSupplyLinkDown,
               kSupplyWindowNs},
    // One memory fault, one diagnosis.
    CausalRule{kRowRemapPending, kHbmUncorrectable, Relation::kSameComponent, false, Severity::kInfo, {}, kRemapDbe},
    CausalRule{kRowRemapExhausted, kHbmUncorrectable, Relation::kSameComponent, false, Severity::kInfo, {}, kRemapDbe},
    CausalRule{kRowRemapExhausted, kRowRemapPending, Relation::kSameComponent, false, Severity::kInfo, {}, kRemapDbe},
    CausalRule{kHbmUncorrectable, kHbmSbeAging, Relation::kSameComponent, false, Severity::kInfo, {}, kSbeBeforeDbe},
    CausalRule{kRowRemapPending, kHbmSbeAging, Relation::kSameComponent, false, Severity::kInfo, {}, kSbeBeforeDbe},
    CausalRule{kRowRemapExhausted, kHbmSbeAging, Relation::kSameComponent, false, Severity::kInfo, {}, kSbeBeforeDbe},
    // One link fault, one diagnosis.
    CausalRule{kNvlinkDown, kNvlinkErrors, Relation::kSameComponent, false, Severity::kInfo, {}, kDownAbsorbsErrors},
    CausalRule{kIbLinkDown, kIbLinkErrors, Relation::kSameComponent, false, Severity::kInfo, {}, kDownAbsorbsErrors},
    // A GPU hardware fault explains what the program and driver saw on that GPU.
    CausalRule{kHbmUncorrectable, kUserApplication, Relation::kSameComponent, false, Severity::kInfo, {}, kHwKillsApp},
    CausalRule{kRowRemapPending, kUserApplication, Relation::kSameComponent, false, Severity::kInfo, {}, kHwKillsApp},
    CausalRule{kRowRemapExhausted, kUserApplication, Relation::kSameComponent, false, Severity::kInfo, {}, kHwKillsApp},
    CausalRule{kGpuSram, kUserApplication, Relation::kSameComponent, false, Severity::kInfo, {}, kHwKillsApp},
    CausalRule{kGspFirmware, kUserApplication, Relation::kSameComponent, false, Severity::kInfo, {}, kHwKillsApp},
    CausalRule{kGpuFellOffBus, kUserApplication, Relation::kSameComponent, false, Severity::kInfo, {}, kHwKillsApp},
    CausalRule{kGpuFellOffBus, kDriverFault, Relation::kSameComponent, false, Severity::kInfo, {}, kOffBusDriver},
    // Weak: a faulting GPU stalls the job; used only when no direct cause fits.
    CausalRule{kHbmUncorrectable, kSlowdown, Relation::kNode, true, kWarn, {}, kGpuStall},
    CausalRule{kRowRemapPending, kSlowdown, Relation::kNode, true, kWarn, {}, kGpuStall},
    CausalRule{kRowRemapExhausted, kSlowdown, Relation::kNode, true, kWarn, {}, kGpuStall},
    CausalRule{kGpuSram, kSlowdown, Relation::kNode, true, kWarn, {}, kGpuStall},
    CausalRule{kGspFirmware, kSlowdown, Relation::kNode, true, kWarn, {}, kGpuStall},
    CausalRule{kGpuFellOffBus, kSlowdown, Relation::kNode, true, kWarn, {}, kGpuStall},
    CausalRule{kDriverFault, kSlowdown, Relation::kNode, true, kWarn, {}, kGpuStall},
};

}  // namespace

std::span<const CausalRule> CausalRules() { return kRules; }

Action DefaultAction(FaultClass cls) {
  switch (cls) {
    case kPowerSupply:
    case kHbmUncorrectable:
    case kRowRemapExhausted:
    case kGpuSram:
      return Action::kRma;
    case kPowerInsufficient:
    case kVoltageOutOfRange:
    case kThermalInlet:
    case kCoolingDegraded:
      return Action::kFacilityTicket;
    case kCoolantLeak:
    case kGpuFellOffBus:
    case kNvswitchFault:
      return Action::kDrain;
    case kRowRemapPending:
      return Action::kResetGpu;
    case kGspFirmware:
    case kDriverFault:
      return Action::kRebootNode;
    case kPcieLinkDegraded:
    case kNvlinkErrors:
    case kNvlinkDown:
    case kIbLinkErrors:
    case kIbLinkDown:
      return Action::kReseatOrReplaceLink;
    case kHostMemory:
      return Action::kCordon;
    case kUserApplication:
    case kWorkloadImbalance:
      return Action::kNotifyUser;
    case kHbmSbeAging:
    case kGpuThermal:
    case kGpuPowerBrake:
    case kFabricCongestion:  // the traffic or the fabric's ECN/PFC setup: no part to touch
      return Action::kMonitor;
    case kNone:
      return Action::kNone;
  }
  return Action::kNone;
}

bool IsSymptomClass(FaultClass cls) { return cls == kGpuPowerBrake || cls == kGpuThermal || cls == kSlowdown; }

bool IsUserClass(FaultClass cls) { return cls == kUserApplication || cls == kWorkloadImbalance; }

}  // namespace faultline::isolate
