#include "sim/node/node_scenario.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/mock_bmc/yaml_json.h"
#include "sim/node/amd_node.h"
#include "sim/node/scenario_fields.h"

namespace faultline::sim {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxScenarioBytes = 1 << 20;
constexpr size_t kMaxFaults = 1000;
constexpr double kMaxDurationS = 7 * 24 * 3600.0;

struct KindName {
  NodeFaultKind kind;
  std::string_view name;
};
// Sized by its entries: a kind added by one change and another by a second never disagree on a count.
constexpr auto kKinds = std::to_array<KindName>({
    {NodeFaultKind::kPsuFail, "psu_fail"},
    {NodeFaultKind::kPsuDegrade, "psu_degrade"},
    {NodeFaultKind::kFeedLoss, "feed_loss"},
    {NodeFaultKind::kInputSag, "input_sag"},
    {NodeFaultKind::kPowerLoad, "power_load"},
    {NodeFaultKind::kInletHigh, "inlet_high"},
    {NodeFaultKind::kFanFail, "fan_fail"},
    {NodeFaultKind::kPumpFail, "pump_fail"},
    {NodeFaultKind::kCoolantLeak, "coolant_leak"},
    {NodeFaultKind::kGpuCooling, "gpu_cooling"},
    {NodeFaultKind::kSbeStorm, "sbe_storm"},
    {NodeFaultKind::kDbe, "dbe"},
    {NodeFaultKind::kRemapFailure, "remap_failure"},
    {NodeFaultKind::kSramUncorrectable, "sram_uncorrectable"},
    {NodeFaultKind::kGspTimeout, "gsp_timeout"},
    {NodeFaultKind::kFallOffBus, "fall_off_bus"},
    {NodeFaultKind::kDriverMismatch, "driver_mismatch"},
    {NodeFaultKind::kUserXid, "user_xid"},
    {NodeFaultKind::kSegfault, "segfault"},
    {NodeFaultKind::kHostMce, "host_mce"},
    {NodeFaultKind::kPcieDowntrain, "pcie_downtrain"},
    {NodeFaultKind::kPcieReplay, "pcie_replay"},
    {NodeFaultKind::kNicAer, "nic_aer"},
    {NodeFaultKind::kNvlinkCrc, "nvlink_crc"},
    {NodeFaultKind::kNvlinkDown, "nvlink_down"},
    {NodeFaultKind::kNvswitchFatal, "nvswitch_fatal"},
    {NodeFaultKind::kIbErrors, "ib_errors"},
    {NodeFaultKind::kIbDown, "ib_down"},
    {NodeFaultKind::kStraggler, "straggler"},
    {NodeFaultKind::kJobStop, "job_stop"},
    {NodeFaultKind::kKmsg, "kmsg"},
    {NodeFaultKind::kSel, "sel"},
    {NodeFaultKind::kRoceErrors, "roce_errors"},
    {NodeFaultKind::kPfcStorm, "pfc_storm"},
    {NodeFaultKind::kLinkDowntrain, "link_downtrain"},
    {NodeFaultKind::kBadPageThreshold, "bad_page_threshold"},
    {NodeFaultKind::kRingTimeout, "ring_timeout"},
});

// Which parameters each kind requires (beyond `at`); anything else in the fault is
// still allowed if it is a known parameter name, so files can carry e.g. `until`.
const std::map<NodeFaultKind, std::vector<std::string_view>>& RequiredParams() {
  static const auto* required = new std::map<NodeFaultKind, std::vector<std::string_view>>{
      {NodeFaultKind::kPsuFail, {"psu"}},
      {NodeFaultKind::kPsuDegrade, {"psu"}},
      {NodeFaultKind::kFeedLoss, {"psus"}},
      {NodeFaultKind::kInputSag, {"psus", "value"}},
      {NodeFaultKind::kPowerLoad, {"value"}},
      {NodeFaultKind::kInletHigh, {"value"}},
      {NodeFaultKind::kFanFail, {"fan"}},
      {NodeFaultKind::kPumpFail, {}},
      {NodeFaultKind::kCoolantLeak, {}},
      {NodeFaultKind::kGpuCooling, {"gpu", "value"}},
      {NodeFaultKind::kSbeStorm, {"gpu", "value"}},
      {NodeFaultKind::kDbe, {"gpu"}},
      {NodeFaultKind::kRemapFailure, {"gpu"}},
      {NodeFaultKind::kSramUncorrectable, {"gpu"}},
      {NodeFaultKind::kGspTimeout, {"gpu"}},
      {NodeFaultKind::kFallOffBus, {"gpu"}},
      {NodeFaultKind::kDriverMismatch, {}},
      {NodeFaultKind::kUserXid, {"gpu"}},
      {NodeFaultKind::kSegfault, {}},
      {NodeFaultKind::kHostMce, {}},
      {NodeFaultKind::kPcieDowntrain, {"gpu"}},
      {NodeFaultKind::kPcieReplay, {"gpu", "value"}},
      {NodeFaultKind::kNicAer, {"nic", "value"}},
      {NodeFaultKind::kNvlinkCrc, {"gpu", "link", "value"}},
      {NodeFaultKind::kNvlinkDown, {"gpu", "link"}},
      {NodeFaultKind::kNvswitchFatal, {"nvswitch"}},
      {NodeFaultKind::kIbErrors, {"hca", "value"}},
      {NodeFaultKind::kIbDown, {"hca"}},
      {NodeFaultKind::kStraggler, {"value"}},
      {NodeFaultKind::kJobStop, {}},
      {NodeFaultKind::kKmsg, {"text"}},
      {NodeFaultKind::kSel, {"text"}},
      {NodeFaultKind::kRoceErrors, {"hca", "value"}},
      {NodeFaultKind::kPfcStorm, {"value"}},
      {NodeFaultKind::kLinkDowntrain, {"hca"}},
      {NodeFaultKind::kBadPageThreshold, {"gpu"}},
      {NodeFaultKind::kRingTimeout, {"gpu"}},
  };
  return *required;
}

Status ReadString(const Json& j, const char* key, const std::string& where, size_t max, std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_string()) return ScenarioError(where + "." + key, "expected a string");
  out = it->get<std::string>();
  if (out.size() > max) return ScenarioError(where + "." + key, "longer than " + std::to_string(max) + " bytes");
  return Status::Ok();
}

