#include "fleet/analyzer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "fleet/correlate.h"
#include "fleet/dedup.h"
#include "fleet/names.h"
#include "fleet/node_isolate.h"
#include "fleet/node_state.h"
#include "fleet/peers.h"

namespace faultline::fleet {
namespace {

constexpr int kSnapshotVersion = 1;
constexpr size_t kMaxEvidenceLines = 16;

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Percent(double fraction) { return Fixed(fraction * 100, 0) + "%"; }

// A fleet diagnosis still being judged, and what was last returned for it.
struct OpenEntry {
  FleetDiagnosis diagnosis;
  std::string reported;      // Signature() when last returned by Evaluate
  std::string isolated_for;  // straggler: component and links its node_diagnoses answer
  bool own_evidence = false;  // straggler: node_diagnoses are the node's own, not the isolator's
};

// A straggler or rack closed lately: if it opens again within the window it is the same
// report (its id, what was last returned), not a new one.
struct ClosedEntry {
  std::string id;
  int64_t first_ns = 0;
  std::string reported;
  int64_t closed_ns = 0;
};

std::string IsolatedFor(const FleetDiagnosis& d) {
  std::string s = d.component + "|";
  for (const auto& l : d.linked) s += l + ",";
  return s;
}

// Whether a diagnosis names a cause below the workload (a power brake, a throttling GPU, a
// link): hardware evidence, where a slow node's class comes from.
bool NamesHardware(const Diagnosis& d) {
  return d.fault_class != FaultClass::kNone && d.fault_class != FaultClass::kWorkloadImbalance &&
         d.layer != Layer::kWorkload;
}

// The node's own diagnoses held for the window that name hardware: the one on the named
// GPU first, then the newest first. What the node itself concluded beats what the
// analyzer can re-derive from the little it holds of the node.
std::vector<Diagnosis> OwnHardwareDiagnoses(const NodeState& node, const std::string& gpu) {
  std::vector<const Diagnosis*> own;
  for (const HeldDiagnosis& h : node.diagnoses) {
    if (NamesHardware(h.diagnosis)) own.push_back(&h.diagnosis);
  }
  auto on_gpu = [&](const Diagnosis* d) {
    return !gpu.empty() && d->component.type == ComponentType::kGpu && d->component.name == gpu;
  };
  std::stable_sort(own.begin(), own.end(), [&](const Diagnosis* a, const Diagnosis* b) {
    return std::make_tuple(!on_gpu(a), -a->last_ns) < std::make_tuple(!on_gpu(b), -b->last_ns);
  });
  std::vector<Diagnosis> out;
  for (const Diagnosis* d : own) out.push_back(*d);
  return out;
}

// "node/<n>/gpu/<g>" -> "<g>"; "" when no GPU is named.
std::string NamedGpu(const FleetDiagnosis& d) {
  const size_t at = d.component.rfind("/gpu/");
  return at == std::string::npos ? std::string() : d.component.substr(at + 5);
}

// The straggler's class, action and severity are its node's own evidence's when that names
// a cause below the workload: the node's own diagnoses first, else its isolator's answer
// over what the analyzer holds. Without hardware evidence it stays the workload's.
void ApplyNodeEvidence(FleetDiagnosis& d, bool own) {
  if (d.node_diagnoses.empty()) return;
  const Diagnosis& primary = d.node_diagnoses.front();
  if (!NamesHardware(primary)) return;
  d.fault_class = primary.fault_class;
  d.action = primary.action;
  d.severity = std::max(d.severity, primary.severity);
  d.summary += std::string(own ? "; its own diagnosis: " : "; its isolator: ") +
               std::string(ToString(primary.fault_class)) + " on " + primary.component.Id();
}

// What makes a fleet diagnosis "changed" for Evaluate: its conclusion and who it covers,
// not its growing end time.
std::string Signature(const FleetDiagnosis& d) {
  std::string s = d.cause + "|" + d.component + "|" + std::string(ToString(d.fault_class)) + "|" +
                  std::string(ToString(d.action)) + "|" + std::string(ToString(d.severity)) + "|";
  for (const auto& n : d.nodes) s += n + ",";
  s += "|";
  for (const auto& l : d.linked) s += l + ",";
  return s;
}

template <typename T>
void MergeSorted(std::vector<T>& into, const std::vector<T>& more) {
  into.insert(into.end(), more.begin(), more.end());
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

// One slow node of one (job, kind) group.
struct SlowNode {
  size_t node = 0;
  std::string job;
  ObsKind kind = ObsKind::kStepTime;
  PeerVerdict verdict;
  double median = 0;
  size_t peers = 0;
};

// A job group's nodes and racks, for the rack rule.
struct GroupInfo {
  std::string job;
  std::vector<size_t> nodes;  // every node judged
  std::set<size_t> slow;
  std::set<size_t> rising;  // newest sample above the threshold (slow or on the way)
};

}  // namespace

struct FleetAnalyzer::Impl {
  FleetTopology topology;
  TopologyIndex index;
  AnalyzerOptions options;
  NodeLimits limits;
  IngestStats stats;
  MsgIdWindow msg_ids;
  std::deque<NodeState> nodes;  // first seen first; a deque so references stay valid as nodes join
  std::unordered_map<std::string, size_t> node_index;
  std::map<std::string, OpenEntry> open;  // by key ("straggler|job|node", "pdu|r12-a", "rack|r12")
  std::map<std::string, ClosedEntry> closed;  // stragglers and racks closed within the window, by key
  size_t state_bytes = 0;                     // ApproxStateBytes when last measured, plus nodes since
  size_t measured_nodes = 0;                  // nodes when last measured
  size_t evaluations = 0;

  Impl(FleetTopology t, AnalyzerOptions o)
      : topology(std::move(t)),
        index(topology),
        options(o),
        limits{.max_series = o.max_series_per_node,
               .max_samples = o.max_samples_per_series,
               .max_readings = o.max_readings_per_node,
               .max_findings = o.max_findings_per_node,
               .max_diagnoses = o.max_diagnoses_per_node,
               .max_evidence = o.max_evidence},
        msg_ids(o.max_msg_ids) {}

