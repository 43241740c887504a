#include "sim/fleet/fleet_scenario.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "sim/mock_bmc/yaml_json.h"
#include "sim/node/scenario_fields.h"

namespace faultline::sim {
namespace {

using Json = nlohmann::json;
using fleet::Cable;
using fleet::CableEnd;
using fleet::FleetNode;

constexpr double kMaxDurationS = 7 * 24 * 3600.0;
constexpr int kMaxDepth = 32;
constexpr size_t kMaxYamlNodes = 2'000'000;

struct KindName {
  FleetFaultKind kind;
  std::string_view name;
};
constexpr std::array<KindName, 8> kKinds{{
    {FleetFaultKind::kStragglerGpu, "straggler_gpu"},
    {FleetFaultKind::kNodeSlow, "node_slow"},
    {FleetFaultKind::kCableErrors, "cable_errors"},
    {FleetFaultKind::kPduSag, "pdu_sag"},
    {FleetFaultKind::kFeedSag, "feed_sag"},
    {FleetFaultKind::kLeafDegrade, "leaf_degrade"},
    {FleetFaultKind::kDriverRollout, "driver_rollout"},
    {FleetFaultKind::kLoopDegrade, "loop_degrade"},
}};

#define FL_TRY(expr)                             \
  do {                                           \
    if (Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

// Names go into NATS subjects, component ids and reports: printable, no spaces or
// control bytes, bounded.
Status CheckName(const std::string& where, const std::string& s) {
  if (s.empty()) return ScenarioError(where, "empty name");
  if (s.size() > kMaxFleetNameBytes) return ScenarioError(where, "longer than " + std::to_string(kMaxFleetNameBytes) + " bytes");
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == '*' || c == '>') {
      return ScenarioError(where, "not a plain name (letters, digits and punctuation other than / * >)");
    }
  }
  return Status::Ok();
}

Status ReadName(const Json& j, const char* key, const std::string& where, std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_string()) return ScenarioError(where + "." + key, "expected a string");
  out = it->get<std::string>();
  return CheckName(where + "." + key, out);
}

Status ReadText(const Json& j, const char* key, const std::string& where, size_t max, std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_string()) return ScenarioError(where + "." + key, "expected a string");
  out = it->get<std::string>();
  if (out.size() > max) return ScenarioError(where + "." + key, "longer than " + std::to_string(max) + " bytes");
  return Status::Ok();
}

Status ReadNameList(const Json& j, const char* key, const std::string& where, size_t max,
                    std::vector<std::string>& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_array()) return ScenarioError(where + "." + key, "expected a list of names");
  if (it->size() > max) return ScenarioError(where + "." + key, "more than " + std::to_string(max) + " entries");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& v = (*it)[i];
    const std::string w = where + "." + key + "[" + std::to_string(i) + "]";
    if (!v.is_string()) return ScenarioError(w, "expected a string");
    out.push_back(v.get<std::string>());
    FL_TRY(CheckName(w, out.back()));
  }
  return Status::Ok();
}

std::string Pad(int v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*d", width, v);
  return buf;
}

int Digits(int n) { return n >= 1000 ? 4 : n >= 100 ? 3 : 2; }

// Everything the parser resolves against while reading jobs, faults and truth.
struct Index {
  std::unordered_map<std::string, size_t> node;  // name -> topology index
  std::set<std::string> racks, pdus, feeds, loops, switches;
  std::unordered_set<std::string> cables;
};

Index BuildIndex(const fleet::FleetTopology& t) {
  Index ix;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const FleetNode& n = t.nodes[i];
    ix.node.emplace(n.name, i);
    if (!n.rack.empty()) ix.racks.insert(n.rack);
    if (!n.pdu.empty()) ix.pdus.insert(n.pdu);
    if (!n.feed.empty()) ix.feeds.insert(n.feed);
    if (!n.cooling_loop.empty()) ix.loops.insert(n.cooling_loop);
    if (!n.leaf_switch.empty()) ix.switches.insert(n.leaf_switch);
  }
  for (const Cable& c : t.cables) {
    ix.cables.insert(c.id);
    if (!c.a.switch_name.empty()) ix.switches.insert(c.a.switch_name);
    if (!c.b.switch_name.empty()) ix.switches.insert(c.b.switch_name);
  }
  return ix;
}

