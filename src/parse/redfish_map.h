// Redfish JSON -> Observations: the pure mapping half of the out-of-band layer (no I/O).
// The collector (src/sources/redfish) fetches resources and hands each one here; the
// fuzzer and the unit tests call the same functions with hostile JSON.
//
// Conventions (documented in docs/redfish.md):
//  - layer kOob, source kRedfish, node from the context.
//  - components: psu/<id>, fan/<id>, sensor/<name>, coolant/<id>, chassis (name = chassis id).
//    keys carry "chassis", "uri" and, when present, "serial". Members of the deprecated
//    arrays are named by Name, but two members with the same Name are two parts: the
//    name then gets the MemberId (or the array index) appended ("PSU_0", "PSU_1").
//  - a part whose Status.State is "Absent" is an empty bay or slot: one psu_state /
//    fan_state observation with attrs["present"] = "false" and no readings (vendors put
//    any Health, even Warning/Critical, on empty bays; it means nothing).
//  - attrs: "health", "state", thresholds "upper_noncritical" ... "lower_fatal",
//    "physical_context", "units", "reading_type", log entries: "entry_type", "sensor_type",
//    "entry_code", "severity", "message_id", "message_args" (joined by '|'), "origin",
//    "entry_id", "log", "raw_time", "time_corrected".
//
// Contract: every function accepts any JSON value (wrong types, nulls, missing fields,
// non-standard enum values) and never throws; what it cannot use becomes a warning in
// MapResult::warnings. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace faultline::redfish {

using Json = nlohmann::json;

// What every mapping needs besides the resource itself.
struct MapContext {
  std::string node;          // node name for Observation::node
  std::string chassis;       // chassis id the resource belongs to ("" outside a chassis)
  int64_t read_time_ns = 0;  // host UTC time the resource was read (time of readings)
  // BMC clock minus host clock, in ns (see EstimateClockOffset). Log entry times are
  // corrected by subtracting it; the raw BMC time is kept in attrs["raw_time"].
  int64_t bmc_offset_ns = 0;
  bool offset_known = false;
};

struct MapResult {
  std::vector<Observation> observations;
  std::vector<std::string> warnings;  // quirks tolerated (missing fields, odd values)
  void Append(MapResult&& other);
};

// The kind of resource, from "@odata.type" ("#Thermal.v1_7_3.Thermal" -> "Thermal").
// Empty when absent or not a string.
std::string ResourceType(const Json& j);

// Maps any resource this layer understands by its @odata.type; other types yield an
// empty result (not a warning: the walker fetches collections and links too).
MapResult MapResource(const Json& j, const MapContext& ctx);

// One mapping per resource kind (called by MapResource; exposed for tests).
MapResult MapPower(const Json& j, const MapContext& ctx);        // deprecated Power
MapResult MapThermal(const Json& j, const MapContext& ctx);      // deprecated Thermal
MapResult MapPowerSupply(const Json& j, const MapContext& ctx);  // PowerSupply
MapResult MapPowerSupplyMetrics(const Json& j, const MapContext& ctx, std::string_view psu_id);
MapResult MapPowerSubsystem(const Json& j, const MapContext& ctx);  // capacity, redundancy
MapResult MapFan(const Json& j, const MapContext& ctx);
MapResult MapThermalMetrics(const Json& j, const MapContext& ctx);
MapResult MapPump(const Json& j, const MapContext& ctx);
MapResult MapCoolantConnector(const Json& j, const MapContext& ctx);
MapResult MapLeakDetector(const Json& j, const MapContext& ctx);
MapResult MapSensor(const Json& j, const MapContext& ctx);
MapResult MapEnvironmentMetrics(const Json& j, const MapContext& ctx);
MapResult MapLogEntry(const Json& j, const MapContext& ctx, std::string_view log_uri);
// One entry of an EventService payload's Events[] (SSE or polled).
MapResult MapEvent(const Json& event, const MapContext& ctx);
// Status.Conditions[] and an unhealthy Status.Health of any resource -> kHealth.
MapResult MapStatus(const Json& j, const MapContext& ctx, const ComponentRef& component);

// Health as a number for Observation::value: OK 0, Warning 1, Critical 2; -1 unknown.
int HealthLevel(std::string_view health);

// Physically plausible ranges for readings, as data (the table and the reason for each
// bound are in redfish_map.cc). A reading outside them is a vendor quirk (raw unscaled
// values, 0xFFFF sentinels, a meter that reads 0 on a running supply), never evidence.
struct PlausibleRange {
  ObsKind kind;
  std::string_view role;  // "input" (PSU input), "psu" (any reading of a PSU), "" (any)
  double min, max;
  bool below_min_means_loss;  // below min is real (input lost) unless the part is healthy
  std::string_view why;
};
const std::vector<PlausibleRange>& PlausibleRanges();
// Why the reading is implausible ("" when plausible or not covered). `part_healthy`: the
// BMC calls the part (or the sensor) OK, so a reading below a "loss" bound is a quirk too.
std::string ImplausibleReason(const Observation& o, bool part_healthy);
// Over one sweep's observations: marks every implausible reading with attrs["quirk"]
// (the detectors ignore those) and adds one warning each. A part counts as healthy when
// the reading's own Status.Health is OK or a psu_state of the same part (and chassis) in
// the batch says OK.
void MarkImplausibleReadings(std::vector<Observation>& observations, std::vector<std::string>& warnings);

// Deepest JSON nesting a BMC resource may have: real resources are under 12 levels.
constexpr int kMaxBmcJsonDepth = 64;
// Parses a BMC body, refusing nesting deeper than max_depth before the parser recurses
// or allocates (kCorrupt, with the depth), and malformed JSON (kCorrupt). Never throws.
Result<Json> ParseBmcJson(std::string_view text, int max_depth = kMaxBmcJsonDepth);

// BMC clock offset (BMC minus host, ns) from a Manager's "DateTime" read at host time
// `host_ns`; nullopt when absent or a placeholder date.
std::optional<int64_t> EstimateClockOffset(const Json& manager, int64_t host_ns);

}  // namespace faultline::redfish