  NodeState* NodeFor(const std::string& name, const NodePlace& place);
  void IngestObservations(const Envelope& e, NodeState& node);
  bool NewRow(RowRanges& rows, int64_t row_id);

  // Evaluate's steps.
  std::vector<SlowNode> JudgeJobs(std::vector<GroupInfo>& groups, std::set<size_t>& judged_calm);
  GpuReading PeerGpuMedians(const GroupInfo& group) const;
  FleetDiagnosis StragglerDiagnosis(const SlowNode& s, const GpuReading& peer_gpus) const;
  FleetDiagnosis RackDiagnosis(const std::string& rack, const GroupInfo& group,
                               const std::vector<SlowNode>& slow) const;
  FleetDiagnosis SharedDiagnosis(const SharedCause& c, const std::vector<HeldRef>& refs) const;
  std::vector<std::string> LinkedOf(const NodeState& node) const;
  std::set<std::string> SharedCauses(std::map<std::string, FleetDiagnosis>& candidates,
                                     const std::vector<GroupInfo>& groups) const;
  void JudgeRacks(const GroupInfo& g, const std::vector<SlowNode>& slow, const std::set<std::string>& covered,
                  std::map<std::string, FleetDiagnosis>& candidates, std::set<size_t>& in_rack) const;
  void Reconcile(const std::string& key, FleetDiagnosis fresh, int64_t now_ns);
  void Close(const std::set<std::string>& current, const std::set<size_t>& calm, int64_t before_ns, int64_t now_ns);
  void ExplainStraggler(OpenEntry& entry, int64_t before_ns, int64_t now_ns);
  size_t MeasureState() const;
};

// `name` and `place` as the envelope gave them; what is kept of them is cut (names.h).
NodeState* FleetAnalyzer::Impl::NodeFor(const std::string& name, const NodePlace& place) {
  if (name.empty()) return nullptr;
  if (NameTooLong(name)) return NodeFor(BoundName(name), place);
  const std::string& kept = name;
  auto it = node_index.find(kept);
  if (it != node_index.end()) return &nodes[it->second];
  if (nodes.size() >= options.max_nodes || state_bytes >= options.max_state_bytes) return nullptr;
  NodeState n;
  n.name = kept;
  n.place = {.site = BoundName(place.site), .rack = BoundName(place.rack), .node = kept};
  n.topo = index.Node(kept);
  node_index.emplace(kept, nodes.size());
  nodes.push_back(std::move(n));
  // Until the next Evaluate measures it: the node as it starts, names counted thrice.
  state_bytes += ApproxBytes(nodes.back()) + 64 + kept.size();
  return &nodes.back();
}

bool FleetAnalyzer::Impl::NewRow(RowRanges& rows, int64_t row_id) {
  if (row_id <= 0) return true;  // no row id: the message id alone deduplicates
  if (rows.Contains(row_id)) return false;
  rows.Add(row_id, row_id);
  return true;
}

void FleetAnalyzer::Impl::IngestObservations(const Envelope& e, NodeState& node) {
  const bool ids = !e.observation_ids.empty();
  const int64_t newest_before = node.newest_ns;
  // Runs of consecutive row ids taken, marked as taken at the end (a batch of stored rows
  // is one run); only rows actually carried are marked, so a stray id cannot hide others.
  int64_t lo = 0, hi = -1;
  auto close_run = [&] {
    if (lo <= hi) node.observation_rows.Add(lo, hi);
  };
  for (size_t i = 0; i < e.observations.size(); ++i) {
    const Observation& obs = e.observations[i];
    // Row id 0 (or less) is "none": a publisher without a store, deduplicated by message id only.
    if (ids && e.observation_ids[i] > 0) {
      const int64_t id = e.observation_ids[i];
      // A re-sent row is no newer than what the node already sent; a "seen" id on a newer
      // observation is an agent whose store was recreated (row ids restarted), not a repeat.
      if (node.observation_rows.Contains(id) && obs.time_ns <= newest_before) {
        ++stats.duplicates;
        continue;
      }
      if (lo > hi || hi == INT64_MAX || id != hi + 1) {
        close_run();
        lo = id;
      }
      hi = id;
    }
    NodeState* target = &node;
    if (!obs.node.empty() && obs.node != e.place.node && obs.node != node.name) {
      target = NodeFor(obs.node, e.place);
      if (target == nullptr) {
        ++stats.refused;
        continue;
      }
    }
    HoldObservation(*target, obs, limits);
    node.newest_ns = std::max(node.newest_ns, obs.time_ns);
    ++stats.observations;
  }
  close_run();
}

FleetAnalyzer::FleetAnalyzer(FleetTopology topology, AnalyzerOptions options)
    : impl_(std::make_unique<Impl>(std::move(topology), options)) {}

FleetAnalyzer::~FleetAnalyzer() = default;

const IngestStats& FleetAnalyzer::stats() const { return impl_->stats; }
size_t FleetAnalyzer::nodes() const { return impl_->nodes.size(); }

size_t FleetAnalyzer::Impl::MeasureState() const {
  size_t n = msg_ids.size() * 48;
  // node_index: a hash node and its key per node.
  for (const NodeState& node : nodes) n += ApproxBytes(node) + 64 + (node.name.size() > 15 ? node.name.size() + 1 : 0);
  for (const auto& [key, entry] : open) n += key.size() + entry.diagnosis.summary.size() + sizeof(OpenEntry) + 512;
  return n;
}

size_t FleetAnalyzer::ApproxStateBytes() const { return impl_->MeasureState(); }

void FleetAnalyzer::Ingest(const Envelope& e) {
  Impl& m = *impl_;
  ++m.stats.envelopes;
  const bool ids_ok = e.observation_ids.empty() || e.observation_ids.size() == e.observations.size();
  const bool payload_ok = (e.kind == RecordKind::kObservations && ids_ok) ||
                          (e.kind == RecordKind::kFinding && e.finding) ||
                          (e.kind == RecordKind::kDiagnosis && e.diagnosis) ||
                          (e.kind == RecordKind::kAction && e.action) || (e.kind == RecordKind::kFleetDiagnosis);
  if (NameTooLong(e.place.node) || NameTooLong(e.place.rack) || NameTooLong(e.place.site)) ++m.stats.names_cut;
  NodeState* node = payload_ok ? m.NodeFor(e.place.node, e.place) : nullptr;
  if (node == nullptr) {
    ++m.stats.refused;
    return;
  }
  if (!m.msg_ids.Insert(e.msg_id)) {
    ++m.stats.duplicates;
    return;
  }
  switch (e.kind) {
    case RecordKind::kObservations:
      m.IngestObservations(e, *node);
      return;
    case RecordKind::kFinding:
      if (!m.NewRow(node->finding_rows, e.row_id)) break;
      HoldFinding(*node, *e.finding, m.limits);
      ++m.stats.records;
      return;
    case RecordKind::kDiagnosis:
      if (!m.NewRow(node->diagnosis_rows, e.row_id)) break;
      HoldDiagnosis(*node, e.row_id, *e.diagnosis, m.limits);
      ++m.stats.records;
      return;
    case RecordKind::kAction:
      // Actions are the agents' own business; taken only so a consumer of every subject
      // counts them, and deduplicated like the rest.
      if (!m.NewRow(node->action_rows, e.row_id)) break;
      ++m.stats.records;
      return;
    case RecordKind::kFleetDiagnosis:
      ++m.stats.records;
      return;  // our own output, echoed back
  }
  ++m.stats.duplicates;
}

Status FleetAnalyzer::IngestMessage(std::string_view bytes, const WireLimits& limits) {
  auto e = Decode(bytes, limits);
  if (!e.ok()) {
    ++impl_->stats.envelopes;
    ++impl_->stats.refused;
    return e.status();
  }
  Ingest(*e);
  return Status::Ok();
}

// ---- peers ----

std::vector<SlowNode> FleetAnalyzer::Impl::JudgeJobs(std::vector<GroupInfo>& groups, std::set<size_t>& judged_calm) {
  // (job, kind) -> series; nodes in first-seen order, so the answer never depends on hashing.
  std::map<std::pair<std::string, ObsKind>, std::vector<PeerSeries>> by_group;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const WorkSeries& s : nodes[i].series) {
      if (s.job.empty() || s.samples.empty()) continue;  // no job, no peers
      by_group[{s.job, s.kind}].push_back({i, std::vector<PeerSample>(s.samples.begin(), s.samples.end())});
    }
  }
  const PeerOptions po{.mad_threshold = options.mad_threshold,
                       .min_slowdown = options.min_slowdown,
                       .jitter_factor = options.jitter_factor,
                       .persistence = options.persistence,
                       .min_peers = options.min_peers,
                       .recent_samples = options.recent_samples,
                       .min_spread = options.min_spread,
                       .phase_fraction = options.phase_fraction};
  std::vector<SlowNode> slow;
  for (const auto& [key, series] : by_group) {
    const GroupVerdict g = JudgePeers(series, po);
    if (!g.judged) continue;
    GroupInfo info{.job = key.first, .nodes = {}, .slow = {}, .rising = {}};
    for (const PeerVerdict& v : g.nodes) {
      info.nodes.push_back(v.node);
      if (!g.in_phase && v.slow_run >= 1) info.rising.insert(v.node);
      // Back at its peers' pace, persistently (peers.h "calm"): recovered. In a phase
      // nobody is judged either way.
      if (!g.in_phase && v.calm) judged_calm.insert(v.node);
      if (!v.slow) continue;
      info.slow.insert(v.node);
      slow.push_back({v.node, key.first, key.second, v, g.median, series.size()});
    }
    groups.push_back(std::move(info));
  }
  return slow;
}

