#include "policy/rules.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;

void Add(std::vector<Proposal>& out, ActionClass c, const char* rule) { out.push_back({c, rule, false, {}}); }
void Refuse(std::vector<Proposal>& out, ActionClass c, const char* rule, std::string why) {
  out.push_back({c, rule, true, std::move(why)});
}

// The classes the isolator's recommended action implies for a hardware fault.
std::vector<ActionClass> ImpliedClasses(Action a) {
  switch (a) {
    case Action::kRma:
      return {ActionClass::kDrain, ActionClass::kRmaBundle};
    case Action::kDrain:
      return {ActionClass::kDrain};
    case Action::kCordon:
      return {ActionClass::kCordon};
    case Action::kRebootNode:
      return {ActionClass::kDrain, ActionClass::kRebootNode};
    case Action::kResetGpu:
      return {ActionClass::kDrain, ActionClass::kResetGpu};
    case Action::kFacilityTicket:
      return {ActionClass::kFacilityTicket};
    case Action::kNotifyUser:
      return {ActionClass::kNotifyUser};
    default:
      return {};
  }
}

void PlanUserProgram(const Diagnosis& d, std::vector<Proposal>& out) {
  Add(out, ActionClass::kNotifyUser, "user_program_notify");
  for (ActionClass c : ImpliedClasses(d.action)) {
    if (c == ActionClass::kNotifyUser) continue;
    Refuse(out, c, "user_program_never_disruptive",
           "a user-program fault (" + std::string(ToString(d.fault_class)) + ") is never answered with " +
               std::string(ToString(c)));
  }
}

void PlanPhysical(const Diagnosis& d, std::vector<Proposal>& out) {
  Add(out, ActionClass::kFacilityTicket, "physical_cause_facility_ticket");
  const bool gpu_part = d.component.type == ComponentType::kGpu;
  for (ActionClass c : ImpliedClasses(d.action)) {
    switch (c) {
      case ActionClass::kFacilityTicket:
        break;
      case ActionClass::kResetGpu:
      case ActionClass::kRebootNode:
        Refuse(out, c, "physical_cause_never_gpu_action",
               "a physical cause (" + std::string(ToString(d.fault_class)) + ") is not fixed by " +
                   std::string(ToString(c)));
        break;
      case ActionClass::kRmaBundle:
        if (gpu_part) {
          Refuse(out, c, "physical_cause_never_gpu_rma",
                 "a physical cause (" + std::string(ToString(d.fault_class)) + ") never returns a GPU");
        } else {
          Add(out, c, "physical_part_rma");  // the failing part itself (a PSU), not a GPU
        }
        break;
      case ActionClass::kDrain:
      case ActionClass::kCordon:
        // Only when the isolator asked to take the node out (a leak), not as an RMA's drain.
        if (d.action == Action::kDrain || d.action == Action::kCordon) Add(out, c, "physical_cause_take_node_out");
        break;
      default:
        Add(out, c, "recommended_action");
    }
  }
}

}  // namespace

bool IsPhysicalCause(FaultClass c) {
  switch (c) {
    case FaultClass::kPowerSupply:
    case FaultClass::kPowerInsufficient:
    case FaultClass::kVoltageOutOfRange:
    case FaultClass::kThermalInlet:
    case FaultClass::kCoolingDegraded:
    case FaultClass::kCoolantLeak:
      return true;
    default:
      return false;
  }
}

bool IsUserProgramFault(FaultClass c) { return c == FaultClass::kUserApplication; }

std::vector<Proposal> PlanActions(const Diagnosis& d) {
  std::vector<Proposal> out;
  if (d.fault_class == FaultClass::kNone || d.action <= Action::kMonitor) return out;
  if (IsUserProgramFault(d.fault_class)) {
    PlanUserProgram(d, out);
    return out;
  }
  if (IsPhysicalCause(d.fault_class)) {
    PlanPhysical(d, out);
  } else {
    for (ActionClass c : ImpliedClasses(d.action)) Add(out, c, "recommended_action");
  }
  // The on-call channel hears of every actionable hardware or facility diagnosis.
  Add(out, ActionClass::kWebhook, "notify_on_call");
  return out;
}

bool WarrantsDrain(const std::vector<Proposal>& plan) {
  for (const Proposal& p : plan) {
    if (!p.refused && (p.action_class == ActionClass::kDrain || p.action_class == ActionClass::kCordon)) return true;
  }
  return false;
}

}  // namespace faultline::policy
