#include "parse/redfish_registry.h"

#include <vector>

#include "parse/text.h"

namespace faultline::redfish {
namespace {

// Keys from the DMTF registries Power 1.x, Environmental 1.x, SensorEvent 1.x and
// Platform 1.x (redfish.dmtf.org/registries). Matched as key prefixes so that the
// families "VoltageAboveUpperCautionThreshold" / "...CriticalThreshold" share a row.
// Order matters: the first matching row wins, so "clear" rows come before families.
struct Row {
  std::string_view registry;
  std::string_view key_prefix;
  MessageMeaning meaning;
};

const std::vector<Row>& Table() {
  static const std::vector<Row> kRows = {
      {"Power", "PowerSupplyFailed", {FaultClass::kPowerSupply, Severity::kCritical, false, "psu"}},
      {"Power", "PowerSupplyPredictiveFailure", {FaultClass::kPowerSupply, Severity::kWarning, false, "psu"}},
      {"Power", "PowerSupplyWarning", {FaultClass::kPowerSupply, Severity::kWarning, false, "psu"}},
      {"Power", "PowerSupplyRemoved", {FaultClass::kPowerSupply, Severity::kWarning, false, "psu"}},
      {"Power", "PowerSupplyInserted", {FaultClass::kPowerSupply, Severity::kInfo, true, "psu"}},
      {"Power", "PowerSupplyNormal", {FaultClass::kPowerSupply, Severity::kInfo, true, "psu"}},
      {"Power", "LossOfInputPower", {FaultClass::kPowerSupply, Severity::kCritical, false, "psu"}},
      {"Power", "LineInputPowerFault", {FaultClass::kPowerSupply, Severity::kCritical, false, "psu"}},
      {"Power", "PowerRedundancyLost", {FaultClass::kPowerSupply, Severity::kCritical, false, "psu"}},
      {"Power", "PowerRedundancyRegained", {FaultClass::kPowerSupply, Severity::kInfo, true, "psu"}},
      {"Power", "VoltageNormal", {FaultClass::kVoltageOutOfRange, Severity::kInfo, true, "voltage"}},
      {"Power", "VoltageAbove", {FaultClass::kVoltageOutOfRange, Severity::kWarning, false, "voltage"}},
      {"Power", "VoltageBelow", {FaultClass::kVoltageOutOfRange, Severity::kWarning, false, "voltage"}},
      {"Power", "PowerCapacityExceeded", {FaultClass::kPowerInsufficient, Severity::kCritical, false, ""}},
      {"Environmental", "TemperatureNormal", {FaultClass::kThermalInlet, Severity::kInfo, true, "inlet"}},
      {"Environmental", "TemperatureAbove", {FaultClass::kThermalInlet, Severity::kWarning, false, "inlet"}},
      {"Environmental", "FanRestored", {FaultClass::kCoolingDegraded, Severity::kInfo, true, "fan"}},
      {"Environmental", "FanFailed", {FaultClass::kCoolingDegraded, Severity::kCritical, false, "fan"}},
      {"Environmental", "FanRemoved", {FaultClass::kCoolingDegraded, Severity::kWarning, false, "fan"}},
      {"Environmental", "PumpFailed", {FaultClass::kCoolingDegraded, Severity::kCritical, false, "pump"}},
      {"Environmental", "PumpRestored", {FaultClass::kCoolingDegraded, Severity::kInfo, true, "pump"}},
      {"Environmental", "FlowRateNormal", {FaultClass::kCoolingDegraded, Severity::kInfo, true, "coolant"}},
      {"Environmental", "FlowRateBelow", {FaultClass::kCoolingDegraded, Severity::kWarning, false, "coolant"}},
      {"Environmental", "LeakDetectedNormal", {FaultClass::kCoolantLeak, Severity::kInfo, true, "leak"}},
      {"Environmental", "LeakDetected", {FaultClass::kCoolantLeak, Severity::kCritical, false, "leak"}},
      {"Platform", "PowerBrake", {FaultClass::kPowerInsufficient, Severity::kWarning, false, ""}},
      {"Platform", "VoltageRegulatorFault", {FaultClass::kVoltageOutOfRange, Severity::kCritical, false, "voltage"}},
      {"SensorEvent", "ReadingAboveUpperCriticalThreshold", {FaultClass::kNone, Severity::kCritical, false, ""}},
  };
  return kRows;
}

bool IsVersionSegment(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<MessageKey> ParseMessageId(std::string_view id) {
  id = Trim(id);
  size_t first = id.find('.');
  size_t last = id.rfind('.');
  if (first == std::string_view::npos || first == 0 || last + 1 >= id.size()) return std::nullopt;
  // Everything between the registry and the key must be a version number.
  std::string_view middle = id.substr(first + 1, last > first ? last - first - 1 : 0);
  while (!middle.empty()) {
    size_t dot = middle.find('.');
    if (!IsVersionSegment(middle.substr(0, dot))) return std::nullopt;
    if (dot == std::string_view::npos) break;
    middle.remove_prefix(dot + 1);
  }
  return MessageKey{std::string(id.substr(0, first)), std::string(id.substr(last + 1))};
}

std::optional<MessageMeaning> LookupMessage(const MessageKey& key) {
  for (const Row& row : Table()) {
    if (row.registry == key.registry && StartsWith(key.key, row.key_prefix)) return row.meaning;
  }
  return std::nullopt;
}

}  // namespace faultline::redfish