Status GenerateNodes(const FleetShape& s, fleet::FleetTopology& t) {
  const size_t total = static_cast<size_t>(s.racks) * static_cast<size_t>(s.nodes_per_rack);
  if (total > kMaxFleetNodes) {
    return Status(StatusCode::kInvalidArgument, "fleet: more than " + std::to_string(kMaxFleetNodes) + " nodes");
  }
  const int rd = Digits(s.racks), nd = Digits(s.nodes_per_rack);
  const int loops = (s.racks + s.racks_per_loop - 1) / s.racks_per_loop;
  const int leaves = (s.racks + s.racks_per_leaf - 1) / s.racks_per_leaf;
  std::vector<int> leaf_port(static_cast<size_t>(leaves), 0);
  for (int r = 0; r < s.racks; ++r) {
    const std::string rack = "r" + Pad(r + 1, rd);
    const std::string loop = "loop-" + Pad(r / s.racks_per_loop + 1, Digits(loops));
    const int leaf_no = r / s.racks_per_leaf;
    const std::string leaf = "leaf-" + Pad(leaf_no + 1, Digits(leaves));
    for (int k = 0; k < s.nodes_per_rack; ++k) {
      FleetNode n;
      n.name = rack + "-n" + Pad(k + 1, nd);
      n.rack = rack;
      const bool second = s.pdus_per_rack == 2 && k >= (s.nodes_per_rack + 1) / 2;
      n.pdu = rack + (second ? "-pdu-b" : "-pdu-a");
      n.feed = second ? "feed-b" : "feed-a";
      n.cooling_loop = loop;
      n.leaf_switch = leaf;
      n.driver = s.driver;
      if (s.leaf_cables) {
        for (int h = 0; h < s.hcas; ++h) {
          Cable c;
          c.id = "C-" + n.name + "-" + std::to_string(h);
          c.a.node = n.name;
          c.a.device = "mlx5_" + std::to_string(h);
          c.a.port = 1;
          c.b.switch_name = leaf;
          c.b.switch_port = "p" + std::to_string(++leaf_port[static_cast<size_t>(leaf_no)]);
          c.b.port = 0;
          t.cables.push_back(std::move(c));
        }
      }
      t.nodes.push_back(std::move(n));
    }
  }
  return Status::Ok();
}

Status ParseExplicitNodes(const Json& list, const std::string& driver, fleet::FleetTopology& t) {
  if (!list.is_array() || list.empty()) return ScenarioError("fleet.nodes", "expected a non-empty list");
  if (list.size() > kMaxFleetNodes) {
    return Status(StatusCode::kInvalidArgument, "fleet.nodes: more than " + std::to_string(kMaxFleetNodes));
  }
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string w = "fleet.nodes[" + std::to_string(i) + "]";
    const Json& j = list[i];
    FL_TRY(CheckKeys(j, w, {"name", "rack", "pdu", "feed", "cooling_loop", "leaf_switch", "driver"}));
    FleetNode n;
    n.driver = driver;
    FL_TRY(ReadName(j, "name", w, n.name));
    if (n.name.empty()) return ScenarioError(w + ".name", "required");
    FL_TRY(ReadName(j, "rack", w, n.rack));
    FL_TRY(ReadName(j, "pdu", w, n.pdu));
    FL_TRY(ReadName(j, "feed", w, n.feed));
    FL_TRY(ReadName(j, "cooling_loop", w, n.cooling_loop));
    FL_TRY(ReadName(j, "leaf_switch", w, n.leaf_switch));
    FL_TRY(ReadName(j, "driver", w, n.driver));
    if (!seen.insert(n.name).second) return ScenarioError(w + ".name", "duplicate node '" + n.name + "'");
    t.nodes.push_back(std::move(n));
  }
  return Status::Ok();
}

Status ParseCableEnd(const Json& j, const std::string& w, const Index& ix, CableEnd& e) {
  // The topology file's own form (fleet/fleet_topology.h): a node end names node, device
  // and port; a switch end names switch and switch_port.
  FL_TRY(CheckKeys(j, w, {"node", "device", "port", "switch", "switch_port"}));
  FL_TRY(ReadName(j, "node", w, e.node));
  FL_TRY(ReadName(j, "device", w, e.device));
  FL_TRY(ReadName(j, "switch", w, e.switch_name));
  FL_TRY(ReadName(j, "switch_port", w, e.switch_port));
  if (e.node.empty() == e.switch_name.empty()) return ScenarioError(w, "one of 'node' or 'switch' is required");
  if (!e.node.empty()) {
    if (!ix.node.contains(e.node)) return ScenarioError(w + ".node", "no such node '" + e.node + "'");
    if (j.contains("switch_port")) return ScenarioError(w + ".switch_port", "only for a switch end");
    if (e.device.empty()) e.device = "mlx5_0";
    FL_TRY(ReadInt(j, "port", w, 1, 64, e.port));
  } else {
    if (j.contains("device")) return ScenarioError(w + ".device", "only for a node end");
    if (j.contains("port")) return ScenarioError(w + ".port", "a switch end names its port with 'switch_port'");
    e.port = 0;
  }
  return Status::Ok();
}

