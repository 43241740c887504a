// The isolator's working graph: findings grouped into nodes (one node per fault on one
// component), and "explained by" links between nodes chosen by the causal rules.
// Internal to src/engine/isolate; Isolate() in isolator.h is the public entry point.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "core/types.h"
#include "engine/isolate/causal_rules.h"
#include "engine/isolate/component_match.h"
#include "engine/isolate/isolator.h"

namespace faultline::isolate {

// One fault on one component: the findings of every layer that report it, merged.
struct Node {
  std::vector<const Finding*> members;  // empty for the synthetic slowdown node
  FaultClass fault_class = FaultClass::kNone;
  Layer layer = Layer::kOs;  // the layer of the first (most physical) member
  std::set<Layer> layers;    // every member's layer
  ComponentRef component;    // with the keys of every member merged in
  ComponentTokens tokens;    // every member's identity/attach tokens
  int64_t first_ns = 0;      // 0 = unknown
  int64_t last_ns = 0;
  int64_t skew_ns = 0;  // extra clock uncertainty the members declare
  // The earliest start among members known only from the kernel log, whose times are the
  // kernel's own stamps of each event (0 = none). A polled reading (sysfs, NVML, the BMC)
  // is stamped when the poll ran, which says nothing about print order (graph.cc).
  int64_t first_logged_ns = 0;
  Severity severity = Severity::kInfo;
  Action action = Action::kNone;     // the most disruptive member action
  double confidence = 0.0;           // the highest member confidence
  bool symptom = false;              // every member says {"symptom": "true"}
  bool sympathetic = false;          // every member says {"sympathetic": "true"}
  bool slowdown = false;             // slow steps (workload layer, or reported by the caller)
  int cause = -1;                    // index of the node that explains this one
  const CausalRule* rule = nullptr;  // the rule that links it to its cause (null: sympathetic)
};

// Groups the findings into nodes: same fault class on the same component (matched by any
// shared identity key) with times within the explain window are one fault. Findings of
// class `none` are dropped. Adds one synthetic slowdown node when the caller reports a
// slowdown and no workload finding shows one. Result ordered by first time, then layer.
std::vector<Node> BuildNodes(const IsolateInput& input, const IsolateOptions& options);

// Sets Node::cause for every node a rule (or the sympathetic rule) explains, choosing
// among candidate causes by the documented tie-breaks (docs/isolator.md).
void LinkCauses(std::vector<Node>& nodes, const IsolateInput& input, const IsolateOptions& options);

// Does `cause` precede `symptom` closely enough (window and skew, saturating arithmetic)?
// Unknown times (0) line up with anything: absence of a time is not evidence against.
bool TimesLineUp(const Node& cause, const Node& symptom, const IsolateOptions& options);

// Indexes of the nodes `root` explains, directly or through others, oldest first.
std::vector<int> Descendants(const std::vector<Node>& nodes, int root);

}  // namespace faultline::isolate
