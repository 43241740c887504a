// Redfish message registry look-up for the out-of-band detectors.
//
// A MessageId is "<Registry>.<Major>.<Minor>.<Errata>.<Key>" (DSP0266 "MessageId format");
// BMCs disagree on the version they emit, so matching uses only the registry prefix and
// the key: "Power.1.2.0.PowerSupplyFailed" == "Power.PowerSupplyFailed".
// The table of keys faultline interprets lives in redfish_registry.cc (data, sourced
// from the DMTF Power, Environmental, SensorEvent and Platform registries).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/types.h"

namespace faultline::redfish {

struct MessageKey {
  std::string registry;  // "Power"
  std::string key;       // "PowerSupplyFailed"
  bool operator==(const MessageKey&) const = default;
};

// Splits a MessageId, dropping any numeric version segments. nullopt for ids with no
// dot (e.g. the raw IPMI event data "0x592A28" some BMCs put in SEL entries).
std::optional<MessageKey> ParseMessageId(std::string_view message_id);

// What a registry message means for the physical layer.
struct MessageMeaning {
  FaultClass fault_class = FaultClass::kNone;
  Severity severity = Severity::kWarning;
  bool clears = false;    // the message reports a return to normal (closes a finding)
  std::string_view part;  // "psu", "fan", "pump", "coolant", "leak", "voltage", "inlet", ""
};

// nullopt when the message is not one the OOB detectors act on.
std::optional<MessageMeaning> LookupMessage(const MessageKey& key);

}  // namespace faultline::redfish
