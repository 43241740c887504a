#include "engine/isolate/graph.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "engine/isolate/component_match.h"

namespace faultline::isolate {
namespace {

constexpr int64_t kMaxDeclaredSkewNs = 24LL * 3600 * 1'000'000'000;  // a day: anything larger is bogus

int64_t SatAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return out;
}

int64_t SatSub(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out))
    return b > 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  return out;
}

bool AttrTrue(const Finding& f, const std::string& key) {
  auto it = f.attrs.find(key);
  return it != f.attrs.end() && it->second == "true";
}

// attrs {"clock_skew_ns": "<n>"}: the finding's own clock uncertainty. Unparseable or
// negative values count as 0; values above a day are clamped.
int64_t DeclaredSkew(const Finding& f) {
  auto it = f.attrs.find("clock_skew_ns");
  if (it == f.attrs.end()) return 0;
  int64_t v = 0;
  const std::string& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0) return 0;
  return std::min(v, kMaxDeclaredSkewNs);
}

// Slow steps: the workload detector's finding (class workload_imbalance by convention), or
// any workload-layer finding that is not a program fault.
bool IsSlowdown(const Finding& f) {
  return f.fault_class == kSlowdown || (f.layer == Layer::kWorkload && f.fault_class != FaultClass::kUserApplication);
}

// Unknown (0) times sort last so that timed evidence leads.
int64_t SortKey(int64_t ns) { return ns == 0 ? std::numeric_limits<int64_t>::max() : ns; }

int64_t NonNegative(int64_t v) { return std::max<int64_t>(v, 0); }

// Every evidence line of `f` came from the kernel log (kmsg, or a saved kernel log).
bool LoggedOnly(const Finding& f) {
  if (f.evidence.empty()) return false;
  for (const Evidence& e : f.evidence) {
    if (e.source != Source::kKmsg) return false;
  }
  return true;
}

Node NodeFrom(const Finding& f) {
  Node n;
  n.members.push_back(&f);
  n.slowdown = IsSlowdown(f);
  n.fault_class = n.slowdown ? kSlowdown : f.fault_class;
  n.layer = f.layer;
  n.layers.insert(f.layer);
  n.component = f.component;
  n.tokens = TokensOf(f.component);
  n.first_ns = f.first_ns;
  n.last_ns = std::max(f.first_ns, f.last_ns);
  n.skew_ns = DeclaredSkew(f);
  if (LoggedOnly(f)) n.first_logged_ns = f.first_ns;
  n.severity = f.severity;
  n.action = f.action;
  n.confidence = f.confidence;
  n.symptom = AttrTrue(f, "symptom");
  n.sympathetic = AttrTrue(f, "sympathetic");
  return n;
}

// Do two spans overlap once widened by the window and skew? Unknown times overlap.
bool SpansMeet(const Node& a, const Node& b, const IsolateOptions& options) {
  if (a.first_ns == 0 || b.first_ns == 0) return true;
  const int64_t slack = SatAdd(SatAdd(NonNegative(options.explain_before_ns), NonNegative(options.explain_skew_ns)),
                               SatAdd(a.skew_ns, b.skew_ns));
  return a.first_ns <= SatAdd(b.last_ns, slack) && b.first_ns <= SatAdd(a.last_ns, slack);
}

bool IsChassis(const Node& n) { return n.component.type == ComponentType::kChassis; }

// A coolant loop's readings (temperatures, flow) are the loop-level view of a part on it:
// a failed pump and the loop heating up behind it are one cooling fault, named by the pump.
bool LoopViewOfPart(const Node& loop, const Node& part) {
  return IsCoolantLoop(loop.component) && part.component.type == ComponentType::kCoolant &&
         !IsCoolantLoop(part.component) && SameScope(loop.component, part.component);
}

// One fault: same class, same part (or the chassis-level view of a part's fault, e.g.
// "power redundancy lost" next to the failed PSU), times that meet.
bool SameFault(const Node& n, const Node& f, const IsolateOptions& options) {
  if (n.fault_class != f.fault_class || n.slowdown != f.slowdown) return false;
  const bool same_part = n.slowdown || IsChassis(n) || IsChassis(f) || SameComponent(n.tokens, f.tokens) ||
                         LoopViewOfPart(n, f) || LoopViewOfPart(f, n);
  return same_part && SpansMeet(n, f, options);
}

// Which reference names a merged node: a part over the chassis, then the one with more
// identity keys (gpu/3 with uuid/serial/bdf beats the kernel's gpu/0000:3b:00.0).
bool BetterName(const ComponentRef& a, const ComponentRef& b) {
  const bool a_chassis = a.type == ComponentType::kChassis;
  const bool b_chassis = b.type == ComponentType::kChassis;
  if (a_chassis != b_chassis) return b_chassis;
  const bool a_loop = IsCoolantLoop(a);
  const bool b_loop = IsCoolantLoop(b);
  if (a_loop != b_loop) return b_loop;
  return a.keys.size() > b.keys.size();
}