Status ParseCables(const Json& list, fleet::FleetTopology& t) {
  if (!list.is_array()) return ScenarioError("fleet.cables", "expected a list");
  if (list.size() + t.cables.size() > kMaxFleetCables) {
    return Status(StatusCode::kInvalidArgument, "fleet.cables: more than " + std::to_string(kMaxFleetCables));
  }
  Index ix = BuildIndex(t);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string w = "fleet.cables[" + std::to_string(i) + "]";
    const Json& j = list[i];
    FL_TRY(CheckKeys(j, w, {"id", "a", "b"}));
    Cable c;
    FL_TRY(ReadName(j, "id", w, c.id));
    if (c.id.empty()) return ScenarioError(w + ".id", "required");
    if (!ix.cables.insert(c.id).second) return ScenarioError(w + ".id", "duplicate cable '" + c.id + "'");
    if (!j.contains("a") || !j.contains("b")) return ScenarioError(w, "both ends 'a' and 'b' are required");
    FL_TRY(ParseCableEnd(j["a"], w + ".a", ix, c.a));
    FL_TRY(ParseCableEnd(j["b"], w + ".b", ix, c.b));
    t.cables.push_back(std::move(c));
  }
  return Status::Ok();
}

Status ParseFleet(const Json& j, FleetScenario& sc) {
  const std::string w = "fleet";
  FL_TRY(CheckKeys(j, w,
                   {"site", "racks", "nodes_per_rack", "pdus_per_rack", "racks_per_loop", "racks_per_leaf", "hcas",
                    "driver", "leaf_cables", "nodes", "cables"}));
  FleetShape s;
  FL_TRY(ReadName(j, "site", w, sc.topology.site));
  FL_TRY(ReadInt(j, "racks", w, 1, 10000, s.racks));
  FL_TRY(ReadInt(j, "nodes_per_rack", w, 1, 1000, s.nodes_per_rack));
  FL_TRY(ReadInt(j, "pdus_per_rack", w, 1, 2, s.pdus_per_rack));
  FL_TRY(ReadInt(j, "racks_per_loop", w, 1, 10000, s.racks_per_loop));
  FL_TRY(ReadInt(j, "racks_per_leaf", w, 1, 10000, s.racks_per_leaf));
  FL_TRY(ReadInt(j, "hcas", w, 0, 8, s.hcas));
  FL_TRY(ReadName(j, "driver", w, s.driver));
  FL_TRY(ReadBool(j, "leaf_cables", w, s.leaf_cables));
  if (j.contains("nodes")) {
    for (const char* k : {"racks", "nodes_per_rack", "pdus_per_rack", "racks_per_loop", "racks_per_leaf"}) {
      if (j.contains(k)) return ScenarioError(w + "." + k, "not with an explicit 'nodes' list");
    }
    FL_TRY(ParseExplicitNodes(j["nodes"], s.driver, sc.topology));
  } else {
    FL_TRY(GenerateNodes(s, sc.topology));
  }
  if (j.contains("cables")) FL_TRY(ParseCables(j["cables"], sc.topology));
  return Status::Ok();
}

Status ParseNodeSpec(const Json& j, NodeSpec& n) {
  const std::string w = "node";
  FL_TRY(CheckKeys(
      j, w,
      {"gpus", "psus", "psu_capacity_w", "gpu_busy_w", "host_w", "inlet_c", "coolant_supply_c", "coolant_flow_lpm"}));
  FL_TRY(ReadInt(j, "gpus", w, 1, 8, n.gpus));
  FL_TRY(ReadInt(j, "psus", w, 1, 12, n.psus));
  FL_TRY(ReadNumber(j, "psu_capacity_w", w, 100, 20000, n.psu_capacity_w));
  FL_TRY(ReadNumber(j, "gpu_busy_w", w, 10, 2000, n.gpu_busy_w));
  FL_TRY(ReadNumber(j, "host_w", w, 0, 50000, n.host_w));
  FL_TRY(ReadNumber(j, "inlet_c", w, -10, 60, n.inlet_c));
  FL_TRY(ReadNumber(j, "coolant_supply_c", w, 0, 70, n.coolant_supply_c));
  FL_TRY(ReadNumber(j, "coolant_flow_lpm", w, 1, 1000, n.coolant_flow_lpm));
  return Status::Ok();
}

Status ParseAgent(const Json& j, FleetAgentSpec& a) {
  const std::string w = "agent";
  FL_TRY(CheckKeys(j, w,
                   {"step_report_s", "gpu_sample_s", "oob_sample_s", "batch_s", "node_eval_s", "detect_s",
                    "diagnosis_refresh_s", "evaluate_s"}));
  FL_TRY(ReadNumber(j, "node_eval_s", w, 0.1, 3600, a.node_eval_s));
  FL_TRY(ReadNumber(j, "step_report_s", w, 0.1, 3600, a.step_report_s));
  FL_TRY(ReadNumber(j, "gpu_sample_s", w, 0.1, 3600, a.gpu_sample_s));
  FL_TRY(ReadNumber(j, "oob_sample_s", w, 0.1, 3600, a.oob_sample_s));
  FL_TRY(ReadNumber(j, "batch_s", w, 0.1, 3600, a.batch_s));
  FL_TRY(ReadNumber(j, "detect_s", w, 0, 3600, a.detect_s));
  FL_TRY(ReadNumber(j, "diagnosis_refresh_s", w, 1, 86400, a.diagnosis_refresh_s));
  FL_TRY(ReadNumber(j, "evaluate_s", w, 0.1, 3600, a.evaluate_s));
  return Status::Ok();
}