GpuReading FleetAnalyzer::Impl::PeerGpuMedians(const GroupInfo& group) const {
  std::vector<double> clocks, powers, utils;
  for (size_t i : group.nodes) {
    for (const GpuReading& g : GpuReadingsOf(nodes[i])) {
      if (g.clock > 0) clocks.push_back(g.clock);
      if (g.power > 0) powers.push_back(g.power);
      if (g.util >= 0) utils.push_back(g.util);
    }
  }
  return {.gpu = "", .clock = Median(clocks), .power = Median(powers), .util = utils.empty() ? -1 : Median(utils)};
}

std::vector<std::string> FleetAnalyzer::Impl::LinkedOf(const NodeState& node) const {
  std::vector<std::string> linked;
  for (const HeldDiagnosis& d : node.diagnoses) linked.push_back(node.name + "#" + std::to_string(d.row_id));
  std::sort(linked.begin(), linked.end());
  return linked;
}

FleetDiagnosis FleetAnalyzer::Impl::StragglerDiagnosis(const SlowNode& s, const GpuReading& peer_gpus) const {
  const NodeState& node = nodes[s.node];
  const SlowGpu gpu = NameSlowGpu(GpuReadingsOf(node), peer_gpus, options.min_gpu_drop);
  FleetDiagnosis d;
  d.cause = "straggler";
  d.component = "node/" + node.name + (gpu.gpu.empty() ? "" : "/gpu/" + gpu.gpu);
  d.fault_class = FaultClass::kWorkloadImbalance;
  d.action = ActionFor("straggler");
  d.severity = Severity::kWarning;
  d.confidence = std::min(0.95, 0.6 + s.verdict.slowdown);
  d.first_ns = s.verdict.slow_since_ns;
  d.last_ns = s.verdict.slow_since_ns;
  for (const WorkSeries& ws : node.series) {
    if (ws.job == s.job && !ws.samples.empty()) d.last_ns = std::max(d.last_ns, ws.samples.back().time_ns);
  }
  d.nodes = {node.name};
  d.linked = LinkedOf(node);
  d.job = s.job;
  // The slowdown is the node's own against its peers in the same steps (peers.h), so a
  // pause the job shared in its recent samples does not inflate it.
  const std::string what = s.kind == ObsKind::kThroughput ? "time per sample" : "step time";
  d.summary = node.name + " is " + Percent(s.verdict.stated_slowdown) + " slower than the other " +
              std::to_string(s.peers - 1) + " nodes of job " + s.job + " in the same steps (" + what + " " +
              Fixed(s.verdict.seconds, 4) + " s vs " + Fixed(s.verdict.peer_seconds, 4) + " s, robust z " +
              Fixed(s.verdict.z, 1) + ")";
  d.evidence.push_back({.time_ns = d.last_ns,
                        .mono_us = std::nullopt,
                        .source = Source::kWorkload,
                        .component = "node/" + node.name,
                        .text = d.summary,
                        .count = static_cast<uint64_t>(s.verdict.slow_run)});
  if (!gpu.gpu.empty()) {
    const std::string line = "gpu " + gpu.gpu + " " + gpu.metric + " " + Fixed(gpu.value, 0) + " vs " +
                             Fixed(gpu.node_median, 0) + " on the node's other GPUs and " + Fixed(gpu.peer_median, 0) +
                             " on its peers' (" + Percent(gpu.drop) + " lower)";
    d.summary += "; " + line;
    d.evidence.push_back({.time_ns = d.last_ns,
                          .mono_us = std::nullopt,
                          .source = Source::kNvml,
                          .component = d.component,
                          .text = line,
                          .count = 1});
  }
  return d;
}

