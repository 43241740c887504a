// Redfish error bodies (DSP0266 "Error responses"): {"error": {code, message,
// @Message.ExtendedInfo[]}}, with Base registry message ids, so clients exercise the same
// error parsing they need against real BMCs.
#pragma once

#include <string>

namespace faultline::sim {

// `key` is a Base registry message key ("ResourceNotFound", "SessionLimitExceeded", ...).
std::string RedfishErrorBody(const std::string& key, const std::string& message);

}  // namespace faultline::sim