// Which topology nodes a job or roll-out names: `nodes`, `racks`, or `first` + `count`
// (positions in the fleet's node order).
Status ResolveNodes(const Json& j, const std::string& w, const FleetScenario& sc, const Index& ix,
                    std::vector<std::string>& out) {
  const int ways = static_cast<int>(j.contains("nodes")) + static_cast<int>(j.contains("racks")) +
                   static_cast<int>(j.contains("first") || j.contains("count"));
  if (ways != 1) return ScenarioError(w, "name the nodes with exactly one of 'nodes', 'racks', or 'first' + 'count'");
  if (j.contains("nodes")) {
    FL_TRY(ReadNameList(j, "nodes", w, kMaxFleetNodes, out));
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < out.size(); ++i) {
      if (!ix.node.contains(out[i]))
        return ScenarioError(w + ".nodes[" + std::to_string(i) + "]", "no such node '" + out[i] + "'");
      if (!seen.insert(out[i]).second) return ScenarioError(w + ".nodes[" + std::to_string(i) + "]", "listed twice");
    }
  } else if (j.contains("racks")) {
    std::vector<std::string> racks;
    FL_TRY(ReadNameList(j, "racks", w, 10000, racks));
    for (size_t i = 0; i < racks.size(); ++i) {
      if (!ix.racks.contains(racks[i])) return ScenarioError(w + ".racks[" + std::to_string(i) + "]", "no such rack");
    }
    const std::set<std::string> want(racks.begin(), racks.end());
    for (const FleetNode& n : sc.topology.nodes) {
      if (want.contains(n.rack)) out.push_back(n.name);
    }
  } else {
    int first = 0, count = 0;
    const int total = static_cast<int>(sc.topology.nodes.size());
    FL_TRY(ReadInt(j, "first", w, 0, total - 1, first));
    if (!j.contains("count")) return ScenarioError(w + ".count", "required with 'first'");
    FL_TRY(ReadInt(j, "count", w, 1, total, count));
    if (first + count > total) return ScenarioError(w + ".count", "runs past the fleet's " + std::to_string(total) + " nodes");
    for (int i = first; i < first + count; ++i) out.push_back(sc.topology.nodes[static_cast<size_t>(i)].name);
  }
  if (out.empty()) return ScenarioError(w, "names no node");
  return Status::Ok();
}

Status ParseJobs(const Json& list, FleetScenario& sc, const Index& ix) {
  if (!list.is_array()) return ScenarioError("jobs", "expected a list");
  if (list.size() > kMaxFleetJobs) return Status(StatusCode::kInvalidArgument, "jobs: too many");
  std::unordered_set<std::string> names;
  std::unordered_map<std::string, std::string> busy;  // node -> job: one job per node at a time
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string w = "jobs[" + std::to_string(i) + "]";
    const Json& j = list[i];
    FL_TRY(CheckKeys(j, w,
                     {"name",
                      "nodes",
                      "racks",
                      "first",
                      "count",
                      "step_s",
                      "noise",
                      "node_spread",
                      "checkpoint_every",
                      "checkpoint_steps",
                      "checkpoint_factor",
                      "eval_every",
                      "eval_steps",
                      "eval_factor",
                      "stall_every_s",
                      "stall_s",
                      "stall_factor",
                      "samples_per_step",
                      "start_s",
                      "end_s"}));
    FleetJob job;
    FL_TRY(ReadName(j, "name", w, job.name));
    if (job.name.empty()) return ScenarioError(w + ".name", "required");
    if (!names.insert(job.name).second) return ScenarioError(w + ".name", "duplicate job '" + job.name + "'");
    FL_TRY(ResolveNodes(j, w, sc, ix, job.nodes));
    FL_TRY(ReadNumber(j, "step_s", w, 0.01, 3600, job.step_s));
    FL_TRY(ReadNumber(j, "noise", w, 0, 0.5, job.noise));
    FL_TRY(ReadNumber(j, "node_spread", w, 0, 0.2, job.node_spread));
    FL_TRY(ReadInt(j, "checkpoint_every", w, 0, 10'000'000, job.checkpoint_every));
    FL_TRY(ReadInt(j, "checkpoint_steps", w, 1, 100000, job.checkpoint_steps));
    FL_TRY(ReadNumber(j, "checkpoint_factor", w, 1, 100, job.checkpoint_factor));
    FL_TRY(ReadInt(j, "eval_every", w, 0, 10'000'000, job.eval_every));
    FL_TRY(ReadInt(j, "eval_steps", w, 1, 100000, job.eval_steps));
    FL_TRY(ReadNumber(j, "eval_factor", w, 1, 100, job.eval_factor));
    FL_TRY(ReadNumber(j, "stall_every_s", w, 0, kMaxDurationS, job.stall_every_s));
    FL_TRY(ReadNumber(j, "stall_s", w, 0.1, 3600, job.stall_s));
    FL_TRY(ReadNumber(j, "stall_factor", w, 1, 100, job.stall_factor));
    if (job.stall_every_s > 0 && job.stall_every_s < 1) return ScenarioError(w + ".stall_every_s", "below 1 s");
    FL_TRY(ReadNumber(j, "samples_per_step", w, 1, 1e9, job.samples_per_step));
    FL_TRY(ReadNumber(j, "start_s", w, 0, kMaxDurationS, job.start_s));
    double end = -1;
    FL_TRY(ReadNumber(j, "end_s", w, 0, kMaxDurationS, end));
    if (j.contains("end_s")) {
      if (end <= job.start_s) return ScenarioError(w + ".end_s", "not after start_s");
      job.end_s = end;
    }
    for (const std::string& n : job.nodes) {
      auto [it, fresh] = busy.emplace(n, job.name);
      if (!fresh) return ScenarioError(w + ".nodes", "node '" + n + "' is already in job '" + it->second + "'");
    }
    sc.jobs.push_back(std::move(job));
  }
  return Status::Ok();
}