namespace {

// The value of `field` shared by more than half of the slow nodes (the evidence then points
// at one part); "" otherwise.
std::string CommonPart(const std::vector<const FleetNode*>& slow, std::string FleetNode::*field) {
  std::map<std::string, size_t> count;
  for (const FleetNode* n : slow) {
    if (n != nullptr && !(n->*field).empty()) ++count[n->*field];
  }
  std::string best;
  size_t top = 0;
  for (const auto& [part, c] : count) {
    if (c > top) top = c, best = part;
  }
  return 2 * top > slow.size() ? best : "";
}

// The part the rack's evidence points to: power -> its PDU (its feed when the slow nodes
// span PDUs), thermal -> its cooling loop, links -> its leaf switch. {"", ""} without such
// evidence: every part the rack's slow nodes share is as likely as the next.
std::pair<std::string, std::string> EvidencedPart(const std::vector<const FleetNode*>& slow, std::string_view family) {
  if (family == "cooling") {
    if (auto p = CommonPart(slow, &FleetNode::cooling_loop); !p.empty()) return {"cooling_loop", p};
  } else if (family == "power") {
    if (auto p = CommonPart(slow, &FleetNode::pdu); !p.empty()) return {"pdu", p};
    if (auto p = CommonPart(slow, &FleetNode::feed); !p.empty()) return {"feed", p};
  } else if (family == "link") {
    if (auto p = CommonPart(slow, &FleetNode::leaf_switch); !p.empty()) return {"switch", p};
  }
  return {"", ""};
}

// "pdu X, loop Y, switch Z": the parts the slow nodes sit on (several of a kind joined by "/").
std::string SharedParts(const std::vector<const FleetNode*>& slow) {
  using Field = std::string FleetNode::*;
  const std::vector<std::pair<std::string, Field>> fields = {
      {"pdu", &FleetNode::pdu}, {"loop", &FleetNode::cooling_loop}, {"switch", &FleetNode::leaf_switch}};
  std::string out;
  for (const auto& [kind, f] : fields) {
    std::set<std::string> parts;
    for (const FleetNode* n : slow) {
      if (n != nullptr && !(n->*f).empty()) parts.insert(n->*f);
    }
    if (parts.empty()) continue;
    std::string joined;
    for (const std::string& p : parts) joined += (joined.empty() ? "" : "/") + p;
    out += (out.empty() ? "" : ", ") + kind + " " + joined;
  }
  return out;
}

// The family most of the nodes' held findings and diagnoses belong to, and its commonest class.
std::pair<std::string, FaultClass> DominantFamily(const std::vector<const NodeState*>& nodes) {
  std::map<FaultClass, size_t> classes;
  for (const NodeState* n : nodes) {
    for (const HeldDiagnosis& d : n->diagnoses) ++classes[d.diagnosis.fault_class];
    for (const Finding& f : n->findings) ++classes[f.fault_class];
  }
  std::map<std::string, size_t> families;
  std::pair<size_t, FaultClass> best{0, FaultClass::kNone};
  for (const auto& [c, count] : classes) {
    const std::string family(CorrelationFamily(c));
    if (family.empty()) continue;
    families[family] += count;
  }
  std::string family;
  size_t top = 0;
  for (const auto& [f, count] : families) {
    if (count > top) top = count, family = f;
  }
  for (const auto& [c, count] : classes) {
    if (CorrelationFamily(c) == family && count > best.first) best = {count, c};
  }
  return {family, best.second};
}

}  // namespace

