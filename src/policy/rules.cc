#include "policy/rules.h"

#include <algorithm>

#include "policy/plans.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;

void Add(std::vector<Proposal>& out, ActionClass c, const char* rule) { out.push_back({c, rule, false, {}}); }
void Refuse(std::vector<Proposal>& out, ActionClass c, const char* rule, std::string why) {
  out.push_back({c, rule, true, std::move(why)});
}

bool Planned(const std::vector<Proposal>& out, ActionClass c) {
  for (const Proposal& p : out) {
    if (p.action_class == c) return true;
  }
  return false;
}

// What the isolator recommended but the class's plan does not allow: stored as refused,
// so the ledger says why the recommendation was not followed.
void RefuseTheRest(const Diagnosis& d, const PlanRow& row, std::vector<Proposal>& out) {
  const std::string cls(ToString(d.fault_class));
  for (ActionClass c : ImpliedClasses(d.action)) {
    if (Planned(out, c)) continue;
    bool in_row = false;
    for (const PlanStep& s : row.steps) in_row |= s.action == c;
    if (in_row) continue;  // planned under a condition that does not hold now: not refused
    if (IsWorkloadsFault(d.fault_class)) {
      Refuse(out, c, "user_program_never_disruptive",
             "a user-program fault (" + cls + ") is never answered with " + std::string(ToString(c)));
    } else if (IsPhysicalCause(d.fault_class) && (c == ActionClass::kResetGpu || c == ActionClass::kRebootNode)) {
      Refuse(out, c, "physical_cause_never_gpu_action",
             "a physical cause (" + cls + ") is not fixed by " + std::string(ToString(c)));
    } else {
      Refuse(out, c, "not_in_plan",
             "the plan for " + cls + " does not " + std::string(ToString(c)) + ": " + std::string(row.reason));
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

bool IsWorkloadsFault(FaultClass c) { return c == FaultClass::kUserApplication || c == FaultClass::kWorkloadImbalance; }

std::vector<Proposal> PlanActions(const Diagnosis& d) {
  std::vector<Proposal> out;
  if (d.fault_class == FaultClass::kNone) return out;
  const PlanRow& row = PlanFor(d.fault_class);
  const std::string rule = "plan:" + std::string(ToString(d.fault_class));
  const bool gpu_part = d.component.type == ComponentType::kGpu;
  for (const PlanStep& step : row.steps) {
    if (!StepApplies(step, d)) continue;
    // A physical cause never returns a GPU, whatever part the isolator named.
    if (IsPhysicalCause(d.fault_class) && step.action == ActionClass::kRmaBundle && gpu_part) {
      Refuse(out, step.action, "physical_cause_never_gpu_rma",
             "a physical cause (" + std::string(ToString(d.fault_class)) + ") never returns a GPU");
      continue;
    }
    out.push_back({step.action, rule, false, {}});
  }
  const bool acts =
      d.action > Action::kMonitor || std::any_of(out.begin(), out.end(), [](const Proposal& p) { return !p.refused; });
  RefuseTheRest(d, row, out);
  // On-call hears of every hardware or facility diagnosis that is more than watched or
  // plans anything (planned work such as a reseat is a person's job).
  if (acts && !IsWorkloadsFault(d.fault_class)) Add(out, ActionClass::kWebhook, "notify_on_call");
  return out;
}

bool NeedsNoSettling(const Diagnosis& d) {
  switch (d.fault_class) {
    case FaultClass::kGpuFellOffBus:
    case FaultClass::kCoolantLeak:
    case FaultClass::kRowRemapExhausted:
      return true;
    case FaultClass::kNvswitchFault:
      return d.severity >= Severity::kFatal;
    default:
      return false;
  }
}

bool WarrantsDrain(const std::vector<Proposal>& plan) {
  for (const Proposal& p : plan) {
    if (!p.refused && (p.action_class == ActionClass::kDrain || p.action_class == ActionClass::kCordon)) return true;
  }
  return false;
}

}  // namespace faultline::policy
