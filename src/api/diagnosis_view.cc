#include "api/diagnosis_view.h"

#include <map>
#include <utility>

#include "policy/identity.h"
#include "policy/rules.h"

namespace faultline::api {
namespace {

using enum ObsKind;

std::string Attr(const ActionRecord& r, const char* name) {
  auto it = r.attrs.find(name);
  return it == r.attrs.end() ? std::string() : it->second;
}

bool Newer(const Row<ActionRecord>& a, const Row<ActionRecord>* b) {
  return b == nullptr || std::pair(a.value.time_ns, a.id) > std::pair(b->value.time_ns, b->id);
}

void AddRecord(Json& step, const ActionRecord& r) {
  step["state"] = Attr(r, "state");
  step["outcome"] = r.outcome;
  step["dry_run"] = r.dry_run;
  step["time_ns"] = r.time_ns;
}

}  // namespace

// No default: a new fault class must say what shows it. Orders follow the detectors: the
// reading a rule fires on comes first (gpu-detectors.md, fabric.md, redfish.md).
std::vector<ObsKind> SignalKinds(FaultClass c) {
  switch (c) {
    case FaultClass::kPowerSupply:
      return {kPsuState, kVoltage, kPower};
    case FaultClass::kPowerInsufficient:
      return {kPower, kPowerCapacity};
    case FaultClass::kVoltageOutOfRange:
      return {kVoltage};
    case FaultClass::kThermalInlet:
      return {kTemperature};
    case FaultClass::kCoolingDegraded:
      return {kFanSpeed, kFanState, kCoolantFlow, kPumpState, kCoolantTemp, kTemperature};
    case FaultClass::kCoolantLeak:
      return {kLeak};
    case FaultClass::kHbmSbeAging:
      return {kEccSbe, kRowRemapCorrectable, kRetiredPages};
    case FaultClass::kHbmUncorrectable:
      return {kEccDbe, kRowRemapUncorrectable, kRetiredPages};
    case FaultClass::kRowRemapPending:
      return {kRowRemapPending, kRowRemapUncorrectable};
    case FaultClass::kRowRemapExhausted:
      return {kRowRemapFailure, kRowRemapUncorrectable};
    case FaultClass::kGpuSram:
      return {kEccDbe};
    case FaultClass::kGpuThermal:
      return {kTemperature, kClockThrottle, kClock};
    case FaultClass::kGpuPowerBrake:
      return {kClockThrottle, kPower, kClock};
    case FaultClass::kPcieLinkDegraded:
      return {kPcieLinkWidth, kPcieLinkSpeed, kPcieLinkGen, kPcieReplay};
    case FaultClass::kNvlinkErrors:
      return {kNvlinkCrcFlit, kNvlinkCrcData, kNvlinkReplay, kNvlinkRecovery};
    case FaultClass::kNvlinkDown:
      return {kNvlinkState};
    case FaultClass::kIbLinkErrors:
      return {kIbSymbolError, kIbLinkErrorRecovery, kIbLinkIntegrity, kIbRcvError,
              kIbLinkDowned,  kRoceCounter,         kEthCounter};
    case FaultClass::kIbLinkDown:
      return {kIbPortState, kEthLinkState, kIbLinkDowned};
    case FaultClass::kFabricCongestion:
      return {kRoceCounter, kEthCounter};
    case FaultClass::kWorkloadImbalance:
      return {kStepTime};
    case FaultClass::kGspFirmware:
    case FaultClass::kGpuFellOffBus:
    case FaultClass::kDriverFault:
    case FaultClass::kUserApplication:
    case FaultClass::kHostMemory:
    case FaultClass::kNvswitchFault:
    case FaultClass::kNone:
      return {};
  }
  return {};
}

Json PlanJson(const std::string& node, const Diagnosis& d, const std::vector<Row<ActionRecord>>& actions) {
  // The newest row per decision key of this incident.
  const std::string incident = policy::IncidentKey(d);
  std::map<std::string, const Row<ActionRecord>*> newest;
  for (const Row<ActionRecord>& row : actions) {
    if (Attr(row.value, "incident") != incident) continue;
    const Row<ActionRecord>*& slot = newest[Attr(row.value, "key")];
    if (Newer(row, slot)) slot = &row;
  }
  Json plan = Json::array();
  for (const policy::Proposal& p : policy::PlanActions(d)) {
    Json step{{"action", std::string(actions::ToString(p.action_class))}, {"rule", p.rule}, {"refused", p.refused}};
    if (p.refused) step["why"] = p.why;
    auto it = newest.find(policy::DecisionKey(node, p.action_class, d));
    if (it != newest.end()) {
      AddRecord(step, it->second->value);
      newest.erase(it);
    }
    plan.push_back(step);
  }
  for (const auto& [key, row] : newest) {
    Json step{{"action", Attr(row->value, "class")}, {"rule", Attr(row->value, "rule")}, {"planned", false}};
    AddRecord(step, row->value);
    plan.push_back(step);
  }
  return plan;
}

}  // namespace faultline::api
