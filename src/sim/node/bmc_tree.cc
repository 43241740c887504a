#include "sim/node/bmc_tree.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/time.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Json Link(const std::string& uri) { return {{"@odata.id", uri}}; }

Json StatusOf(const std::string& state, const std::string& health) { return {{"State", state}, {"Health", health}}; }

double Round1(double v) { return std::round(v * 10) / 10; }

// Power redundancy as a BMC reports it: OK while the node survives losing one more
// PSU, Warning when it runs without a spare, Critical when it cannot carry the load.
std::string RedundancyHealth(const NodeState& s) {
  double largest = 0;
  for (const SimPsu& p : s.psus) {
    if (p.state == "Enabled") largest = std::max(largest, p.capacity_w);
  }
  if (s.capacity_w - largest >= s.load_w) return "OK";
  return s.capacity_w >= s.load_w ? "Warning" : "Critical";
}

Status WriteJson(const std::string& dir, const std::string& uri, const Json& doc) {
  const fs::path path = fs::path(dir) / uri.substr(1) / "index.json";
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return Status(StatusCode::kIoError, path.string() + ": " + ec.message());
  std::ofstream out(path);
  out << doc.dump(1);
  if (!out.flush()) return Status(StatusCode::kIoError, path.string() + ": write failed");
  return Status::Ok();
}

Json Collection(const std::string& uri, const std::string& type, Json members) {
  return {{"@odata.id", uri},
          {"@odata.type", "#" + type + "Collection." + type + "Collection"},
          {"Name", type + " Collection"},
          {"Members@odata.count", members.size()},
          {"Members", std::move(members)}};
}

}  // namespace

BmcResources RenderBmcResources(const NodeState& s, double psu_rated_w) {
  BmcResources r;
  Json psus = Json::array();
  for (size_t i = 0; i < s.psus.size(); ++i) {
    const SimPsu& p = s.psus[i];
    const std::string name = "PSU" + std::to_string(i + 1);
    psus.push_back({{"@odata.id", std::string(kBmcPowerUri) + "#/PowerSupplies/" + std::to_string(i)},
                    {"MemberId", name},
                    {"Name", name},
                    {"SerialNumber", "PSU-SN-0" + std::to_string(4417 + i)},
                    {"Status", StatusOf(p.state, p.health)},
                    {"LineInputVoltage", Round1(p.input_v)},
                    {"PowerCapacityWatts", Round1(psu_rated_w)},
                    {"LastPowerOutputWatts", Round1(p.output_w)}});
  }
  const std::string redundancy = RedundancyHealth(s);
  r.power = {{"PowerControl", Json::array({{{"@odata.id", std::string(kBmcPowerUri) + "#/PowerControl/0"},
                                            {"MemberId", "0"},
                                            {"Name", "Chassis Power Control"},
                                            {"PowerConsumedWatts", Round1(std::min(s.load_w, s.capacity_w))},
                                            {"PowerCapacityWatts", Round1(s.capacity_w)}}})},
             {"PowerSupplies", std::move(psus)},
             {"Redundancy", Json::array({{{"@odata.id", std::string(kBmcPowerUri) + "#/Redundancy/0"},
                                          {"MemberId", "0"},
                                          {"Name", "PSU Redundancy"},
                                          {"Mode", "N+m"},
                                          {"Status", StatusOf("Enabled", redundancy)}}})}};
  Json fans = Json::array();
  int failed = 0;
  for (size_t i = 0; i < s.fans.size(); ++i) {
    const SimFan& f = s.fans[i];
    failed += f.health != "OK";
    const std::string name = "FAN" + std::to_string(i + 1);
    fans.push_back({{"@odata.id", std::string(kBmcThermalUri) + "#/Fans/" + std::to_string(i)},
                    {"MemberId", name},
                    {"Name", name},
                    {"Reading", std::lround(f.rpm)},
                    {"ReadingUnits", "RPM"},
                    {"Status", StatusOf(f.health == "OK" ? "Enabled" : "UnavailableOffline", f.health)}});
  }
  r.thermal = {{"Temperatures", Json::array({{{"@odata.id", std::string(kBmcThermalUri) + "#/Temperatures/0"},
                                              {"MemberId", "InletTemp"},
                                              {"Name", "Inlet Temp"},
                                              {"PhysicalContext", "Intake"},
                                              {"ReadingCelsius", Round1(s.inlet_c)},
                                              {"UpperThresholdNonCritical", 35},
                                              {"UpperThresholdCritical", 40},
                                              {"Status", StatusOf("Enabled", s.inlet_c >= 35 ? "Warning" : "OK")}}})},
               {"Fans", std::move(fans)},
               {"Redundancy", Json::array({{{"@odata.id", std::string(kBmcThermalUri) + "#/Redundancy/0"},
                                            {"MemberId", "0"},
                                            {"Name", "Fan Redundancy"},
                                            {"Mode", "N+m"},
                                            {"Status", StatusOf("Enabled", failed <= 1 ? "OK" : "Critical")}}})}};
  const SimCoolant& c = s.coolant;
  r.coolant = Json::array({{{"@odata.id", std::string(kBmcCoolantUri) + "/Loop1"},
                            {"@odata.type", "#CoolantConnector.v1_0_0.CoolantConnector"},
                            {"Id", "Loop1"},
                            {"Name", "Rack manifold connection"},
                            {"SupplyTemperatureCelsius", {{"Reading", Round1(c.supply_c)}}},
                            {"ReturnTemperatureCelsius", {{"Reading", Round1(c.return_c)}}},
                            {"DeltaTemperatureCelsius", {{"Reading", Round1(c.return_c - c.supply_c)}}},
                            {"FlowLitersPerMinute", {{"Reading", Round1(c.flow_lpm)}}},
                            {"RatedFlowLitersPerMinute", 60},
                            {"Status", StatusOf("Enabled", "OK")}}});
  r.leak = Json::array({{{"@odata.id", std::string(kBmcLeakUri) + "/ColdPlate"},
                         {"@odata.type", "#LeakDetector.v1_0_0.LeakDetector"},
                         {"Id", "ColdPlate"},
                         {"Name", "Cold plate leak detector"},
                         {"DetectorState", c.leak_state},
                         {"Status", StatusOf("Enabled", c.leak_state)}}});
  r.pumps =
      Json::array({{{"@odata.id", std::string(kBmcPumpsUri) + "/PUMP1"},
                    {"@odata.type", "#Pump.v1_0_0.Pump"},
                    {"Id", "PUMP1"},
                    {"Name", "Loop pump"},
                    {"PumpSpeedPercent", {{"Reading", c.pump_health == "OK" ? 65 : 0}}},
                    {"Status", StatusOf(c.pump_health == "OK" ? "Enabled" : "UnavailableOffline", c.pump_health)}}});
  return r;
}