FaultClass DefaultNodeClass(FleetFaultKind k) {
  switch (k) {
    case FleetFaultKind::kStragglerGpu:
      return FaultClass::kGpuThermal;
    case FleetFaultKind::kPduSag:
    case FleetFaultKind::kFeedSag:
      return FaultClass::kVoltageOutOfRange;
    case FleetFaultKind::kLoopDegrade:
      return FaultClass::kCoolingDegraded;
    case FleetFaultKind::kCableErrors:
    case FleetFaultKind::kLeafDegrade:
      return FaultClass::kIbLinkErrors;
    case FleetFaultKind::kDriverRollout:
      return FaultClass::kDriverFault;
    case FleetFaultKind::kNodeSlow:
      return FaultClass::kNone;
  }
  return FaultClass::kNone;
}

Status ParseTarget(const Json& j, const char* key, const std::string& w, const std::set<std::string>& known,
                   const char* what, std::string& out) {
  if (!j.contains(key)) return ScenarioError(w + "." + key, "required");
  FL_TRY(ReadName(j, key, w, out));
  if (!known.contains(out)) return ScenarioError(w + "." + key, std::string("no such ") + what + " '" + out + "'");
  return Status::Ok();
}

Status ParseFault(const Json& j, const std::string& w, FleetScenario& sc, const Index& ix, FleetFault& f) {
  FL_TRY(CheckKeys(j, w, {"at",    "until", "ramp_s", "fault",    "value",   "node",     "gpu",
                          "cable", "pdu",   "feed",   "switch",   "loop",    "driver",   "nodes",
                          "racks", "first", "count",  "fraction", "every_s", "slowdown", "node_class"}));
  if (!j.contains("fault") || !j["fault"].is_string()) return ScenarioError(w + ".fault", "required (a fault kind)");
  auto kind = ParseFleetFaultKind(j["fault"].get<std::string>());
  if (!kind) return ScenarioError(w + ".fault", "unknown fault kind '" + j["fault"].get<std::string>() + "'");
  f.kind = *kind;
  if (!j.contains("at")) return ScenarioError(w + ".at", "required");
  FL_TRY(ReadNumber(j, "at", w, 0, kMaxDurationS, f.at));
  double until = -1;
  FL_TRY(ReadNumber(j, "until", w, 0, kMaxDurationS, until));
  if (j.contains("until")) {
    if (until <= f.at) return ScenarioError(w + ".until", "not after 'at'");
    f.until = until;
  }
  FL_TRY(ReadNumber(j, "ramp_s", w, 0, kMaxDurationS, f.ramp_s));
  const bool needs_value = f.kind != FleetFaultKind::kDriverRollout;
  if (needs_value && !j.contains("value")) return ScenarioError(w + ".value", "required");
  switch (f.kind) {
    case FleetFaultKind::kStragglerGpu:
      f.gpu = 0;
      if (!j.contains("gpu")) return ScenarioError(w + ".gpu", "required");
      FL_TRY(ReadInt(j, "gpu", w, 0, sc.node.gpus - 1, f.gpu));
      FL_TRY(ReadNumber(j, "value", w, 0, 100, f.value));
      [[fallthrough]];
    case FleetFaultKind::kNodeSlow:
      if (!j.contains("node")) return ScenarioError(w + ".node", "required");
      FL_TRY(ReadName(j, "node", w, f.node));
      if (!ix.node.contains(f.node)) return ScenarioError(w + ".node", "no such node '" + f.node + "'");
      if (f.kind == FleetFaultKind::kNodeSlow) FL_TRY(ReadNumber(j, "value", w, 1, 100, f.value));
      break;
    case FleetFaultKind::kCableErrors: {
      if (!j.contains("cable")) return ScenarioError(w + ".cable", "required");
      FL_TRY(ReadName(j, "cable", w, f.target));
      if (!ix.cables.contains(f.target)) return ScenarioError(w + ".cable", "no such cable '" + f.target + "'");
      FL_TRY(ReadNumber(j, "value", w, 0.01, 1e6, f.value));
      break;
    }
    case FleetFaultKind::kPduSag:
      FL_TRY(ParseTarget(j, "pdu", w, ix.pdus, "PDU", f.target));
      FL_TRY(ReadNumber(j, "value", w, 0, 300, f.value));
      break;
    case FleetFaultKind::kFeedSag:
      FL_TRY(ParseTarget(j, "feed", w, ix.feeds, "feed", f.target));
      FL_TRY(ReadNumber(j, "value", w, 0, 300, f.value));
      break;
    case FleetFaultKind::kLeafDegrade:
      FL_TRY(ParseTarget(j, "switch", w, ix.switches, "switch", f.target));
      FL_TRY(ReadNumber(j, "value", w, 0.01, 1e6, f.value));
      FL_TRY(ReadNumber(j, "fraction", w, 0.01, 1, f.fraction));
      break;
    case FleetFaultKind::kLoopDegrade:
      FL_TRY(ParseTarget(j, "loop", w, ix.loops, "cooling loop", f.target));
      FL_TRY(ReadNumber(j, "value", w, 0, 80, f.value));
      break;
    case FleetFaultKind::kDriverRollout:
      if (!j.contains("driver")) return ScenarioError(w + ".driver", "required (the new version)");
      FL_TRY(ReadName(j, "driver", w, f.target));
      FL_TRY(ResolveNodes(j, w, sc, ix, f.nodes));
      FL_TRY(ReadNumber(j, "every_s", w, 0, 86400, f.every_s));
      FL_TRY(ReadNumber(j, "slowdown", w, 1, 10, f.slowdown));
      break;
  }
  // Parameters a kind does not take are mistakes, not decoration.
  auto unused = [&](const char* key, bool used) -> Status {
    return j.contains(key) && !used ? ScenarioError(w + "." + key, "not a parameter of " + std::string(ToString(f.kind)))
                                    : Status::Ok();
  };
  const FleetFaultKind k = f.kind;
  FL_TRY(unused("gpu", k == FleetFaultKind::kStragglerGpu));
  FL_TRY(unused("node", k == FleetFaultKind::kStragglerGpu || k == FleetFaultKind::kNodeSlow));
  FL_TRY(unused("fraction", k == FleetFaultKind::kLeafDegrade));
  FL_TRY(unused("every_s", k == FleetFaultKind::kDriverRollout));
  FL_TRY(unused("slowdown", k == FleetFaultKind::kDriverRollout));
  FL_TRY(unused("value", k != FleetFaultKind::kDriverRollout));
  for (const char* key : {"nodes", "racks", "first", "count", "driver"}) {
    FL_TRY(unused(key, k == FleetFaultKind::kDriverRollout));
  }
  FL_TRY(unused("cable", k == FleetFaultKind::kCableErrors));
  FL_TRY(unused("pdu", k == FleetFaultKind::kPduSag));
  FL_TRY(unused("feed", k == FleetFaultKind::kFeedSag));
  FL_TRY(unused("switch", k == FleetFaultKind::kLeafDegrade));
  FL_TRY(unused("loop", k == FleetFaultKind::kLoopDegrade));
  FL_TRY(unused("ramp_s", k == FleetFaultKind::kPduSag || k == FleetFaultKind::kFeedSag ||
                              k == FleetFaultKind::kLoopDegrade || k == FleetFaultKind::kStragglerGpu ||
                              k == FleetFaultKind::kNodeSlow));
  if (j.contains("node_class")) {
    if (!j["node_class"].is_string()) return ScenarioError(w + ".node_class", "expected a fault class");
    auto c = ParseFaultClass(j["node_class"].get<std::string>());
    if (!c) return ScenarioError(w + ".node_class", "unknown fault class");
    f.node_class = *c;
  }
  if (!f.node_class) f.node_class = DefaultNodeClass(f.kind);
  return Status::Ok();
}