void Absorb(Node& into, Node&& from) {
  if (BetterName(from.component, into.component)) std::swap(into.component, from.component);
  MergeKeys(into.component, from.component);
  MergeTokens(into.tokens, from.tokens);
  into.tokens.type = into.component.type;
  into.members.insert(into.members.end(), from.members.begin(), from.members.end());
  into.layer = std::min(into.layer, from.layer);
  into.layers.insert(from.layers.begin(), from.layers.end());
  if (into.first_ns == 0 || (from.first_ns != 0 && from.first_ns < into.first_ns)) into.first_ns = from.first_ns;
  into.last_ns = std::max(into.last_ns, from.last_ns);
  into.skew_ns = std::max(into.skew_ns, from.skew_ns);
  if (into.first_logged_ns == 0 || (from.first_logged_ns != 0 && from.first_logged_ns < into.first_logged_ns)) {
    into.first_logged_ns = from.first_logged_ns;
  }
  into.severity = std::max(into.severity, from.severity);
  into.action = std::max(into.action, from.action);
  into.confidence = std::max(into.confidence, from.confidence);
  into.symptom = into.symptom && from.symptom;
  into.sympathetic = into.sympathetic && from.sympathetic;
}

Node SyntheticSlowdown(const IsolateInput& input) {
  Node n;
  n.fault_class = kSlowdown;
  n.layer = Layer::kWorkload;
  n.layers.insert(Layer::kWorkload);
  n.component = HostComponent();
  n.tokens = TokensOf(n.component);
  n.first_ns = n.last_ns = input.symptom_ns.value_or(0);
  n.severity = Severity::kWarning;
  n.slowdown = true;
  n.symptom = true;
  return n;
}

auto NodeOrder(const Node& n) { return std::make_tuple(SortKey(n.first_ns), n.layer, n.fault_class, n.component.Id()); }

}  // namespace

bool TimesLineUp(const Node& cause, const Node& symptom, const IsolateOptions& options) {
  if (cause.first_ns == 0 || symptom.first_ns == 0) return true;
  const int64_t skew = SatAdd(NonNegative(options.explain_skew_ns), SatAdd(cause.skew_ns, symptom.skew_ns));
  const int64_t lo = SatSub(cause.first_ns, skew);
  const int64_t cause_end = std::max(cause.first_ns, cause.last_ns);
  const int64_t hi = SatAdd(SatAdd(cause_end, NonNegative(options.explain_before_ns)), skew);
  return symptom.first_ns >= lo && symptom.first_ns <= hi;
}

std::vector<Node> BuildNodes(const IsolateInput& input, const IsolateOptions& options) {
  // Process findings in a canonical order so the result does not depend on input order.
  std::vector<Node> singles;
  for (const Finding& f : input.findings) {
    if (f.fault_class != FaultClass::kNone) singles.push_back(NodeFrom(f));
  }
  std::stable_sort(singles.begin(), singles.end(), [](const Node& a, const Node& b) {
    const auto ka = std::tuple_cat(NodeOrder(a), std::make_tuple(a.members[0]->summary, a.severity));
    const auto kb = std::tuple_cat(NodeOrder(b), std::make_tuple(b.members[0]->summary, b.severity));
    return ka < kb;
  });
  std::vector<Node> nodes;
  for (Node& single : singles) {
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const Node& n) { return SameFault(n, single, options); });
    if (it == nodes.end()) {
      nodes.push_back(std::move(single));
    } else {
      Absorb(*it, std::move(single));
    }
  }
  const bool has_slowdown = std::any_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.slowdown; });
  if (input.slowdown_reported && !has_slowdown) nodes.push_back(SyntheticSlowdown(input));
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](const Node& a, const Node& b) { return NodeOrder(a) < NodeOrder(b); });
  return nodes;
}