Status ReadIntList(const Json& j, const char* key, const std::string& where, int hi, std::vector<int>& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_array() || it->empty() || it->size() > 64)
    return ScenarioError(where + "." + key, "expected a list of 1-64 integers");
  for (const Json& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > hi) {
      return ScenarioError(where + "." + key, "expected integers in [0, " + std::to_string(hi) + "]");
    }
    out.push_back(v.get<int>());
  }
  return Status::Ok();
}

#define FL_TRY(expr)                             \
  do {                                           \
    if (Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

Status ParseNode(const Json& j, NodeSpec& n) {
  const std::string w = "node";
  FL_TRY(CheckKeys(
      j, w,
      {"gpus", "psus", "psu_capacity_w", "gpu_busy_w", "host_w", "fans", "bmc", "row_remap", "psu_alert_brakes",
       "inlet_c", "coolant_supply_c", "coolant_flow_lpm", "fabric", "gpu_vendor", "amdsmi"}));
  FL_TRY(ReadInt(j, "gpus", w, 1, 8, n.gpus));
  FL_TRY(ReadInt(j, "psus", w, 1, 12, n.psus));
  FL_TRY(ReadNumber(j, "psu_capacity_w", w, 100, 20000, n.psu_capacity_w));
  FL_TRY(ReadNumber(j, "gpu_busy_w", w, 10, 2000, n.gpu_busy_w));
  FL_TRY(ReadNumber(j, "host_w", w, 0, 50000, n.host_w));
  FL_TRY(ReadInt(j, "fans", w, 1, 16, n.fans));
  FL_TRY(ReadBool(j, "bmc", w, n.bmc));
  FL_TRY(ReadBool(j, "row_remap", w, n.row_remap));
  FL_TRY(ReadBool(j, "psu_alert_brakes", w, n.psu_alert_brakes));
  FL_TRY(ReadNumber(j, "inlet_c", w, -10, 60, n.inlet_c));
  FL_TRY(ReadNumber(j, "coolant_supply_c", w, 0, 70, n.coolant_supply_c));
  FL_TRY(ReadNumber(j, "coolant_flow_lpm", w, 1, 1000, n.coolant_flow_lpm));
  FL_TRY(ReadString(j, "fabric", w, 16, n.fabric));
  if (n.fabric != "infiniband" && n.fabric != "roce")
    return ScenarioError(w + ".fabric", "expected infiniband or roce");
  FL_TRY(ReadString(j, "gpu_vendor", w, 16, n.gpu_vendor));
  if (n.gpu_vendor != "nvidia" && n.gpu_vendor != "amd")
    return ScenarioError(w + ".gpu_vendor", "expected nvidia or amd");
  FL_TRY(ReadBool(j, "amdsmi", w, n.amdsmi));
  return Status::Ok();
}

Status ParseNoise(const Json& j, NoiseSpec& n) {
  const std::string w = "noise";
  if (j.is_boolean()) {
    if (!j.get<bool>()) n = NoiseSpec{0, 0, 0, 0, 0, 0};
    return Status::Ok();
  }
  FL_TRY(CheckKeys(j, w,
                   {"sbe_per_gpu_hour", "user_xid_per_hour", "aer_corrected_per_hour", "temp_wander_c", "step_jitter",
                    "roce_ecn_per_s"}));
  FL_TRY(ReadNumber(j, "sbe_per_gpu_hour", w, 0, 100000, n.sbe_per_gpu_hour));
  FL_TRY(ReadNumber(j, "user_xid_per_hour", w, 0, 3600, n.user_xid_per_hour));
  FL_TRY(ReadNumber(j, "aer_corrected_per_hour", w, 0, 100000, n.aer_corrected_per_hour));
  FL_TRY(ReadNumber(j, "temp_wander_c", w, 0, 20, n.temp_wander_c));
  FL_TRY(ReadNumber(j, "step_jitter", w, 0, 0.5, n.step_jitter));
  FL_TRY(ReadNumber(j, "roce_ecn_per_s", w, 0, 1e7, n.roce_ecn_per_s));
  return Status::Ok();
}

Status ParseAgentSchedule(const Json& j, AgentSchedule& a) {
  const std::string w = "agent";
  FL_TRY(CheckKeys(j, w, {"fast_interval_s", "sample_interval_s", "redfish_interval_s", "tick_s"}));
  FL_TRY(ReadNumber(j, "tick_s", w, 0.05, 10, a.tick_s));
  FL_TRY(ReadNumber(j, "fast_interval_s", w, 0.05, 3600, a.fast_interval_s));
  FL_TRY(ReadNumber(j, "sample_interval_s", w, 0.05, 3600, a.sample_interval_s));
  FL_TRY(ReadNumber(j, "redfish_interval_s", w, 0.05, 3600, a.redfish_interval_s));
  for (const auto& [key, v] : {std::pair<const char*, double>{"fast_interval_s", a.fast_interval_s},
                               {"sample_interval_s", a.sample_interval_s},
                               {"redfish_interval_s", a.redfish_interval_s}}) {
    if (v < a.tick_s) return ScenarioError(w + "." + key, "shorter than tick_s");
  }
  return Status::Ok();
}

Status ParseWorkload(const Json& j, WorkloadSpec& wl) {
  const std::string w = "workload";
  FL_TRY(CheckKeys(j, w, {"enabled", "step_s", "job"}));
  FL_TRY(ReadBool(j, "enabled", w, wl.enabled));
  FL_TRY(ReadNumber(j, "step_s", w, 0.05, 600, wl.step_s));
  FL_TRY(ReadString(j, "job", w, 128, wl.job));
  if (wl.job.empty()) return ScenarioError(w + ".job", "must not be empty");
  return Status::Ok();
}

Status ParseOtherIncident(const Json& j, size_t index, OtherIncident& o) {
  const std::string w = "truth.also[" + std::to_string(index) + "]";
  if (!j.is_object()) return ScenarioError(w, "expected {fault_class, start_s, why}");
  FL_TRY(CheckKeys(j, w, {"fault_class", "start_s", "why"}));
  std::string cls;
  FL_TRY(ReadString(j, "fault_class", w, 64, cls));
  auto fc = ParseFaultClass(cls);
  if (!fc || *fc == FaultClass::kNone) return ScenarioError(w + ".fault_class", "unknown fault class '" + cls + "'");
  o.fault_class = *fc;
  FL_TRY(ReadNumber(j, "start_s", w, 0, kMaxDurationS, o.start_s));
  FL_TRY(ReadString(j, "why", w, 512, o.why));
  if (o.why.empty()) return ScenarioError(w + ".why", "say what this other incident is");
  return Status::Ok();
}

Status ParseTruth(const Json& j, Truth& t) {
  const std::string w = "truth";
  FL_TRY(CheckKeys(j, w, {"fault_class", "component", "components", "action", "start_s", "slow", "also"}));
  if (auto it = j.find("also"); it != j.end()) {
    if (!it->is_array() || it->size() > 8) return ScenarioError(w + ".also", "expected a list of at most 8 incidents");
    for (size_t i = 0; i < it->size(); ++i) FL_TRY(ParseOtherIncident((*it)[i], i, t.also.emplace_back()));
  }
  std::string cls, action, component;
  FL_TRY(ReadString(j, "fault_class", w, 64, cls));
  auto fc = ParseFaultClass(cls);
  if (!fc) return ScenarioError(w + ".fault_class", "unknown fault class '" + cls + "'");
  t.fault_class = *fc;
  FL_TRY(ReadString(j, "action", w, 64, action));
  if (!action.empty()) {
    auto a = ParseAction(action);
    if (!a) return ScenarioError(w + ".action", "unknown action '" + action + "'");
    t.action = *a;
  }
  FL_TRY(ReadString(j, "component", w, 256, component));
  if (!component.empty()) t.components.push_back(component);
  if (auto it = j.find("components"); it != j.end()) {
    if (!it->is_array()) return ScenarioError(w + ".components", "expected a list of component ids");
    for (const Json& c : *it) {
      if (!c.is_string() || c.get<std::string>().empty())
        return ScenarioError(w + ".components", "expected component ids");
      t.components.push_back(c.get<std::string>());
    }
  }
  for (const std::string& c : t.components) {
    if (!ParseComponentId(c)) return ScenarioError(w + ".component", "not a component id: '" + c + "'");
  }
  FL_TRY(ReadNumber(j, "start_s", w, 0, kMaxDurationS, t.start_s));
  FL_TRY(ReadBool(j, "slow", w, t.slow));
  return Status::Ok();
}

Status ParseFault(const Json& j, size_t index, const NodeSpec& node, NodeFault& f) {
  const std::string w = "faults[" + std::to_string(index) + "]";
  FL_TRY(CheckKeys(
      j, w, {"at",  "until", "fault",  "gpu",   "gpus",    "link", "psu",   "psus",      "fan",  "nvswitch", "hca",
             "nic", "value", "ramp_s", "count", "every_s", "xid",  "width", "speed_gts", "text", "severity"}));
  std::string kind;
  FL_TRY(ReadString(j, "fault", w, 64, kind));
  auto k = ParseNodeFaultKind(kind);
  if (!k) return ScenarioError(w + ".fault", kind.empty() ? "missing" : "unknown fault kind '" + kind + "'");
  f.kind = *k;
  if (!j.contains("at")) return ScenarioError(w + ".at", "missing");
  FL_TRY(ReadNumber(j, "at", w, 0, kMaxDurationS, f.at));
  if (j.contains("until")) {
    double until = 0;
    FL_TRY(ReadNumber(j, "until", w, 0, kMaxDurationS, until));
    if (until <= f.at) return ScenarioError(w + ".until", "must be after 'at'");
    f.until = until;
  }
  for (std::string_view key : RequiredParams().at(f.kind)) {
    if (!j.contains(std::string(key)))
      return ScenarioError(w + "." + std::string(key), "required by fault '" + kind + "'");
  }
  FL_TRY(ReadInt(j, "gpu", w, 0, node.gpus - 1, f.gpu));
  FL_TRY(ReadIntList(j, "gpus", w, node.gpus - 1, f.gpus));
  FL_TRY(ReadInt(j, "link", w, 0, 17, f.link));
  FL_TRY(ReadInt(j, "psu", w, 1, node.psus, f.psu));
  FL_TRY(ReadIntList(j, "psus", w, node.psus, f.psus));
  for (int p : f.psus) {
    if (p < 1) return ScenarioError(w + ".psus", "power supplies are numbered from 1");
  }
  FL_TRY(ReadInt(j, "fan", w, 1, node.fans, f.fan));
  FL_TRY(ReadInt(j, "nvswitch", w, 0, 3, f.nvswitch));
  FL_TRY(ReadInt(j, "hca", w, 0, 7, f.hca));
  FL_TRY(ReadInt(j, "nic", w, 0, 1, f.nic));
  // Every value is a magnitude (a rate, a temperature, volts, watts, a factor).
  FL_TRY(ReadNumber(j, "value", w, 0, 1e9, f.value));
  if (f.kind == NodeFaultKind::kStraggler && f.value < 1)
    return ScenarioError(w + ".value", "a slowdown factor is >= 1");
  if (f.kind == NodeFaultKind::kInputSag && f.value > 300) return ScenarioError(w + ".value", "input volts above 300");
  FL_TRY(ReadNumber(j, "ramp_s", w, 0, kMaxDurationS, f.ramp_s));
  FL_TRY(ReadInt(j, "count", w, 1, 100000, f.count));
  FL_TRY(ReadNumber(j, "every_s", w, 0, kMaxDurationS, f.every_s));
  FL_TRY(ReadInt(j, "xid", w, 1, 1000, f.xid));
  FL_TRY(ReadInt(j, "width", w, 0, 32, f.width));
  FL_TRY(ReadNumber(j, "speed_gts", w, 0, 128, f.speed_gts));
  FL_TRY(ReadString(j, "text", w, 1024, f.text));
  FL_TRY(ReadString(j, "severity", w, 16, f.severity));
  if (f.severity != "OK" && f.severity != "Warning" && f.severity != "Critical") {
    return ScenarioError(w + ".severity", "expected OK, Warning or Critical");
  }
  if (f.text.find_first_of("\r\n") != std::string::npos) return ScenarioError(w + ".text", "must be one line");
  const bool roce_kind = f.kind == NodeFaultKind::kRoceErrors || f.kind == NodeFaultKind::kPfcStorm ||
                         f.kind == NodeFaultKind::kLinkDowntrain;
  if (roce_kind && !node.roce()) return ScenarioError(w + ".fault", "'" + kind + "' needs node.fabric: roce");
  if (Status s = CheckAmdFault(f.kind, node.amd()); !s.ok())
    return ScenarioError(w + ".fault", "'" + kind + "' " + s.message());
  return Status::Ok();
}

Status ParseTop(const Json& j, NodeScenario& sc) {
  FL_TRY(CheckKeys(
      j, "scenario",
      {"name", "description", "duration_s", "seed", "node", "noise", "workload", "agent", "truth", "faults"}));
  FL_TRY(ReadString(j, "name", "scenario", kMaxScenarioNameBytes, sc.name));
  FL_TRY(CheckScenarioName(sc.name));
  FL_TRY(ReadString(j, "description", "scenario", 4096, sc.description));
  FL_TRY(ReadNumber(j, "duration_s", "scenario", 10, kMaxDurationS, sc.duration_s));
  double seed = 1;
  FL_TRY(ReadNumber(j, "seed", "scenario", 0, 4294967295.0, seed));
  sc.seed = static_cast<uint64_t>(seed);
  if (auto it = j.find("node"); it != j.end()) FL_TRY(ParseNode(*it, sc.node));
  if (auto it = j.find("noise"); it != j.end()) FL_TRY(ParseNoise(*it, sc.noise));
  if (auto it = j.find("workload"); it != j.end()) FL_TRY(ParseWorkload(*it, sc.workload));
  if (auto it = j.find("agent"); it != j.end()) {
    sc.agent.emplace();
    FL_TRY(ParseAgentSchedule(*it, *sc.agent));
  }
  auto truth = j.find("truth");
  if (truth == j.end()) return ScenarioError("scenario.truth", "missing (every scenario states its ground truth)");
  FL_TRY(ParseTruth(*truth, sc.truth));
  if (auto it = j.find("faults"); it != j.end()) {
    if (!it->is_array()) return ScenarioError("scenario.faults", "expected a list");
    if (it->size() > kMaxFaults) return ScenarioError("scenario.faults", "more than 1000 faults");
    for (size_t i = 0; i < it->size(); ++i) {
      NodeFault f;
      FL_TRY(ParseFault((*it)[i], i, sc.node, f));
      sc.faults.push_back(std::move(f));
    }
  }
  std::stable_sort(sc.faults.begin(), sc.faults.end(),
                   [](const NodeFault& a, const NodeFault& b) { return a.at < b.at; });
  return Status::Ok();
}

#undef FL_TRY

}  // namespace

Status CheckScenarioName(std::string_view name) {
  if (name.empty()) return ScenarioError("scenario.name", "missing");
  if (name.size() > kMaxScenarioNameBytes) {
    return ScenarioError("scenario.name", "longer than " + std::to_string(kMaxScenarioNameBytes) + " bytes");
  }
  // The name becomes a directory under the run's work directory: a path separator, "..",
  // a control byte or a leading '.'/'-' (hidden file, option-like) could make it point
  // elsewhere or mislead. The hostile name itself is not echoed back.
  const auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  };
  if (name.front() == '.' || name.front() == '-' || !std::all_of(name.begin(), name.end(), plain)) {
    return ScenarioError(
        "scenario.name",
        "not a plain file name (letters, digits, '-', '_' and '.', not starting with '.' or '-'; no '/')");
  }
  return Status::Ok();
}

std::string_view ToString(NodeFaultKind kind) {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

std::optional<NodeFaultKind> ParseNodeFaultKind(std::string_view name) {
  for (const KindName& k : kKinds) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

Result<NodeScenario> ParseNodeScenario(std::string_view text) {
  if (text.size() > kMaxScenarioBytes) {
    return Status(StatusCode::kInvalidArgument, "scenario larger than 1 MiB");
  }
  auto json = YamlToJson(text, 32, 200000);
  if (!json.ok()) return json.status();
  NodeScenario sc;
  if (Status s = ParseTop(*json, sc); !s.ok()) return s;
  return sc;
}

Result<NodeScenario> LoadNodeScenario(const std::string& path) {
  auto text = ReadScenarioFile(path, kMaxScenarioBytes);
  if (!text.ok()) return text.status();
  auto sc = ParseNodeScenario(*text);
  if (!sc.ok()) return Status(sc.status().code(), path + ": " + sc.status().message());
  return sc;
}

}  // namespace faultline::sim
