#include "engine/detect/kernel_state.h"

#include <charconv>

#include "engine/detect/detector.h"

namespace faultline::kernel {

Finding StartFinding(const Observation& first, FaultClass fc, Layer layer, Action action, Severity sev,
                     double confidence) {
  Finding f;
  f.layer = layer;
  f.component = first.component;
  f.fault_class = fc;
  f.action = action;
  f.severity = sev;
  f.confidence = confidence;
  f.first_ns = SortTimeNs(first);
  f.last_ns = f.first_ns;
  f.count = 0;
  return f;
}

int64_t LastTimeOf(const Observation& o) {
  auto it = o.attrs.find("last_sort_ns");
  if (it == o.attrs.end()) return SortTimeNs(o);
  int64_t v = 0;
  const std::string& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr == s.data() + s.size() ? std::max(v, SortTimeNs(o)) : SortTimeNs(o);
}

void AddObservation(Finding& f, const Observation& o, const EvidencePolicy& policy) {
  f.count += o.count;
  f.first_ns = std::min(f.first_ns, SortTimeNs(o));
  f.last_ns = std::max(f.last_ns, LastTimeOf(o));
  if (f.evidence.size() >= policy.max) return;
  Evidence e = EvidenceFrom(o);
  if (e.text.size() > policy.max_bytes) e.text.resize(policy.max_bytes);
  f.evidence.push_back(std::move(e));
}

void SetEventKey(Finding& f, std::string_view rule, std::string_view group, const Observation& first) {
  f.key.clear();
  f.key += rule;
  f.key += '|';
  f.key += std::to_string(group.size());
  f.key += ':';
  f.key += group;
  f.key += '@';
  f.key += first.mono_us ? "m" + std::to_string(*first.mono_us) : "t" + std::to_string(SortTimeNs(first));
}

void MergeFinding(Finding& into, const Finding& from, const EvidencePolicy& policy) {
  into.count += from.count;
  into.first_ns = std::min(into.first_ns, from.first_ns);
  into.last_ns = std::max(into.last_ns, from.last_ns);
  for (const Evidence& e : from.evidence) {
    if (into.evidence.size() >= policy.max) break;
    into.evidence.push_back(e);
  }
}

}  // namespace faultline::kernel