FleetDiagnosis FleetAnalyzer::Impl::RackDiagnosis(const std::string& rack, const GroupInfo& group,
                                                  const std::vector<SlowNode>& slow) const {
  std::vector<const FleetNode*> slow_topo;
  std::vector<const NodeState*> slow_nodes;
  FleetDiagnosis d;
  d.first_ns = INT64_MAX;
  double slowdown = 0;
  for (const SlowNode& s : slow) {
    slow_topo.push_back(nodes[s.node].topo);
    slow_nodes.push_back(&nodes[s.node]);
    d.nodes.push_back(nodes[s.node].name);
    MergeSorted(d.linked, LinkedOf(nodes[s.node]));
    d.first_ns = std::min(d.first_ns, s.verdict.slow_since_ns);
    slowdown += s.verdict.stated_slowdown / static_cast<double>(slow.size());
  }
  std::sort(d.nodes.begin(), d.nodes.end());
  d.nodes.erase(std::unique(d.nodes.begin(), d.nodes.end()), d.nodes.end());
  const auto [family, fault] = DominantFamily(slow_nodes);
  const auto [part_kind, part] = EvidencedPart(slow_topo, family);
  const std::string parts = SharedParts(slow_topo);
  d.cause = "rack";
  d.component = part.empty() ? "rack/" + rack : part_kind + "/" + part;
  d.fault_class = fault != FaultClass::kNone ? fault : FaultClass::kWorkloadImbalance;
  d.action = Action::kFacilityTicket;
  d.severity = Severity::kWarning;
  d.confidence = std::min(0.95, 0.6 + 0.05 * static_cast<double>(d.nodes.size()));
  d.last_ns = d.first_ns;
  for (const NodeState* n : slow_nodes) {
    for (const WorkSeries& ws : n->series) {
      if (!ws.samples.empty()) d.last_ns = std::max(d.last_ns, ws.samples.back().time_ns);
    }
  }
  d.job = group.job;
  d.summary = std::to_string(d.nodes.size()) + " nodes of rack " + rack + " are " + Percent(slowdown) +
              " slower than job " + group.job + "'s nodes in other racks: the rack's shared infrastructure, not " +
              std::to_string(d.nodes.size()) + " stragglers" +
              (!part.empty()   ? " (the evidence points to " + part_kind + " " + part + ")"
               : parts.empty() ? std::string()
                               : "; rack " + rack + " (shared parts: " + parts + ")");
  d.evidence.push_back({.time_ns = d.last_ns,
                        .mono_us = std::nullopt,
                        .source = Source::kWorkload,
                        .component = d.component,
                        .text = d.summary,
                        .count = d.nodes.size()});
  return d;
}

FleetDiagnosis FleetAnalyzer::Impl::SharedDiagnosis(const SharedCause& c, const std::vector<HeldRef>& refs) const {
  FleetDiagnosis d;
  d.cause = c.cause;
  d.component = CauseComponent(c.cause, c.part);
  d.action = ActionFor(c.cause);
  d.first_ns = INT64_MAX;
  d.last_ns = INT64_MIN;
  std::map<FaultClass, size_t> classes;
  for (size_t i : c.members) {
    const HeldRef& r = refs[i];
    const Diagnosis& nd = *r.diagnosis;
    ++classes[nd.fault_class];
    d.nodes.push_back(r.node);
    d.linked.push_back(r.node + "#" + std::to_string(r.row_id));
    d.severity = std::max(d.severity, nd.severity);
    d.first_ns = std::min(d.first_ns, nd.first_ns);
    d.last_ns = std::max(d.last_ns, nd.last_ns);
    d.evidence.push_back({.time_ns = nd.first_ns,
                          .mono_us = std::nullopt,
                          .source = nd.evidence.empty() ? Source::kReplay : nd.evidence.front().source,
                          .component = r.node + "/" + nd.component.Id(),
                          .text = r.node + ": " + std::string(ToString(nd.fault_class)) + ": " + nd.summary,
                          .count = 1});
  }
  std::sort(d.nodes.begin(), d.nodes.end());
  d.nodes.erase(std::unique(d.nodes.begin(), d.nodes.end()), d.nodes.end());
  std::sort(d.linked.begin(), d.linked.end());
  // Oldest first, whatever order the nodes' messages arrived in.
  std::sort(d.evidence.begin(), d.evidence.end(), [](const Evidence& x, const Evidence& y) {
    return std::tie(x.time_ns, x.component, x.text) < std::tie(y.time_ns, y.component, y.text);
  });
  if (d.evidence.size() > kMaxEvidenceLines) d.evidence.resize(kMaxEvidenceLines);
  size_t top = 0;
  std::string counts;
  for (const auto& [fc, n] : classes) {
    if (n > top) top = n, d.fault_class = fc;
    counts += (counts.empty() ? "" : ", ") + std::string(ToString(fc)) + " x" + std::to_string(n);
  }
  d.confidence = std::min(0.95, 0.5 + 0.15 * static_cast<double>(d.nodes.size()));
  d.summary = std::to_string(d.nodes.size()) + " nodes sharing " + c.cause + " " + c.part + " report " + counts +
              ": one shared cause (the " + c.cause + "), not " + std::to_string(d.nodes.size()) +
              " node faults; act on it, not on the nodes";
  return d;
}

// Shared causes among the per-node diagnoses held for the window, as candidates; returns
// the nodes they (and the shared causes still open) cover.
std::set<std::string> FleetAnalyzer::Impl::SharedCauses(std::map<std::string, FleetDiagnosis>& candidates,
                                                        const std::vector<GroupInfo>& groups) const {
  std::vector<HeldRef> refs;
  for (const NodeState& n : nodes) {
    for (const HeldDiagnosis& d : n.diagnoses) refs.push_back({n.name, d.row_id, &d.diagnosis});
  }
  const CorrelateOptions co{.min_nodes = options.min_correlated_nodes, .min_switch_ports = options.min_switch_ports};
  // Power, cooling and link causes throttle their nodes by nature and take over their
  // slowness. A driver cause (errors logged) does only when it visibly slows its nodes: at
  // least half of its nodes that a job judged are slow or on their way. A roll-out that
  // logs errors on a whole rack does not explain the one node of it that is slow.
  std::set<std::string> covered;
  // Per node: 1 judged in some job, 2 slow or rising there too (built on first need).
  std::vector<uint8_t> judged;
  auto cover = [&](const std::string& cause, const std::vector<std::string>& of) {
    if (cause != "driver") {
      covered.insert(of.begin(), of.end());
      return;
    }
    if (judged.empty()) {
      judged.assign(nodes.size(), 0);
      for (const GroupInfo& g : groups) {
        for (size_t i : g.nodes) judged[i] = std::max<uint8_t>(judged[i], 1);
        for (const std::set<size_t>* s : {&g.slow, &g.rising}) {
          for (size_t i : *s) judged[i] = 2;
        }
      }
    }
    size_t in_jobs = 0, slowed = 0;
    for (const std::string& name : of) {
      auto it = node_index.find(name);
      if (it == node_index.end()) continue;
      in_jobs += judged[it->second] >= 1;
      slowed += judged[it->second] == 2;
    }
    if (2 * slowed >= in_jobs) covered.insert(of.begin(), of.end());
  };
  // Reporting: samples, findings or diagnoses held in the window (Forget has run; readings
  // are kept however old, so they do not count).
  const ReportingFn reporting = [this](std::string_view name) {
    auto it = node_index.find(std::string(name));
    if (it == node_index.end()) return false;
    const NodeState& n = nodes[it->second];
    return !n.series.empty() || !n.diagnoses.empty() || !n.findings.empty();
  };
  for (const SharedCause& c : Correlate(refs, index, co, reporting)) {
    FleetDiagnosis d = SharedDiagnosis(c, refs);
    cover(c.cause, d.nodes);
    candidates.emplace(c.cause + "|" + c.part, std::move(d));
  }
  for (const auto& [key, entry] : open) {
    const std::string& cause = entry.diagnosis.cause;
    if (cause != "straggler" && cause != "rack") cover(cause, entry.diagnosis.nodes);
  }
  return covered;
}