Status ParseFaults(const Json& list, FleetScenario& sc, const Index& ix) {
  if (!list.is_array()) return ScenarioError("faults", "expected a list");
  if (list.size() > kMaxFleetFaults) return Status(StatusCode::kInvalidArgument, "faults: too many");
  for (size_t i = 0; i < list.size(); ++i) {
    FleetFault f;
    FL_TRY(ParseFault(list[i], "faults[" + std::to_string(i) + "]", sc, ix, f));
    if (f.at > sc.duration_s) return ScenarioError("faults[" + std::to_string(i) + "].at", "after the scenario's end");
    sc.faults.push_back(std::move(f));
  }
  std::stable_sort(sc.faults.begin(), sc.faults.end(),
                   [](const FleetFault& a, const FleetFault& b) { return a.at < b.at; });
  // The operator's topology file describes the fleet after the roll-outs: upgraded nodes
  // show their new version (what the analyzer correlates on).
  for (const FleetFault& f : sc.faults) {
    if (f.kind != FleetFaultKind::kDriverRollout) continue;
    for (const std::string& n : f.nodes) sc.topology.nodes[ix.node.at(n)].driver = f.target;
  }
  return Status::Ok();
}

Status ParseTruth(const Json& j, FleetScenario& sc, const Index& ix) {
  FL_TRY(CheckKeys(j, "truth", {"causes", "stragglers"}));
  if (j.contains("causes")) {
    const Json& list = j["causes"];
    if (!list.is_array() || list.size() > kMaxFleetFaults) return ScenarioError("truth.causes", "expected a list");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string w = "truth.causes[" + std::to_string(i) + "]";
      const Json& c = list[i];
      FL_TRY(CheckKeys(c, w, {"cause", "component", "components", "nodes", "start_s"}));
      FleetTruthCause t;
      FL_TRY(ReadText(c, "cause", w, kMaxFleetNameBytes, t.cause));
      if (t.cause.empty()) return ScenarioError(w + ".cause", "required");
      if (c.contains("component") == c.contains("components")) {
        return ScenarioError(w, "exactly one of 'component' or 'components' is required");
      }
      if (c.contains("component")) {
        std::string one;
        FL_TRY(ReadText(c, "component", w, 2 * kMaxFleetNameBytes, one));
        t.components.push_back(one);
      } else {
        auto it = c.find("components");
        if (!it->is_array() || it->empty() || it->size() > 64) return ScenarioError(w + ".components", "expected 1-64 ids");
        for (const Json& v : *it) {
          if (!v.is_string() || v.get<std::string>().size() > 2 * kMaxFleetNameBytes) {
            return ScenarioError(w + ".components", "expected component ids");
          }
          t.components.push_back(v.get<std::string>());
        }
      }
      FL_TRY(ReadNameList(c, "nodes", w, kMaxFleetNodes, t.nodes));
      for (size_t k = 0; k < t.nodes.size(); ++k) {
        if (!ix.node.contains(t.nodes[k])) return ScenarioError(w + ".nodes[" + std::to_string(k) + "]", "no such node");
      }
      std::sort(t.nodes.begin(), t.nodes.end());
      FL_TRY(ReadNumber(c, "start_s", w, 0, kMaxDurationS, t.start_s));
      sc.truth.causes.push_back(std::move(t));
    }
  }
  if (j.contains("stragglers")) {
    const Json& list = j["stragglers"];
    if (!list.is_array() || list.size() > kMaxFleetNodes) return ScenarioError("truth.stragglers", "expected a list");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string w = "truth.stragglers[" + std::to_string(i) + "]";
      const Json& s = list[i];
      FL_TRY(CheckKeys(s, w, {"node", "gpu", "job", "start_s"}));
      FleetTruthStraggler t;
      if (!s.contains("node")) return ScenarioError(w + ".node", "required");
      FL_TRY(ReadName(s, "node", w, t.node));
      if (!ix.node.contains(t.node)) return ScenarioError(w + ".node", "no such node '" + t.node + "'");
      FL_TRY(ReadInt(s, "gpu", w, -1, sc.node.gpus - 1, t.gpu));
      FL_TRY(ReadName(s, "job", w, t.job));
      if (!s.contains("start_s")) return ScenarioError(w + ".start_s", "required");
      FL_TRY(ReadNumber(s, "start_s", w, 0, kMaxDurationS, t.start_s));
      sc.truth.stragglers.push_back(std::move(t));
    }
  }
  return Status::Ok();
}

