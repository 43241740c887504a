#include "policy/plans.h"

#include <algorithm>
#include <array>

#include "policy/rules.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;
using enum ActionClass;
using enum When;
// On-call (the webhook) hears of every hardware or facility diagnosis that is more than
// watched or plans anything (rules.cc): the last step of every such row, which
// RenderPlanMarkdown states, rather than a row entry, so no row can forget it.

constexpr PlanStep kPsuSteps[] = {
    {kDrain, kCriticalOrSlowsJobs}, {kFacilityTicket, kRecommended}, {kRmaBundle, kRecommended}};
constexpr PlanStep kPowerInsufficientSteps[] = {{kDrain, kSlowsJobs}, {kFacilityTicket, kAlways}};
constexpr PlanStep kVoltageSteps[] = {{kDrain, kSlowsJobs}, {kFacilityTicket, kAlways}};
constexpr PlanStep kInletSteps[] = {{kDrain, kCriticalOrSlowsJobs}, {kFacilityTicket, kAlways}};
constexpr PlanStep kCoolingSteps[] = {{kDrain, kCriticalOrSlowsJobs}, {kFacilityTicket, kAlways}};
constexpr PlanStep kLeakSteps[] = {{kDrain, kAlways}, {kFacilityTicket, kAlways}};
constexpr PlanStep kSbeAgingSteps[] = {{kRmaBundle, kRecommended}};
constexpr PlanStep kHbmUeSteps[] = {{kDrain, kRecommended}, {kResetGpu, kRecommended}, {kRmaBundle, kRecommended}};
constexpr PlanStep kRemapPendingSteps[] = {{kDrain, kAlways}, {kResetGpu, kAlways}};
constexpr PlanStep kRemapExhaustedSteps[] = {{kDrain, kAlways}, {kRmaBundle, kAlways}};
constexpr PlanStep kSramSteps[] = {{kDrain, kAlways}, {kResetGpu, kRecommended}, {kRmaBundle, kRecommended}};
constexpr PlanStep kGspSteps[] = {{kDrain, kAlways}, {kResetGpu, kRecommended}, {kRebootNode, kRecommended}};
constexpr PlanStep kSlowsOnlySteps[] = {{kDrain, kSlowsJobs}};
constexpr PlanStep kOffBusSteps[] = {{kDrain, kAlways}, {kRebootNode, kRecommended}};
constexpr PlanStep kDriverSteps[] = {{kDrain, kRecommended}, {kRebootNode, kRecommended}};
constexpr PlanStep kTellOwnerSteps[] = {{kNotifyUser, kAlways}};
constexpr PlanStep kHostMemorySteps[] = {{kCordon, kRecommended}, {kDrain, kRecommended}};
constexpr PlanStep kLinkFaultSteps[] = {{kDrain, kCriticalOrSlowsJobs}};
constexpr PlanStep kDrainAlwaysSteps[] = {{kDrain, kAlways}};
constexpr PlanStep kNvswitchSteps[] = {{kDrain, kAlways}, {kRebootNode, kRecommended}};