// A whole rack slow in a job that spans racks is the rack, not its nodes. While a rack may
// still be turning slow (another of its nodes' newest samples above the threshold too), its
// slow nodes are held back a little rather than named one by one.
void FleetAnalyzer::Impl::JudgeRacks(const GroupInfo& g, const std::vector<SlowNode>& slow,
                                     const std::set<std::string>& covered,
                                     std::map<std::string, FleetDiagnosis>& candidates,
                                     std::set<size_t>& in_rack) const {
  struct RackCount {
    size_t total = 0;
    size_t rising = 0;
    std::vector<SlowNode> slow;
  };
  // A node a shared cause covers (its own diagnoses are that cause's) is that cause's, not
  // the rack's: it is left out of the rack's counts, so a real straggler in a rack whose
  // other half a PDU slows is still judged on its own.
  auto is_covered = [&](size_t i) { return covered.count(nodes[i].name) != 0; };
  std::map<std::string, RackCount> racks;
  for (size_t i : g.nodes) {
    RackCount& r = racks[nodes[i].Rack()];
    if (is_covered(i)) continue;
    ++r.total;
    r.rising += g.rising.count(i);
  }
  for (const SlowNode& s : slow) {
    if (s.job == g.job && g.slow.count(s.node) != 0 && !is_covered(s.node))
      racks[nodes[s.node].Rack()].slow.push_back(s);
  }
  if (racks.size() < 2) return;
  auto enough = [&](size_t n, size_t total) {
    return n >= options.min_rack_nodes && static_cast<double>(n) >= options.rack_fraction * static_cast<double>(total);
  };
  for (const auto& [rack, r] : racks) {
    if (rack.empty()) continue;
    const bool named = enough(r.slow.size(), r.total);
    if (!named) {
      // Forming: another node of the rack is on its way. Hold a slow node back for at most
      // another `persistence` samples past the one it was named at (peers.h: a recent
      // median turned slow, then held for `persistence`), so two real stragglers in one
      // rack are still named; one already named stays named (a neighbour's noisy sample
      // must not close it).
      if (r.rising < 2 || r.total < options.min_rack_nodes) continue;
      const int named_at = static_cast<int>(options.recent_samples + 1) / 2 + options.persistence - 1;
      for (const SlowNode& s : r.slow) {
        const bool named_already = open.count("straggler|" + s.job + "|" + nodes[s.node].name) != 0;
        if (!named_already && s.verdict.slow_run < named_at + options.persistence) in_rack.insert(s.node);
      }
      continue;
    }
    for (const SlowNode& s : r.slow) in_rack.insert(s.node);
    const std::string key = "rack|" + rack;
    if (candidates.count(key) == 0) candidates.emplace(key, RackDiagnosis(rack, g, r.slow));
  }
}

void FleetAnalyzer::Impl::Reconcile(const std::string& key, FleetDiagnosis fresh, int64_t now_ns) {
  auto it = open.find(key);
  if (it == open.end()) {
    auto was = closed.find(key);
    if (was != closed.end()) {
      // Closed lately: the same report again (a node throttling on and off), not a new one.
      fresh.id = was->second.id;
      fresh.first_ns = std::min(fresh.first_ns, was->second.first_ns);
      open.emplace(key, OpenEntry{std::move(fresh), was->second.reported, "", false});
      closed.erase(was);
      return;
    }
    // The id is fixed when the diagnosis opens: the part (or job/node) and when it began.
    std::string id = key;
    std::replace(id.begin(), id.end(), '|', '/');
    fresh.id = id + "/" + std::to_string(fresh.first_ns);
    open.emplace(key, OpenEntry{std::move(fresh), "", "", false});
    return;
  }
  FleetDiagnosis& d = it->second.diagnosis;
  // Who it covers only grows while it is open (a node that recovers stays named).
  MergeSorted(fresh.nodes, d.nodes);
  MergeSorted(fresh.linked, d.linked);
  fresh.id = d.id;
  fresh.first_ns = std::min(d.first_ns, fresh.first_ns);
  fresh.last_ns = std::max(d.last_ns, fresh.last_ns);
  fresh.node_diagnoses = std::move(d.node_diagnoses);
  d = std::move(fresh);
  (void)now_ns;
}

