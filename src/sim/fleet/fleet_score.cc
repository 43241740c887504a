#include "sim/fleet/fleet_score.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace faultline::sim {
namespace {

// "pdu/r03-pdu-a" -> "r03-pdu-a"; a bare name stays as it is.
std::string PartName(const std::string& id) {
  const size_t slash = id.find('/');
  return slash == std::string::npos ? id : id.substr(slash + 1);
}

double Jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (b.empty()) return 1;
  const std::set<std::string> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  size_t both = 0;
  for (const std::string& s : sa) both += sb.count(s);
  const size_t either = sa.size() + sb.size() - both;
  return either == 0 ? 1 : static_cast<double>(both) / static_cast<double>(either);
}

}  // namespace

std::string StragglerNode(const fleet::FleetDiagnosis& d) {
  if (d.component.rfind("node/", 0) == 0) {
    const size_t end = d.component.find('/', 5);
    return d.component.substr(5, end == std::string::npos ? std::string::npos : end - 5);
  }
  return d.nodes.size() == 1 ? d.nodes.front() : "";
}

int StragglerGpu(const fleet::FleetDiagnosis& d) {
  const size_t at = d.component.find("/gpu/");
  if (at == std::string::npos) return -1;
  const std::string g = d.component.substr(at + 5);
  if (g.empty() || g.size() > 3 || !std::all_of(g.begin(), g.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::stoi(g);
}

FleetScore ScoreFleet(const FleetTruth& truth, const std::vector<TimedFleetDiagnosis>& returns,
                      const std::vector<double>& evidence_s, const std::vector<double>& evidence_k_s, double early_s) {
  FleetScore s;
  std::unordered_map<std::string, size_t> truth_straggler;
  for (size_t i = 0; i < truth.stragglers.size(); ++i) {
    truth_straggler.emplace(truth.stragglers[i].node, i);
    StragglerVerdict v;
    v.truth = truth.stragglers[i];
    v.evidence_s = i < evidence_s.size() ? evidence_s[i] : v.truth.start_s;
    v.evidence_k_s = i < evidence_k_s.size() ? evidence_k_s[i] : v.evidence_s;
    s.stragglers.push_back(std::move(v));
  }
  std::set<std::string> shared_nodes;
  for (const FleetTruthCause& c : truth.causes) {
    s.causes.push_back({c});
    shared_nodes.insert(c.nodes.begin(), c.nodes.end());
  }
  std::set<std::string> false_nodes, false_causes;
  std::vector<std::set<std::string>> straggler_ids(s.stragglers.size());
  for (const TimedFleetDiagnosis& td : returns) {
    const fleet::FleetDiagnosis& d = td.diagnosis;
    if (d.cause == "straggler") {
      const std::string node = StragglerNode(d);
      auto it = truth_straggler.find(node);
      if (it == truth_straggler.end()) {
        false_nodes.insert(node.empty() ? d.component : node);
        continue;
      }
      StragglerVerdict& v = s.stragglers[it->second];
      if (td.t < v.truth.start_s - early_s) {
        false_nodes.insert(node + " (before its start)");
        continue;
      }
      if (!v.found) {
        v.found = true;
        v.named_s = td.t;
        v.gpu_right = v.truth.gpu < 0 || StragglerGpu(d) == v.truth.gpu;
      }
      v.fault_class = d.fault_class;
      straggler_ids[it->second].insert(d.id);
      v.reports = straggler_ids[it->second].size();
      continue;
    }
    bool matched = false, early = false;
    for (CauseVerdict& v : s.causes) {
      // A whole rack slow names the part its nodes share ("rack" with "pdu/r02-pdu-a"):
      // the same conclusion as the shared cause itself.
      if (v.truth.cause != d.cause && d.cause != "rack") continue;
      const bool names = std::any_of(v.truth.components.begin(), v.truth.components.end(), [&](const std::string& c) {
        return c == d.component || PartName(c) == PartName(d.component);
      });
      if (!names) continue;
      if (td.t < v.truth.start_s - early_s) {
        early = true;
        continue;
      }
      matched = true;
      if (!v.found) {
        v.found = true;
        v.named_s = td.t;
        v.component = d.component;
      }
      v.node_jaccard = Jaccard(d.nodes, v.truth.nodes);  // returns come in time order: the latest wins
    }
    if (!matched) false_causes.insert(d.cause + " " + d.component + (early ? " (before its start)" : ""));
  }
  s.false_stragglers.assign(false_nodes.begin(), false_nodes.end());
  for (const std::string& n : s.false_stragglers) s.false_stragglers_shared += shared_nodes.contains(n);
  s.false_causes.assign(false_causes.begin(), false_causes.end());
  for (const StragglerVerdict& v : s.stragglers) (v.found ? s.straggler_tp : s.straggler_fn)++;
  s.straggler_fp = s.false_stragglers.size();
  const size_t named = s.straggler_tp + s.straggler_fp;
  s.precision = named == 0 ? 1 : static_cast<double>(s.straggler_tp) / static_cast<double>(named);
  s.recall = s.stragglers.empty() ? 1 : static_cast<double>(s.straggler_tp) / static_cast<double>(s.stragglers.size());
  s.f1 = s.precision + s.recall == 0 ? 0 : 2 * s.precision * s.recall / (s.precision + s.recall);
  size_t found = 0;
  for (const CauseVerdict& v : s.causes) found += v.found;
  s.correlation_accuracy = s.causes.empty() ? 1 : static_cast<double>(found) / static_cast<double>(s.causes.size());
  s.pass = s.straggler_fn == 0 && s.straggler_fp == 0 && found == s.causes.size() && s.false_causes.empty();
  return s;
}

}  // namespace faultline::sim