Status ParseTop(const Json& j, FleetScenario& sc) {
  FL_TRY(CheckKeys(j, "scenario",
                   {"name", "description", "duration_s", "seed", "start_utc_s", "node", "noise", "agent", "fleet",
                    "jobs", "faults", "truth"}));
  if (!j.contains("name") || !j["name"].is_string()) return ScenarioError("scenario.name", "required");
  sc.name = j["name"].get<std::string>();
  FL_TRY(CheckScenarioName(sc.name));
  FL_TRY(ReadText(j, "description", "scenario", 4096, sc.description));
  FL_TRY(ReadNumber(j, "duration_s", "scenario", 1, kMaxDurationS, sc.duration_s));
  double seed = 1;
  FL_TRY(ReadNumber(j, "seed", "scenario", 0, 9e15, seed));
  if (seed != std::floor(seed)) return ScenarioError("scenario.seed", "expected an integer");
  sc.seed = static_cast<uint64_t>(seed);
  double start = static_cast<double>(sc.start_ns / 1'000'000'000);
  FL_TRY(ReadNumber(j, "start_utc_s", "scenario", 0, 4e9, start));
  sc.start_ns = static_cast<int64_t>(start) * 1'000'000'000;
  if (j.contains("node")) FL_TRY(ParseNodeSpec(j["node"], sc.node));
  if (j.contains("noise")) {
    FL_TRY(CheckKeys(j["noise"], "noise", {"temp_wander_c", "power_noise_w"}));
    FL_TRY(ReadNumber(j["noise"], "temp_wander_c", "noise", 0, 20, sc.temp_wander_c));
    FL_TRY(ReadNumber(j["noise"], "power_noise_w", "noise", 0, 200, sc.power_noise_w));
  }
  if (j.contains("agent")) FL_TRY(ParseAgent(j["agent"], sc.agent));
  if (!j.contains("fleet")) return ScenarioError("scenario.fleet", "required");
  FL_TRY(ParseFleet(j["fleet"], sc));
  for (const FleetNode& n : sc.topology.nodes) sc.initial_driver.push_back(n.driver);
  const Index ix = BuildIndex(sc.topology);
  if (j.contains("jobs")) FL_TRY(ParseJobs(j["jobs"], sc, ix));
  if (j.contains("faults")) FL_TRY(ParseFaults(j["faults"], sc, ix));
  if (!j.contains("truth")) return ScenarioError("scenario.truth", "required (an empty truth is `truth: {}`)");
  FL_TRY(ParseTruth(j["truth"], sc, ix));
  return Status::Ok();
}

}  // namespace

