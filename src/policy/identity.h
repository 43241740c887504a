// Stable identity of a decision, so the same fault seen again (re-evaluation, a restart,
// 800,000 duplicate kernel lines folded into one finding, the diagnosis stored again under a
// new row id) gives one action. Built from the diagnosis' content, never its row id.
#pragma once

#include <string>

#include "actions/actuator.h"
#include "core/types.h"

namespace faultline::policy {

// "<fault class>|<component id>|<first time ns>": one incident.
std::string IncidentKey(const Diagnosis& diagnosis);
// "<node>|<action class>|<incident key>": one decision.
std::string DecisionKey(const std::string& node, actions::ActionClass action_class, const Diagnosis& diagnosis);
// "<fault class>|<component id>": the same fault on the same part, whatever its first time
// (a restart may re-derive a finding with a later start).
std::string FaultKey(const Diagnosis& diagnosis);

}  // namespace faultline::policy