using enum FaultClass;
// One row per fault class, in FaultClass order (tested).
constexpr std::array kTable{
    PlanRow{kPowerSupply, kPsuSteps,
            "a PSU that lost its input is the feed's (PDU, cord, breaker): a facility ticket; a PSU that failed with "
            "its input normal is a vendor part: replace it (RMA bundle). The node stays in service while redundancy "
            "holds and drains only when the fault is critical (redundancy gone, GPUs lost) or the power brake slows "
            "jobs"},
    PlanRow{kPowerInsufficient, kPowerInsufficientSteps,
            "the working PSUs cannot carry the load: restore capacity through facilities; drain when the brake slows "
            "jobs, since every job on the node then runs slow"},
    PlanRow{kVoltageOutOfRange, kVoltageSteps,
            "the input or a rail left its range: the feed is facilities'; drain when it slows jobs, never power-cycle "
            "during an input event"},
    PlanRow{kThermalInlet, kInletSteps,
            "hot inlet air is the room's: a facility ticket; drain when inlet is critical or the throttling slows "
            "jobs, before GPUs shut down"},
    PlanRow{kCoolingDegraded, kCoolingSteps,
            "the node's fans or loop lost capacity: a facility ticket; drain when critical or when throttled GPUs slow "
            "jobs"},
    PlanRow{kCoolantLeak, kLeakSteps,
            "liquid in the node: drain now and call the loop's owners; never wait for GPUs to fail"},
    PlanRow{kHbmSbeAging, kSbeAgingSteps,
            "corrected errors are corrected: keep the GPU in service; an RMA bundle only when the isolator says plan "
            "the RMA"},
    PlanRow{kHbmUncorrectable, kHbmUeSteps,
            "the evidence decides: a contained error (XID 94) restarts the job only; a DBE that needs a remap drains "
            "and resets the GPU; a GPU past repair drains and goes back to the vendor"},
    PlanRow{kRowRemapPending, kRemapPendingSteps,
            "a recorded remap takes effect only at a GPU reset: drain, then reset the GPU"},
    PlanRow{kRowRemapExhausted, kRemapExhaustedSteps,
            "no spare rows left: keep the GPU out of service (drain) and return it (RMA bundle); never reset and "
            "return"},
    PlanRow{kGpuSram, kSramSteps,
            "an uncorrectable on-chip SRAM error: drain; reset or return the GPU as the isolator recommends"},
    PlanRow{kGspFirmware, kGspSteps,
            "the GPU's firmware processor failed: drain, then reset the GPU or reboot the node as recommended"},
    PlanRow{kGpuThermal, kSlowsOnlySteps,
            "a hot GPU protects itself: watch it; drain only when its throttling slows jobs beyond the threshold"},
    PlanRow{kGpuPowerBrake, kSlowsOnlySteps,
            "the brake is a symptom of power: watch it; drain only when it slows jobs beyond the threshold"},
    PlanRow{kGpuFellOffBus, kOffBusSteps,
            "a GPU off the bus takes its jobs with it and a GPU reset cannot reach it: drain now, reboot the node as "
            "recommended"},
    PlanRow{kDriverFault, kDriverSteps,
            "the driver, not the hardware: drain and reboot when the isolator recommends it (a hang alone is watched)"},
    PlanRow{kUserApplication, kTellOwnerSteps,
            "a program's fault: tell the job's owner and nothing else; no drain, reset, reboot or RMA"},
    PlanRow{kHostMemory, kHostMemorySteps,
            "host DRAM errors: take the node out as the isolator recommends (an uncorrectable error), then replace "
            "the DIMM"},
    PlanRow{kPcieLinkDegraded, kLinkFaultSteps,
            "a degraded GPU link is planned work (reseat or replace the riser, cable or retimer at the next window); "
            "drain now when it is fatal or critical (AER fatal, link down) or slows jobs"},
    PlanRow{kNvlinkErrors, kLinkFaultSteps,
            "NVLinks on an HGX baseboard are board traces, not cables: when critical or slowing jobs drain, run the "
            "active diagnostics (dcgmi diag -r 2), then replace the GPU or the baseboard; never reseat"},
    PlanRow{kNvlinkDown, kDrainAlwaysSteps,
            "a downed NVLink leaves collectives slow or failing: drain, reset through the fabric manager or reboot, "
            "run the active diagnostics; on HGX replace the GPU or baseboard if it recurs"},
    PlanRow{kNvswitchFault, kNvswitchSteps,
            "a fatal NVSwitch error puts every job on the fabric at risk: drain, reboot as recommended"},
    PlanRow{kIbLinkErrors, kLinkFaultSteps,
            "a noisy port is planned work (reseat or swap the cable or transceiver); drain when it is critical or "
            "slows jobs"},
    PlanRow{kIbLinkDown, kLinkFaultSteps,
            "a downed port cuts a rail: drain when it is critical or slows jobs; reseat, swap, or replace the NIC"},
    PlanRow{kFabricCongestion,
            {},
            "congestion is the traffic's or the switch settings': never drain or replace a part; the network team "
            "reads the dashboard"},
    PlanRow{kWorkloadImbalance, kTellOwnerSteps,
            "slow steps with no hardware cause: tell the job's owner, with the comparison; nothing else"},
    PlanRow{kNone, {}, "nothing is wrong: nothing to do"},
};