void FleetAnalyzer::Impl::Close(const std::set<std::string>& current, const std::set<size_t>& calm, int64_t before_ns,
                                int64_t now_ns) {
  auto recovered = [&](const FleetDiagnosis& d) {
    for (const std::string& name : d.nodes) {
      auto it = node_index.find(name);
      if (it == node_index.end()) continue;
      const NodeState& n = nodes[it->second];
      const bool has_samples = std::any_of(n.series.begin(), n.series.end(),
                                           [&](const WorkSeries& s) { return s.job == d.job || d.cause == "rack"; });
      if (has_samples && calm.count(it->second) == 0) return false;
    }
    return true;
  };
  for (auto it = open.begin(); it != open.end();) {
    const FleetDiagnosis& d = it->second.diagnosis;
    bool close = false;
    if (current.count(it->first) != 0) {
      close = false;
    } else if (d.cause == "straggler" || d.cause == "rack") {
      close = recovered(d);
      if (close) closed[it->first] = {d.id, d.first_ns, it->second.reported, now_ns};
    } else {
      close = d.last_ns < before_ns;  // every linked diagnosis has aged out of the window
    }
    it = close ? open.erase(it) : std::next(it);
  }
  std::erase_if(closed, [&](const auto& kv) { return kv.second.closed_ns < before_ns; });
}

// Why the straggler is slow: its node's own diagnoses that name hardware (the one on the
// named GPU first), else its isolator's answer over what the analyzer holds, asked again
// only when what it is named for (component, links) changes.
void FleetAnalyzer::Impl::ExplainStraggler(OpenEntry& entry, int64_t before_ns, int64_t now_ns) {
  FleetDiagnosis& d = entry.diagnosis;
  if (entry.isolated_for != IsolatedFor(d)) {
    const NodeState& n = nodes[node_index.at(d.nodes.front())];
    d.node_diagnoses = OwnHardwareDiagnoses(n, NamedGpu(d));
    entry.own_evidence = !d.node_diagnoses.empty();
    if (!entry.own_evidence) d.node_diagnoses = IsolateHeldNode(n, before_ns, now_ns);
    entry.isolated_for = IsolatedFor(d);
  }
  ApplyNodeEvidence(d, entry.own_evidence);
}

std::vector<FleetDiagnosis> FleetAnalyzer::Evaluate(int64_t now_ns) {
  Impl& m = *impl_;
  const int64_t before_ns = now_ns - m.options.window_ns;
  for (NodeState& n : m.nodes) Forget(n, before_ns);

  std::map<std::string, FleetDiagnosis> candidates;
  // Shared causes first: a node whose symptoms a shared cause explains is slow because of
  // it, and is not named again as a straggler or inside a rack.
  std::vector<GroupInfo> groups;
  std::set<size_t> calm;
  const std::vector<SlowNode> slow = m.JudgeJobs(groups, calm);
  const std::set<std::string> covered = m.SharedCauses(candidates, groups);
  std::set<size_t> in_rack;  // slow nodes a rack accounts for (named, forming, or covered)
  for (const GroupInfo& g : groups) m.JudgeRacks(g, slow, covered, candidates, in_rack);
  std::map<size_t, GpuReading> peer_gpus;  // per group, computed once when it has a straggler
  for (const SlowNode& s : slow) {
    if (in_rack.count(s.node) != 0 || covered.count(m.nodes[s.node].name) != 0) continue;
    const std::string key = "straggler|" + s.job + "|" + m.nodes[s.node].name;
    if (candidates.count(key) != 0) continue;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      if (groups[gi].job != s.job || groups[gi].slow.count(s.node) == 0) continue;
      auto it = peer_gpus.find(gi);
      if (it == peer_gpus.end()) it = peer_gpus.emplace(gi, m.PeerGpuMedians(groups[gi])).first;
      candidates.emplace(key, m.StragglerDiagnosis(s, it->second));
      break;
    }
  }

  // A node now accounted for by its rack or a shared cause is no longer its own straggler.
  for (auto it = m.open.begin(); it != m.open.end();) {
    const FleetDiagnosis& d = it->second.diagnosis;
    bool absorbed = false;
    if (d.cause == "straggler" && candidates.count(it->first) == 0 && !d.nodes.empty()) {
      auto idx = m.node_index.find(d.nodes.front());
      absorbed = covered.count(d.nodes.front()) != 0 || (idx != m.node_index.end() && in_rack.count(idx->second) != 0);
    }
    it = absorbed ? m.open.erase(it) : std::next(it);
  }
  std::set<std::string> current;
  for (auto& [key, d] : candidates) {
    current.insert(key);
    m.Reconcile(key, std::move(d), now_ns);
  }
  m.Close(current, calm, before_ns, now_ns);

  std::vector<FleetDiagnosis> out;
  for (auto& [key, entry] : m.open) {
    FleetDiagnosis& d = entry.diagnosis;
    // Ask the straggler's own isolator why, for the window, when it is named and again
    // when what it is named for changes.
    if (d.cause == "straggler" && current.count(key) != 0) m.ExplainStraggler(entry, before_ns, now_ns);
    const std::string sig = Signature(d);
    if (sig == entry.reported) continue;
    entry.reported = sig;
    out.push_back(d);
  }
  std::sort(out.begin(), out.end(), [](const FleetDiagnosis& a, const FleetDiagnosis& b) { return a.id < b.id; });
  // Measured when nodes joined, and now and then as the nodes' own bounded state changes
  // (measuring walks every node: about as long as judging them all).
  if (m.nodes.size() != m.measured_nodes || ++m.evaluations % 64 == 0) {
    m.state_bytes = m.MeasureState();
    m.measured_nodes = m.nodes.size();
  }
  return out;
}

std::vector<FleetDiagnosis> FleetAnalyzer::Open() const {
  std::vector<FleetDiagnosis> out;
  for (const auto& [key, entry] : impl_->open) out.push_back(entry.diagnosis);
  std::sort(out.begin(), out.end(), [](const FleetDiagnosis& a, const FleetDiagnosis& b) { return a.id < b.id; });
  return out;
}

// ---- snapshot ----

