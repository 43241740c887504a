#include "policy/identity.h"

namespace faultline::policy {

std::string FaultKey(const Diagnosis& d) { return std::string(ToString(d.fault_class)) + "|" + d.component.Id(); }

std::string IncidentKey(const Diagnosis& d) { return FaultKey(d) + "|" + std::to_string(d.first_ns); }

std::string DecisionKey(const std::string& node, actions::ActionClass c, const Diagnosis& d) {
  return node + "|" + std::string(actions::ToString(c)) + "|" + IncidentKey(d);
}

}  // namespace faultline::policy
