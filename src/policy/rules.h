// What the policy proposes for one diagnosis, before dry-run, idempotence, cool-down and the
// breaker are applied (engine.h). The safety rules live here as plain functions so each is
// tested as a rule, whatever the isolator recommended (docs/remediation.md "Rules"):
//  - a physical cause (power, cooling, leak) gets a facility ticket, never a GPU reset, a
//    node reboot nor a GPU RMA;
//  - a user-program fault gets notify_user, never cordon/drain/reset/reboot/RMA;
//  - a hardware fault gets the recommended action; a GPU reset or node reboot also drains
//    first, an RMA drains and builds the evidence bundle.
#pragma once

#include <string>
#include <vector>

#include "actions/actuator.h"
#include "core/types.h"

namespace faultline::policy {

struct Proposal {
  actions::ActionClass action_class = actions::ActionClass::kWebhook;
  std::string rule;  // the rule that proposed or refused it
  bool refused = false;
  std::string why;  // for a refusal: what was asked and why not
};

bool IsPhysicalCause(FaultClass c);
bool IsUserProgramFault(FaultClass c);
std::vector<Proposal> PlanActions(const Diagnosis& diagnosis);
// True when the plan drains or cordons the node (not refused): Slurm health-check failure.
bool WarrantsDrain(const std::vector<Proposal>& plan);

}  // namespace faultline::policy
