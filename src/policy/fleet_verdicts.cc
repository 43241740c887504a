#include "policy/fleet_verdicts.h"

namespace faultline::policy {

bool FleetReplaces(actions::ActionClass c) {
  return c == actions::ActionClass::kRmaBundle || c == actions::ActionClass::kFacilityTicket ||
         c == actions::ActionClass::kWebhook;
}

}  // namespace faultline::policy