std::string_view ToString(FleetFaultKind kind) {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

std::optional<FleetFaultKind> ParseFleetFaultKind(std::string_view name) {
  for (const KindName& k : kKinds) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

std::string FleetTopologyJson(const fleet::FleetTopology& t) {
  Json nodes = Json::array(), cables = Json::array();
  for (const FleetNode& n : t.nodes) {
    Json j = {{"name", n.name}};
    for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"site", &n.site},
                                     {"rack", &n.rack},
                                     {"pdu", &n.pdu},
                                     {"feed", &n.feed},
                                     {"cooling_loop", &n.cooling_loop},
                                     {"leaf_switch", &n.leaf_switch},
                                     {"driver", &n.driver}}) {
      if (!value->empty()) j[key] = *value;
    }
    nodes.push_back(std::move(j));
  }
  auto end = [](const CableEnd& e) {
    if (!e.node.empty()) return Json{{"node", e.node}, {"device", e.device}, {"port", e.port}};
    Json j = {{"switch", e.switch_name}};
    if (!e.switch_port.empty()) j["switch_port"] = e.switch_port;
    return j;
  };
  for (const Cable& c : t.cables) cables.push_back({{"id", c.id}, {"a", end(c.a)}, {"b", end(c.b)}});
  return Json{{"site", t.site}, {"nodes", std::move(nodes)}, {"cables", std::move(cables)}}.dump(1);
}

Result<FleetScenario> ParseFleetScenario(std::string_view text) {
  if (text.size() > kMaxFleetScenarioBytes) {
    return Status(StatusCode::kInvalidArgument,
                  "fleet scenario larger than " + std::to_string(kMaxFleetScenarioBytes >> 20) + " MiB");
  }
  auto json = YamlToJson(text, kMaxDepth, kMaxYamlNodes);
  if (!json.ok()) return json.status();
  FleetScenario sc;
  try {
    if (Status s = ParseTop(*json, sc); !s.ok()) return s;
  } catch (const Json::exception& e) {  // a type the readers did not expect: still an error, never a crash
    return Status(StatusCode::kCorrupt, std::string("scenario: ") + e.what());
  }
  return sc;
}

Result<FleetScenario> LoadFleetScenario(const std::string& path) {
  auto text = ReadScenarioFile(path, kMaxFleetScenarioBytes);
  if (!text.ok()) return text.status();
  auto sc = ParseFleetScenario(*text);
  if (!sc.ok()) return Status(sc.status().code(), path + ": " + sc.status().message());
  return sc;
}

}  // namespace faultline::sim
