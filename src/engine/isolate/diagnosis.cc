#include "engine/isolate/diagnosis.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/time.h"
#include "engine/detect/detector.h"
#include "engine/isolate/causal_rules.h"
#include "parse/text.h"

namespace faultline::isolate {
namespace {

constexpr double kDefaultConfidence = 0.5;   // a detector that set none
constexpr double kPerLayerBonus = 0.05;      // each further layer that corroborates the chain
constexpr double kUnknownCauseFactor = 0.6;  // a symptom reported because its cause is not in the data
constexpr double kSympatheticFactor = 0.5;   // an echo whose origin is not in the data
constexpr double kMaxConfidence = 0.99;
constexpr std::array kHardwareLayers{Layer::kOob, Layer::kGpu, Layer::kOs, Layer::kFabric};

// Where a finding without evidence lines most likely came from, for its synthesized line.
Source DefaultSource(Layer layer) {
  switch (layer) {
    case Layer::kOob:
      return Source::kRedfish;
    case Layer::kGpu:
      return Source::kNvml;
    case Layer::kOs:
      return Source::kKmsg;
    case Layer::kFabric:
      return Source::kSysfs;
    case Layer::kWorkload:
      return Source::kWorkload;
  }
  return Source::kReplay;
}

void AppendEvidence(const Node& n, std::vector<Evidence>& out) {
  for (const Finding* f : n.members) {
    if (!f->evidence.empty()) {
      out.insert(out.end(), f->evidence.begin(), f->evidence.end());
      continue;
    }
    Evidence e;
    e.time_ns = f->first_ns;
    e.source = DefaultSource(f->layer);
    e.component = f->component.Id();
    e.text = f->summary.empty() ? std::string(ToString(f->fault_class)) : f->summary;
    e.count = f->count;
    out.push_back(std::move(e));
  }
  if (n.members.empty()) {  // the caller's reported slowdown
    Evidence e;
    e.time_ns = n.first_ns;
    e.source = Source::kWorkload;
    e.component = n.component.Id();
    e.text = "slowdown reported by the caller";
    out.push_back(std::move(e));
  }
}

// Oldest first: UTC-timed lines by time, then kernel-monotonic-only lines, then untimed.
auto EvidenceOrder(const Evidence& e) {
  const int64_t mono = e.mono_us.value_or(std::numeric_limits<int64_t>::max());
  return std::make_tuple(e.time_ns == 0, e.time_ns, mono, e.component, e.text);
}

// Sorts, drops exact duplicates (the same line reported by two findings), keeps the
// oldest `max`; returns how many were dropped for the cap.
size_t SortAndCap(std::vector<Evidence>& evidence, size_t max) {
  std::stable_sort(evidence.begin(), evidence.end(),
                   [](const Evidence& a, const Evidence& b) { return EvidenceOrder(a) < EvidenceOrder(b); });
  evidence.erase(std::unique(evidence.begin(), evidence.end()), evidence.end());
  if (evidence.size() <= max) return 0;
  const size_t dropped = evidence.size() - max;
  evidence.resize(max);
  return dropped;
}

std::string FirstSummary(const Node& n) {
  for (const Finding* f : n.members) {
    if (!f->summary.empty()) return f->summary;
  }
  return "";
}

// The worst step-time ratio the slow-step findings of `n` report (the workload detector's
// "ratio" fact); 0 when none says (a slowdown the caller reported carries no figure).
double SlowdownRatio(const Node& n) {
  double worst = 0;
  for (const Finding* f : n.members) {
    auto it = f->attrs.find("ratio");
    if (it == f->attrs.end()) continue;
    if (auto r = ParseDouble(it->second); r && std::isfinite(*r)) worst = std::max(worst, *r);
  }
  return worst;
}

std::string Describe(const Node& n) {
  std::string when = n.first_ns == 0 ? "" : " from " + FormatIso8601(n.first_ns);
  if (n.slowdown) {
    const std::string what = FirstSummary(n);
    return "slow steps" + (what.empty() ? "" : " (" + what + ")") + when;
  }
  return std::string(ToString(n.fault_class)) + " on " + n.component.Id() + " (" + std::string(ToString(n.layer)) +
         ")" + when;
}

double Sanitize(double c) { return (c > 0.0 && c <= 1.0) ? c : (c > 1.0 ? 1.0 : kDefaultConfidence); }

double RootConfidence(const std::vector<Node>& nodes, const Node& root, const std::vector<int>& below) {
  double c = Sanitize(root.confidence);
  std::set<Layer> layers = root.layers;
  for (int i : below) {
    const Node& n = nodes[static_cast<size_t>(i)];
    if (n.rule == nullptr || !n.rule->weak) layers.insert(n.layers.begin(), n.layers.end());
  }
  layers.erase(Layer::kWorkload);
  if (layers.size() > 1) c += kPerLayerBonus * static_cast<double>(layers.size() - 1);
  if (root.symptom || IsSymptomClass(root.fault_class)) c *= kUnknownCauseFactor;
  if (root.sympathetic) c *= kSympatheticFactor;
  return std::min(c, kMaxConfidence);
}

Action RootAction(const Node& root) {
  Action a = root.action == Action::kNone ? DefaultAction(root.fault_class) : root.action;
  // A program's fault never earns a hardware action (decoy: XID 13 storms).
  if (IsUserClass(root.fault_class)) a = std::min(a, Action::kRestartJob);
  // An echo of a fault we cannot see is watched, not acted on.
  if (root.sympathetic) a = std::min(a, Action::kMonitor);
  return a;
}

void SpanOf(const std::vector<Node>& nodes, const std::vector<int>& all, Diagnosis& d) {
  d.first_ns = 0;
  d.last_ns = 0;
  for (int i : all) {
    const Node& n = nodes[static_cast<size_t>(i)];
    if (n.first_ns != 0 && (d.first_ns == 0 || n.first_ns < d.first_ns)) d.first_ns = n.first_ns;
    d.last_ns = std::max(d.last_ns, n.last_ns);
  }
}

std::string RootSummary(const Node& root, size_t explained, bool low_urgency, size_t dropped) {
  // A detector's own summary already names the part and the fault in words; only a
  // finding without one gets the generic "<class> on <component>".
  std::string s = FirstSummary(root);
  if (s.empty()) s = std::string(ToString(root.fault_class)) + " on " + root.component.Id();
  if (explained > 0) s += "; explains " + std::to_string(explained) + " symptom(s)";
  if (root.symptom || IsSymptomClass(root.fault_class)) s += "; its cause was not found in the data";
  if (root.sympathetic) s += "; reported as sympathetic to a fault that is not in the data";
  if (low_urgency) s += "; nothing it feeds lost power (redundancy held), low urgency";
  if (dropped > 0) s += "; " + std::to_string(dropped) + " newer evidence line(s) omitted";
  return s;
}

}  // namespace

RankedDiagnosis RootDiagnosis(const std::vector<Node>& nodes, int root_index, const IsolateOptions& options) {
  const Node& root = nodes[static_cast<size_t>(root_index)];
  const std::vector<int> below = Descendants(nodes, root_index);
  RankedDiagnosis out;
  Diagnosis& d = out.diagnosis;
  d.fault_class = root.fault_class;
  d.layer = root.layer;
  d.component = root.component;
  d.action = RootAction(root);
  d.confidence = RootConfidence(nodes, root, below);
  d.severity = root.severity;
  // A failed PSU that explains nothing lost no load: redundancy held (decoy).
  const bool low_urgency = root.fault_class == FaultClass::kPowerSupply && below.empty();
  if (low_urgency) d.severity = std::min(d.severity, Severity::kWarning);
  std::vector<int> chain{root_index};
  chain.insert(chain.end(), below.begin(), below.end());
  SpanOf(nodes, chain, d);
  for (int i : chain) AppendEvidence(nodes[static_cast<size_t>(i)], d.evidence);
  const size_t dropped = SortAndCap(d.evidence, options.max_evidence);
  for (int i : below) {
    const Node& n = nodes[static_cast<size_t>(i)];
    d.explains.push_back(Describe(n));
    out.answers_slowdown = out.answers_slowdown || n.slowdown;
    if (n.slowdown) d.slowdown_ratio = std::max(d.slowdown_ratio, SlowdownRatio(n));
  }
  d.summary = RootSummary(root, below.size(), low_urgency, dropped);
  return out;
}

RankedDiagnosis WorkloadDiagnosis(const std::vector<Node>& nodes, const std::vector<int>& slowdowns,
                                  bool hardware_in_window, size_t ruled_out_layers, const IsolateOptions& options) {
  RankedDiagnosis out;
  out.answers_slowdown = true;
  Diagnosis& d = out.diagnosis;
  d.fault_class = FaultClass::kWorkloadImbalance;
  d.layer = Layer::kWorkload;
  d.component = nodes[static_cast<size_t>(slowdowns.front())].component;
  d.action = Action::kNotifyUser;
  d.severity = Severity::kWarning;
  // Each layer that had data and showed nothing makes "it is the workload" more likely.
  d.confidence = std::min(0.4 + 0.125 * static_cast<double>(ruled_out_layers), 0.9);
  if (hardware_in_window) d.confidence -= 0.1;
  SpanOf(nodes, slowdowns, d);
  for (int i : slowdowns) d.slowdown_ratio = std::max(d.slowdown_ratio, SlowdownRatio(nodes[static_cast<size_t>(i)]));
  for (int i : slowdowns) AppendEvidence(nodes[static_cast<size_t>(i)], d.evidence);
  const size_t dropped = SortAndCap(d.evidence, options.max_evidence);
  d.summary = hardware_in_window ? "no hardware or fabric cause lines up with the slowdown; suspect the workload"
                                 : "no hardware or fabric cause found; suspect the workload";
  if (dropped > 0) d.summary += "; " + std::to_string(dropped) + " newer evidence line(s) omitted";
  return out;
}

RankedDiagnosis NoneDiagnosis(size_t ruled_out_layers, size_t informational) {
  RankedDiagnosis out;
  Diagnosis& d = out.diagnosis;
  d.fault_class = FaultClass::kNone;
  d.layer = Layer::kWorkload;
  d.component = HostComponent();
  d.action = Action::kNone;
  d.severity = Severity::kInfo;
  d.confidence = std::min(0.5 + 0.1 * static_cast<double>(ruled_out_layers), 0.9);
  d.summary = informational == 0
                  ? "no fault found in the window"
                  : "no fault that needs action; " + std::to_string(informational) + " informational finding(s) follow";
  return out;
}

namespace {

std::string ObservationSummary(const Observation& o) {
  if (!o.text.empty()) return o.text;
  std::string s = o.component.Id() + " " + std::string(ToString(o.kind));
  if (o.value) {
    std::array<char, 32> buf{};
    std::snprintf(buf.data(), buf.size(), " %g", *o.value);
    s += buf.data();
  }
  return s;
}

// Events (log lines, SEL entries) are what findings are made of; a layer is ruled out
// by its healthy readings, so those are what gets quoted.
bool IsEvent(ObsKind k) { return IsKernelEventKind(k) || k == ObsKind::kSelEntry || k == ObsKind::kOther; }

// The latest reading of each (component, kind) in `layer`, in component order.
std::vector<const Observation*> LatestReadings(const std::vector<Observation>& observations, Layer layer) {
  std::map<std::pair<std::string, ObsKind>, const Observation*> latest;
  for (const Observation& o : observations) {
    if (o.layer != layer || !QuotableReading(o)) continue;
    const Observation*& slot = latest[{o.component.Id(), o.kind}];
    if (slot == nullptr || SortTimeNs(o) >= SortTimeNs(*slot)) slot = &o;
  }
  std::vector<const Observation*> out;
  for (const auto& [key, obs] : latest) out.push_back(obs);
  return out;
}

RuledOut RuleOut(Layer layer, bool info_only, const IsolateInput& input, const IsolateOptions& options) {
  RuledOut r;
  r.layer = layer;
  r.reason = "no fault in the " + std::string(ToString(layer)) + " layer";
  if (info_only) r.reason += " (informational findings only)";
  std::vector<const Observation*> readings = LatestReadings(input.observations, layer);
  if (readings.size() > options.max_ruled_out_evidence) readings.resize(options.max_ruled_out_evidence);
  std::string quoted;
  for (const Observation* o : readings) {
    quoted += (quoted.empty() ? "" : "; ") + ObservationSummary(*o);
    r.evidence.push_back(EvidenceFrom(*o));
  }
  r.reason += quoted.empty() ? "; its sources answered with no finding" : ": " + quoted;
  return r;
}

}  // namespace

bool QuotableReading(const Observation& o) {
  return std::find(kHardwareLayers.begin(), kHardwareLayers.end(), o.layer) != kHardwareLayers.end() &&
         !IsEvent(o.kind);
}

std::vector<RuledOut> RuledOutLayers(const IsolateInput& input, const IsolateOptions& options) {
  std::vector<RuledOut> out;
  for (Layer layer : kHardwareLayers) {
    if (!input.layers_with_data.contains(layer)) continue;  // no data is not "no fault"
    bool faulty = false;
    bool info = false;
    int program_faults = 0;
    for (const Finding& f : input.findings) {
      if (f.layer != layer || f.fault_class == FaultClass::kNone) continue;
      // A program's own fault (XID 13/31 from one job, a segfault) says nothing against
      // the hardware of this layer: it does not keep the layer from being ruled out.
      if (f.fault_class == FaultClass::kUserApplication) {
        ++program_faults;
        continue;
      }
      faulty = faulty || f.severity >= Severity::kWarning;
      info = true;
    }
    if (faulty) continue;
    RuledOut r = RuleOut(layer, info, input, options);
    if (program_faults > 0) {
      r.reason +=
          "; " + std::to_string(program_faults) + " program fault(s) here are the program's, not the hardware's";
    }
    out.push_back(std::move(r));
  }
  return out;
}

namespace {
auto OrderKey(const RankedDiagnosis& r, bool slowdown_question) {
  const Diagnosis& d = r.diagnosis;
  return std::make_tuple(!(slowdown_question && r.answers_slowdown), -static_cast<int>(d.severity),
                         -static_cast<int>(d.action), -d.confidence, d.layer,
                         d.first_ns == 0 ? std::numeric_limits<int64_t>::max() : d.first_ns, d.component.Id(),
                         d.fault_class);
}
}  // namespace

void OrderDiagnoses(std::vector<RankedDiagnosis>& diagnoses, bool slowdown_question) {
  std::stable_sort(diagnoses.begin(), diagnoses.end(), [&](const RankedDiagnosis& a, const RankedDiagnosis& b) {
    return OrderKey(a, slowdown_question) < OrderKey(b, slowdown_question);
  });
}

}  // namespace faultline::isolate