namespace {

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// items as a JSON array, each element made and dumped on its own: the text of the array
// dumped whole, without the array ever held.
template <typename Range, typename ToJsonFn>
void WriteArray(const FleetAnalyzer::SnapshotSink& write, const Range& items, ToJsonFn to_json) {
  write("[");
  bool first = true;
  for (const auto& item : items) {
    if (!first) write(",");
    first = false;
    write(Dump(to_json(item)));
  }
  write("]");
}

Json OpenJson(const std::string& key, const OpenEntry& entry) {
  return {{"key", key},
          {"diagnosis", entry.diagnosis},
          {"reported", entry.reported},
          {"isolated_for", entry.isolated_for},
          {"own_evidence", entry.own_evidence}};
}

Json ClosedJson(const std::string& key, const ClosedEntry& c) {
  return {{"key", key}, {"id", c.id}, {"first_ns", c.first_ns}, {"reported", c.reported}, {"closed_ns", c.closed_ns}};
}

Json StatsJson(const IngestStats& s) {
  return {{"envelopes", s.envelopes}, {"observations", s.observations}, {"duplicates", s.duplicates},
          {"refused", s.refused},     {"records", s.records},           {"names_cut", s.names_cut}};
}

}  // namespace

std::string FleetAnalyzer::Snapshot() const {
  std::string out;
  WriteSnapshot([&out](std::string_view piece) { out.append(piece); });
  return out;
}

// The members in the order a JSON object dumps them (sorted by key), so the bytes are
// those the whole state gave when it was one document (format version 1 unchanged).
void FleetAnalyzer::WriteSnapshot(const SnapshotSink& write) const {
  const Impl& m = *impl_;
  write("{\"closed\":");
  WriteArray(write, m.closed, [](const auto& kv) { return ClosedJson(kv.first, kv.second); });
  write(",\"faultline_fleet_snapshot\":" + std::to_string(kSnapshotVersion) + ",\"msg_ids\":");
  // Bounded by max_msg_ids (8 bytes of id, 16 as a JSON value, each).
  WriteArray(write, m.msg_ids.ToJson(), [](const Json& id) -> const Json& { return id; });
  write(",\"nodes\":");
  WriteArray(write, m.nodes, [](const NodeState& n) { return ToJson(n); });
  write(",\"open\":");
  WriteArray(write, m.open, [](const auto& kv) { return OpenJson(kv.first, kv.second); });
  write(",\"stats\":" + Dump(StatsJson(m.stats)) + "}");
}

Status FleetAnalyzer::Restore(std::string_view snapshot) {
  Impl& m = *impl_;
  if (!m.nodes.empty() || !m.open.empty() || m.stats.envelopes != 0) {
    return Status(StatusCode::kInvalidArgument, "fleet snapshot: restore needs a fresh analyzer");
  }
  auto corrupt = [](const std::string& why) { return Status(StatusCode::kCorrupt, "fleet snapshot: " + why); };
  Impl fresh(m.topology, m.options);
  // Each node is taken into `fresh` as soon as it is parsed and dropped from the document:
  // the whole snapshot as a DOM took about 6 times its size (138 MiB at 10,000 nodes).
  std::string in_key;  // the top-level key being parsed
  bool bad_node = false;
  auto take_nodes = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key) in_key = parsed.get<std::string>();
    if (depth != 2 || in_key != "nodes" || event != Json::parse_event_t::object_end) return true;
    NodeState n;
    if (bad_node || !FromJson(parsed, n) || n.name.empty() || fresh.node_index.count(n.name) != 0) {
      bad_node = true;
      return false;
    }
    n.topo = fresh.index.Node(n.name);
    fresh.node_index.emplace(n.name, fresh.nodes.size());
    fresh.nodes.push_back(std::move(n));
    return false;
  };
  Json j;
  try {
    j = Json::parse(snapshot, take_nodes, /*allow_exceptions=*/false);
  } catch (const std::exception& e) {  // a node's field of the wrong type
    return corrupt(e.what());
  }
  if (j.is_discarded() || !j.is_object()) return corrupt("not JSON");
  auto v = j.find("faultline_fleet_snapshot");
  if (v == j.end() || *v != kSnapshotVersion)
    return corrupt("not a snapshot of version " + std::to_string(kSnapshotVersion));
  // Every node was taken out as it was parsed: anything left there is not a node.
  auto nodes = j.find("nodes");
  if (bad_node || nodes == j.end() || !nodes->is_array() || !nodes->empty()) return corrupt("node");
  try {
    const Json& s = j.at("stats");
    fresh.stats = {.envelopes = s.at("envelopes").get<size_t>(),
                   .observations = s.at("observations").get<size_t>(),
                   .duplicates = s.at("duplicates").get<size_t>(),
                   .refused = s.at("refused").get<size_t>(),
                   .records = s.at("records").get<size_t>(),
                   .names_cut = s.value("names_cut", size_t{0})};
    if (!fresh.msg_ids.FromJson(j.at("msg_ids"))) return corrupt("msg_ids");
    for (const Json& jo : j.at("open")) {
      fresh.open.emplace(jo.at("key").get<std::string>(),
                         OpenEntry{jo.at("diagnosis").get<FleetDiagnosis>(), jo.at("reported").get<std::string>(),
                                   jo.at("isolated_for").get<std::string>(), jo.value("own_evidence", false)});
    }
    // Absent from snapshots written before closed entries were kept.
    for (const Json& jc : j.value("closed", Json::array())) {
      fresh.closed.emplace(jc.at("key").get<std::string>(),
                           ClosedEntry{jc.at("id").get<std::string>(), JsonInt<int64_t>(jc.at("first_ns")),
                                       jc.at("reported").get<std::string>(), JsonInt<int64_t>(jc.at("closed_ns"))});
    }
  } catch (const std::exception& e) {
    return corrupt(e.what());
  }
  m.stats = fresh.stats;
  m.msg_ids = std::move(fresh.msg_ids);
  m.nodes = std::move(fresh.nodes);
  m.node_index = std::move(fresh.node_index);
  m.open = std::move(fresh.open);
  m.closed = std::move(fresh.closed);
  m.state_bytes = m.MeasureState();
  // The nodes' topology pointers point into fresh's copy: point them at ours.
  for (NodeState& n : m.nodes) n.topo = m.index.Node(n.name);
  return Status::Ok();
}

}  // namespace faultline::fleet
