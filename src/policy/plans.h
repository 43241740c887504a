// The action plan for each fault class: ONE table, in code, with the reason for each row
// (docs/remediation.md "Plans"). The policy's rules (rules.h) read it, `faultline plans`
// prints it, and the "Safe actions" section of every kb/runbooks/<class>.md carries the
// same plan between generated markers, which a test compares with this table, so a
// runbook cannot say "drain now" while the policy files a ticket only.
//
// A step runs when its condition holds for the diagnosis at hand:
//  - always;
//  - when the fault is critical or worse (a fatal AER, a downed link, redundancy lost);
//  - when it slows jobs beyond kSlowsJobsRatio (the steps it explains got that much slower);
//  - when the isolator recommended it (the evidence decides: XID 94 is contained, XID 95
//    needs a reset; a driver hang is watched, a GSP timeout rebooted).
// Steps are in the order they are carried out (drain before a reset or the bundle).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actions/actuator.h"
#include "core/types.h"

namespace faultline::policy {

// A hardware fault that makes the job's steps this much slower (recent / baseline) takes
// the node out of service: 1.2 = 20 % slower. Below it the fault is planned work.
inline constexpr double kSlowsJobsRatio = 1.2;

enum class When {
  kAlways,
  kCritical,             // diagnosis severity >= critical
  kSlowsJobs,            // slowdown_ratio >= kSlowsJobsRatio
  kCriticalOrSlowsJobs,  // either of the two
  kRecommended,          // the isolator's action implies this class
};
std::string_view ToString(When w);

struct PlanStep {
  actions::ActionClass action;
  When when;
};

struct PlanRow {
  FaultClass fault;
  std::span<const PlanStep> steps;  // in order
  std::string_view reason;          // why this plan (shown by `faultline plans` and in runbooks)
};

// Every fault class has exactly one row (tested), `none` included (an empty plan).
std::span<const PlanRow> PlanTable();
const PlanRow& PlanFor(FaultClass c);

// The classes the isolator's recommended action implies (RMA: drain then bundle, ...).
std::vector<actions::ActionClass> ImpliedClasses(Action a);

// Does `step` apply to `d`?
bool StepApplies(const PlanStep& step, const Diagnosis& d);

// The plan of one class as the runbooks carry it (Markdown lines, no trailing newline).
std::string RenderPlanMarkdown(FaultClass c);
// Markers around that text in kb/runbooks/<class>.md.
inline constexpr std::string_view kPlanBegin = "<!-- faultline plan: generated from src/policy/plans.cc -->";
inline constexpr std::string_view kPlanEnd = "<!-- end of faultline plan -->";

}  // namespace faultline::policy
