// What the policy proposes for one diagnosis, before dry-run, idempotence, cool-down and the
// breaker are applied (engine.h). The plan comes from one table (plans.h: a row per fault
// class, with its reason), which the runbooks repeat. Safety rules on top of it, each tested
// as a rule whatever the isolator recommended (docs/remediation.md "Rules"):
//  - a physical cause (power, cooling, leak) never resets a GPU, reboots the node or
//    returns a GPU; a failed PSU part may be returned;
//  - a user-program fault or a slowdown with no hardware cause only tells the job's owner;
//  - what the isolator recommended and the plan does not allow is stored as refused, with why.
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
// The workload's own fault: a program's fault, or slow steps with no hardware cause. Only
// its owner is told; the hardware is never blamed for it.
bool IsWorkloadsFault(FaultClass c);
std::vector<Proposal> PlanActions(const Diagnosis& diagnosis);
// Every decision waits until its diagnosis has settled (PolicyConfig::settle_ns), a page to
// on-call or a facility ticket included: one filed for a diagnosis the next poll revises
// sends people after the wrong story, and 20 s costs little. Evidence that needs no wait: a GPU off the bus, a leak, a
// fatal NVSwitch error, a row-remap failure. What it says will not be revised by the next poll.
bool NeedsNoSettling(const Diagnosis& diagnosis);
// True when the plan drains or cordons the node (not refused): Slurm health-check failure.
bool WarrantsDrain(const std::vector<Proposal>& plan);

}  // namespace faultline::policy
