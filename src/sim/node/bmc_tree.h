// The simulated node's Redfish tree: written once as a mockup directory the mock BMC
// loads, then kept current resource by resource (RenderBmcResources). Shaped like an
// HGX BMC: deprecated Power/Thermal (one request each, as most BMCs still serve them),
// ThermalSubsystem for the liquid loop (coolant connectors, pumps, leak detectors), a
// ComputerSystem SEL, and an EventService with an SSE endpoint.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "sim/node/node_model.h"

namespace faultline::sim {

inline constexpr const char* kBmcPowerUri = "/redfish/v1/Chassis/HGX/Power";
inline constexpr const char* kBmcThermalUri = "/redfish/v1/Chassis/HGX/Thermal";
inline constexpr const char* kBmcCoolantUri = "/redfish/v1/Chassis/HGX/ThermalSubsystem/CoolantConnectors";
inline constexpr const char* kBmcLeakUri = "/redfish/v1/Chassis/HGX/ThermalSubsystem/LeakDetection/LeakDetectors";
inline constexpr const char* kBmcPumpsUri = "/redfish/v1/Chassis/HGX/ThermalSubsystem/Pumps";
inline constexpr const char* kBmcSelUri = "/redfish/v1/Systems/HGX/LogServices/SEL/Entries";

// The parts of the tree that change with the node's state.
struct BmcResources {
  nlohmann::json power;    // Power resource body (without @odata fields)
  nlohmann::json thermal;  // Thermal resource body
  nlohmann::json coolant;  // CoolantConnectors Members (expanded)
  nlohmann::json leak;     // LeakDetectors Members (expanded)
  nlohmann::json pumps;    // Pumps Members (expanded)
};

// `psu_rated_w`: each PSU's rating (a failed PSU still reports it).
BmcResources RenderBmcResources(const NodeState& state, double psu_rated_w);

// Writes the whole tree as `<dir>/redfish/v1/.../index.json`.
Status WriteBmcTree(const std::string& dir, const NodeState& state, double psu_rated_w, int64_t utc_ns);

// A SEL LogEntry for an event recorded at `created` (ISO 8601).
nlohmann::json SelEntryJson(const SimSel& sel, const std::string& created);

}  // namespace faultline::sim
