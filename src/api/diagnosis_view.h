// What `GET /api/v1/diagnoses/{id}` adds to a stored diagnosis for the dashboard
// (docs/api.md, docs/dashboard.md): the policy's plan for it, each step with the newest
// action row the policy recorded for it, and the observation kinds that show the fault
// itself. Pure functions over values the route has already read; no store access.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "core/types.h"
#include "store/records.h"

namespace faultline::api {

// The kinds of reading that show fault class `c` on the diagnosed component, best first: a
// row-remap failure is its remap counters (not the correctable ECC count beside them), an
// IB link down its port state, a leak its detector. Empty when no reading shows the class
// (a program's fault, an XID-only class): the kernel lines are its evidence.
std::vector<ObsKind> SignalKinds(FaultClass c);

// policy::PlanActions(d) as JSON, one object per step in the order it is carried out:
// {"action": <actions::ActionClass name>, "rule", "refused"[, "why"]} and, when the policy
// recorded the step (the row whose attrs.key is the decision key of `node`, the step's class
// and `d`'s incident; the newest when several), "state" (policy/ledger.h State name),
// "outcome", "dry_run" and "time_ns". Recorded steps the current plan no longer has (the
// diagnosis changed severity) follow, with "planned": false.
Json PlanJson(const std::string& node, const Diagnosis& d, const std::vector<Row<ActionRecord>>& actions);

}  // namespace faultline::api