bool SlowsJobs(const Diagnosis& d) { return d.slowdown_ratio >= kSlowsJobsRatio; }

std::string StepWords(const PlanStep& s) {
  std::string what;
  switch (s.action) {
    case kCordon:
      what = "cordon the node (no new work)";
      break;
    case kDrain:
      what = "drain the node";
      break;
    case kResetGpu:
      what = "reset the GPU";
      break;
    case kRebootNode:
      what = "reboot the node";
      break;
    case kRmaBundle:
      what = "RMA bundle for the vendor";
      break;
    case kFacilityTicket:
      what = "ticket to facilities";
      break;
    case kWebhook:
      what = "webhook to on-call";
      break;
    case kNotifyUser:
      what = "tell the job's owner";
      break;
  }
  return what + " (`" + std::string(actions::ToString(s.action)) + "`, " + std::string(ToString(s.when)) + ")";
}

}  // namespace

std::string_view ToString(When w) {
  switch (w) {
    case kAlways:
      return "always";
    case kCritical:
      return "when critical";
    case kSlowsJobs:
      return "when it slows jobs 20 % or more";
    case kCriticalOrSlowsJobs:
      return "when critical or slowing jobs 20 % or more";
    case kRecommended:
      return "when the isolator recommends it";
  }
  return "always";
}

std::span<const PlanRow> PlanTable() { return kTable; }

const PlanRow& PlanFor(FaultClass c) {
  for (const PlanRow& row : kTable) {
    if (row.fault == c) return row;
  }
  return kTable.back();  // kNone: unreachable while every class has a row (tested)
}

std::vector<ActionClass> ImpliedClasses(Action a) {
  switch (a) {
    case Action::kRma:
      return {kDrain, kRmaBundle};
    case Action::kDrain:
      return {kDrain};
    case Action::kCordon:
      return {kCordon};
    case Action::kRebootNode:
      return {kDrain, kRebootNode};
    case Action::kResetGpu:
      return {kDrain, kResetGpu};
    case Action::kFacilityTicket:
      return {kFacilityTicket};
    case Action::kNotifyUser:
      return {kNotifyUser};
    default:
      return {};
  }
}

bool StepApplies(const PlanStep& step, const Diagnosis& d) {
  // An echo or a symptom the isolator only watches (action monitor or less) acts only on
  // what it measurably does to jobs.
  const bool watched = d.action <= Action::kMonitor && !IsWorkloadsFault(d.fault_class);
  const bool critical = d.severity >= Severity::kCritical && !watched;
  switch (step.when) {
    case kAlways:
      return !watched;
    case kCritical:
      return critical;
    case kSlowsJobs:
      return SlowsJobs(d);
    case kCriticalOrSlowsJobs:
      return critical || SlowsJobs(d);
    case kRecommended: {
      const auto implied = ImpliedClasses(d.action);
      return std::find(implied.begin(), implied.end(), step.action) != implied.end();
    }
  }
  return false;
}

std::string RenderPlanMarkdown(FaultClass c) {
  const PlanRow& row = PlanFor(c);
  std::string out = "faultline's plan for `" + std::string(ToString(c)) + "`, in order:";
  if (row.steps.empty()) out += "\n- no node action";
  for (const PlanStep& s : row.steps) out += "\n- " + StepWords(s);
  if (!IsWorkloadsFault(c) && c != kNone) {
    out +=
        "\n- webhook to on-call (`webhook`): whenever the isolator recommends more than watching, or a step above "
        "applies";
  }
  out += "\n\nWhy: " + std::string(row.reason) + ".";
  return out;
}

}  // namespace faultline::policy
