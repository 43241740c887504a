#include "sim/mock_bmc/fault_injector.h"

namespace faultline::sim {

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point: linear-ish, no recursion on hostile patterns.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

FaultPlan FaultInjector::Decide(std::string_view method, std::string_view path) {
  FaultPlan plan;
  plan.latency = latency_;
  for (Rule& r : rules_) {
    const Fault& f = r.fault;
    if (!f.method.empty() && f.method != method) continue;
    if (!GlobMatch(f.path_glob, path)) continue;
    if (f.kind != FaultKind::kLatency && plan.action) continue;  // one action per request
    if (f.times >= 0 && r.fired >= static_cast<uint64_t>(f.times)) continue;
    ++r.matches;
    const uint64_t nth = f.every_nth > 1 ? static_cast<uint64_t>(f.every_nth) : 1;
    if (r.matches % nth != 0) continue;
    ++r.fired;
    if (f.kind == FaultKind::kLatency) {
      plan.latency += f.latency;
    } else {
      plan.action = f;
    }
  }
  return plan;
}

}  // namespace faultline::sim