Status WriteBmcTree(const std::string& dir, const NodeState& state, double psu_rated_w, int64_t utc_ns) {
  const BmcResources r = RenderBmcResources(state, psu_rated_w);
  const std::string v1 = "/redfish/v1";
  std::vector<std::pair<std::string, Json>> docs;
  docs.push_back({v1,
                  {{"@odata.id", v1},
                   {"@odata.type", "#ServiceRoot.v1_15_0.ServiceRoot"},
                   {"Id", "RootService"},
                   {"Name", "Root Service"},
                   {"RedfishVersion", "1.17.0"},
                   {"UUID", "8a6f2b3c-1d4e-4f50-9a61-7b8c9d0e1f20"},
                   {"Chassis", Link(v1 + "/Chassis")},
                   {"Systems", Link(v1 + "/Systems")},
                   {"Managers", Link(v1 + "/Managers")},
                   {"SessionService", Link(v1 + "/SessionService")},
                   {"EventService", Link(v1 + "/EventService")},
                   {"Links", {{"Sessions", Link(v1 + "/SessionService/Sessions")}}}}});
  docs.push_back({v1 + "/SessionService",
                  {{"@odata.id", v1 + "/SessionService"},
                   {"@odata.type", "#SessionService.v1_1_8.SessionService"},
                   {"Id", "SessionService"},
                   {"Name", "Session Service"},
                   {"ServiceEnabled", true},
                   {"Sessions", Link(v1 + "/SessionService/Sessions")}}});
  docs.push_back(
      {v1 + "/SessionService/Sessions", Collection(v1 + "/SessionService/Sessions", "Session", Json::array())});
  docs.push_back(
      {v1 + "/Managers", Collection(v1 + "/Managers", "Manager", Json::array({Link(v1 + "/Managers/BMC")}))});
  docs.push_back({v1 + "/Managers/BMC",
                  {{"@odata.id", v1 + "/Managers/BMC"},
                   {"@odata.type", "#Manager.v1_19_0.Manager"},
                   {"Id", "BMC"},
                   {"Name", "HGX BMC"},
                   {"ManagerType", "BMC"},
                   {"DateTime", FormatIso8601(utc_ns)},
                   {"Status", StatusOf("Enabled", "OK")}}});
  docs.push_back({v1 + "/Chassis", Collection(v1 + "/Chassis", "Chassis", Json::array({Link(v1 + "/Chassis/HGX")}))});
  docs.push_back({v1 + "/Chassis/HGX",
                  {{"@odata.id", v1 + "/Chassis/HGX"},
                   {"@odata.type", "#Chassis.v1_23_0.Chassis"},
                   {"Id", "HGX"},
                   {"Name", "HGX node"},
                   {"ChassisType", "RackMount"},
                   {"SerialNumber", "HGX-SIM-0001"},
                   {"Status", StatusOf("Enabled", "OK")},
                   {"Power", Link(kBmcPowerUri)},
                   {"Thermal", Link(kBmcThermalUri)},
                   {"ThermalSubsystem", Link(v1 + "/Chassis/HGX/ThermalSubsystem")}}});
  Json power = r.power;
  power["@odata.id"] = kBmcPowerUri;
  power["@odata.type"] = "#Power.v1_7_1.Power";
  power["Id"] = "Power";
  power["Name"] = "Power";
  docs.push_back({kBmcPowerUri, power});
  Json thermal = r.thermal;
  thermal["@odata.id"] = kBmcThermalUri;
  thermal["@odata.type"] = "#Thermal.v1_7_1.Thermal";
  thermal["Id"] = "Thermal";
  thermal["Name"] = "Thermal";
  docs.push_back({kBmcThermalUri, thermal});
  const std::string ts = v1 + "/Chassis/HGX/ThermalSubsystem";
  docs.push_back({ts,
                  {{"@odata.id", ts},
                   {"@odata.type", "#ThermalSubsystem.v1_3_0.ThermalSubsystem"},
                   {"Id", "ThermalSubsystem"},
                   {"Name", "Thermal Subsystem"},
                   {"CoolantConnectors", Link(kBmcCoolantUri)},
                   {"Pumps", Link(kBmcPumpsUri)},
                   {"LeakDetection", Link(ts + "/LeakDetection")},
                   {"Status", StatusOf("Enabled", "OK")}}});
  docs.push_back({kBmcCoolantUri, Collection(kBmcCoolantUri, "CoolantConnector", r.coolant)});
  docs.push_back({kBmcPumpsUri, Collection(kBmcPumpsUri, "Pump", r.pumps)});
  docs.push_back({ts + "/LeakDetection",
                  {{"@odata.id", ts + "/LeakDetection"},
                   {"@odata.type", "#LeakDetection.v1_0_0.LeakDetection"},
                   {"Id", "LeakDetection"},
                   {"Name", "Leak Detection"},
                   {"LeakDetectors", Link(kBmcLeakUri)}}});
  docs.push_back({kBmcLeakUri, Collection(kBmcLeakUri, "LeakDetector", r.leak)});
  docs.push_back(
      {v1 + "/Systems", Collection(v1 + "/Systems", "ComputerSystem", Json::array({Link(v1 + "/Systems/HGX")}))});
  docs.push_back({v1 + "/Systems/HGX",
                  {{"@odata.id", v1 + "/Systems/HGX"},
                   {"@odata.type", "#ComputerSystem.v1_20_0.ComputerSystem"},
                   {"Id", "HGX"},
                   {"Name", "HGX system"},
                   {"PowerState", "On"},
                   {"Status", StatusOf("Enabled", "OK")},
                   {"LogServices", Link(v1 + "/Systems/HGX/LogServices")}}});
  docs.push_back(
      {v1 + "/Systems/HGX/LogServices", Collection(v1 + "/Systems/HGX/LogServices", "LogService",
                                                   Json::array({Link(v1 + "/Systems/HGX/LogServices/SEL")}))});
  docs.push_back({v1 + "/Systems/HGX/LogServices/SEL",
                  {{"@odata.id", v1 + "/Systems/HGX/LogServices/SEL"},
                   {"@odata.type", "#LogService.v1_4_0.LogService"},
                   {"Id", "SEL"},
                   {"Name", "System Event Log"},
                   {"OverWritePolicy", "WrapsWhenFull"},
                   {"Entries", Link(kBmcSelUri)}}});
  docs.push_back({kBmcSelUri, Collection(kBmcSelUri, "LogEntry", Json::array())});
  docs.push_back({v1 + "/EventService",
                  {{"@odata.id", v1 + "/EventService"},
                   {"@odata.type", "#EventService.v1_10_0.EventService"},
                   {"Id", "EventService"},
                   {"Name", "Event Service"},
                   {"ServiceEnabled", true},
                   {"ServerSentEventUri", v1 + "/EventService/SSE"},
                   {"Subscriptions", Link(v1 + "/EventService/Subscriptions")}}});
  docs.push_back({v1 + "/EventService/Subscriptions",
                  Collection(v1 + "/EventService/Subscriptions", "EventDestination", Json::array())});
  for (const auto& [uri, doc] : docs) {
    if (Status st = WriteJson(dir, uri, doc); !st.ok()) return st;
  }
  return Status::Ok();
}

Json SelEntryJson(const SimSel& sel, const std::string& created) {
  Json j = {{"@odata.type", "#LogEntry.v1_15_0.LogEntry"},
            {"Name", "SEL entry"},
            {"EntryType", "SEL"},
            {"Created", created},
            {"Message", sel.message},
            {"Severity", sel.severity},
            {"EntryCode", sel.entry_code}};
  if (!sel.message_id.empty()) j["MessageId"] = sel.message_id;
  if (!sel.sensor_type.empty()) j["SensorType"] = sel.sensor_type;
  if (!sel.origin.empty()) j["Links"] = {{"OriginOfCondition", {{"@odata.id", sel.origin}}}};
  return j;
}

}  // namespace faultline::sim
