#include "engine/isolate/isolator.h"

#include <algorithm>
#include <array>
#include <string>

#include "engine/detect/detector.h"
#include "engine/isolate/diagnosis.h"
#include "engine/isolate/graph.h"

namespace faultline {
namespace {

using isolate::Node;
using isolate::RankedDiagnosis;

constexpr std::array kHardwareLayers{Layer::kOob, Layer::kGpu, Layer::kOs, Layer::kFabric};

// Background: nothing the node's operator must act on. An isolated program fault
// (severity info) only asks to tell its owner, so it is background for the node too.
bool Informational(const RankedDiagnosis& r) {
  const Diagnosis& d = r.diagnosis;
  if (d.severity != Severity::kInfo) return false;
  return d.action <= Action::kMonitor ||
         (d.fault_class == FaultClass::kUserApplication && d.action <= Action::kNotifyUser);
}

// "; no data from: oob, fabric": layers that could neither accuse nor be ruled out.
std::string NoDataNote(const IsolateInput& input) {
  std::string missing;
  for (Layer layer : kHardwareLayers) {
    if (input.layers_with_data.contains(layer)) continue;
    missing += (missing.empty() ? "" : ", ") + std::string(ToString(layer));
  }
  return missing.empty() ? "" : "; no data from: " + missing;
}

// One diagnosis per root cause, plus the workload answer for slow steps nothing explains.
std::vector<RankedDiagnosis> Roots(const std::vector<Node>& nodes, const IsolateOptions& options,
                                   size_t ruled_out_layers) {
  std::vector<RankedDiagnosis> out;
  std::vector<int> open_slowdowns;
  bool hardware_root = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.cause != -1) continue;
    if (n.slowdown) {
      open_slowdowns.push_back(static_cast<int>(i));
      continue;
    }
    out.push_back(isolate::RootDiagnosis(nodes, static_cast<int>(i), options));
    hardware_root = hardware_root || (!isolate::IsUserClass(n.fault_class) && n.severity >= Severity::kWarning);
  }
  if (!open_slowdowns.empty()) {
    out.push_back(isolate::WorkloadDiagnosis(nodes, open_slowdowns, hardware_root, ruled_out_layers, options));
  }
  return out;
}

}  // namespace

std::vector<Diagnosis> Isolate(const IsolateInput& input, const IsolateOptions& options) {
  std::vector<Node> nodes = isolate::BuildNodes(input, options);
  isolate::LinkCauses(nodes, input, options);
  std::vector<RuledOut> ruled_out = isolate::RuledOutLayers(input, options);
  std::vector<RankedDiagnosis> ranked = Roots(nodes, options, ruled_out.size());
  const bool slowdown_question = std::any_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.slowdown; });
  isolate::OrderDiagnoses(ranked, slowdown_question);
  // Background noise (benign SBEs, info-level findings) is listed, but the answer is "none".
  if (!slowdown_question && std::all_of(ranked.begin(), ranked.end(), Informational)) {
    ranked.insert(ranked.begin(), isolate::NoneDiagnosis(ruled_out.size(), ranked.size()));
  }
  std::vector<Diagnosis> out;
  out.reserve(ranked.size());
  for (RankedDiagnosis& r : ranked) out.push_back(std::move(r.diagnosis));
  out.front().ruled_out = std::move(ruled_out);
  out.front().summary += NoDataNote(input);
  return out;
}

}  // namespace faultline