namespace {

bool RelationHolds(Relation relation, const Node& cause, const Node& symptom) {
  switch (relation) {
    case Relation::kNode:
      return SameScope(cause.component, symptom.component);
    case Relation::kSameComponent:
      return SameComponent(cause.tokens, symptom.tokens);
    case Relation::kAttached:
      return Attached(cause.tokens, symptom.tokens);
  }
  return false;
}

// A rule with its own window: the symptom starts within `within_ns` of the cause's start,
// either side, and the cause is seen no later than `cause_lag_ns` after the symptom, each
// widened by the findings' declared clock uncertainty only. Unknown times line up
// (absence of a time is not evidence against).
//
// The lag is print order: the kernel may log a link's AER lines just after the driver's
// "fallen off the bus", each stamped by the kernel as it happened. A polled reading (a link
// read at width 0 by the next sysfs poll, NVML's GPU lost) is stamped when the poll ran,
// after the fact in whatever order the polls land, and is what the fall does: it gets no
// lag. Such a cause needs evidence from before the failure.
bool WithinRuleWindow(const CausalRule& rule, const Node& cause, const Node& symptom) {
  if (cause.first_ns == 0 || symptom.first_ns == 0) return true;
  if (rule.cause_lag_ns > 0) {
    const int64_t skew = SatAdd(cause.skew_ns, symptom.skew_ns);
    const bool before = cause.first_ns <= SatAdd(symptom.first_ns, skew);
    const bool logged_in_lag = cause.first_logged_ns != 0 &&
                               cause.first_logged_ns <= SatAdd(symptom.first_ns, SatAdd(rule.cause_lag_ns, skew));
    if (!before && !logged_in_lag) return false;
  }
  if (rule.within_ns <= 0) return true;
  const int64_t slack = SatAdd(rule.within_ns, SatAdd(cause.skew_ns, symptom.skew_ns));
  return symptom.first_ns >= SatSub(cause.first_ns, slack) && symptom.first_ns <= SatAdd(cause.first_ns, slack);
}

const CausalRule* MatchingRule(const Node& cause, const Node& symptom, const IsolateInput& input) {
  for (const CausalRule& rule : CausalRules()) {
    if (rule.cause != cause.fault_class || rule.symptom != symptom.fault_class) continue;
    if (cause.severity < rule.min_severity) continue;
    if (!WithinRuleWindow(rule, cause, symptom)) continue;
    if (rule.only_if_blind && input.layers_with_data.contains(*rule.only_if_blind)) continue;
    if (RelationHolds(rule.relation, cause, symptom)) return &rule;
  }
  return nullptr;
}

struct Candidate {
  int index = -1;
  const CausalRule* rule = nullptr;
};

int64_t Distance(const Node& a, const Node& b) {
  if (a.first_ns == 0 || b.first_ns == 0) return 0;
  const int64_t d = SatSub(a.first_ns, b.first_ns);
  return d == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : (d < 0 ? -d : d);
}

// Tie-breaks between causes that could each explain `symptom` (docs/isolator.md):
// direct before weak, physical layer first, closer in time, more severe, then the
// earlier node. Time before severity: a condition that sat there for minutes without
// this effect did not cause a symptom that began the moment something else changed.
auto CandidateOrder(const std::vector<Node>& nodes, const Node& symptom, const Candidate& c) {
  const Node& n = nodes[static_cast<size_t>(c.index)];
  const bool weak = c.rule != nullptr && c.rule->weak;
  return std::make_tuple(weak, n.layer, Distance(n, symptom), -static_cast<int>(n.severity), c.index);
}

std::optional<Candidate> BestCause(const std::vector<Node>& nodes, size_t s, const IsolateInput& input,
                                   const IsolateOptions& options) {
  const Node& symptom = nodes[s];
  std::optional<Candidate> best;
  for (size_t c = 0; c < nodes.size(); ++c) {
    const Node& cause = nodes[c];
    // A sympathetic finding is an echo of another fault: it never explains anything.
    if (c == s || cause.slowdown || cause.sympathetic) continue;
    if (!TimesLineUp(cause, symptom, options)) continue;
    Candidate cand{static_cast<int>(c), MatchingRule(cause, symptom, input)};
    if (cand.rule == nullptr && !(symptom.sympathetic && !symptom.slowdown)) continue;
    if (!best || CandidateOrder(nodes, symptom, cand) < CandidateOrder(nodes, symptom, *best)) best = cand;
  }
  return best;
}

}  // namespace

void LinkCauses(std::vector<Node>& nodes, const IsolateInput& input, const IsolateOptions& options) {
  for (size_t s = 0; s < nodes.size(); ++s) {
    if (auto best = BestCause(nodes, s, input, options)) {
      nodes[s].cause = best->index;
      nodes[s].rule = best->rule;
    }
  }
}

std::vector<int> Descendants(const std::vector<Node>& nodes, int root) {
  std::vector<int> out;
  std::vector<bool> seen(nodes.size(), false);
  std::vector<int> frontier{root};
  seen[static_cast<size_t>(root)] = true;
  while (!frontier.empty()) {
    const int parent = frontier.back();
    frontier.pop_back();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].cause == parent && !seen[i]) {
        seen[i] = true;
        out.push_back(static_cast<int>(i));
        frontier.push_back(static_cast<int>(i));
      }
    }
  }
  std::sort(out.begin(), out.end(), [&](int a, int b) {
    return NodeOrder(nodes[static_cast<size_t>(a)]) < NodeOrder(nodes[static_cast<size_t>(b)]);
  });
  return out;
}

}  // namespace faultline::isolate
