#include "engine/isolate/input.h"

#include <algorithm>

#include "engine/detect/gpu_identity.h"

namespace faultline {
namespace {

bool SpanInWindow(int64_t first, int64_t last, const IsolateWindow& w) {
  if (first == 0) return true;  // unknown time: keep rather than silently lose evidence
  const int64_t end = std::max(first, last);
  return (w.since_ns == 0 || end >= w.since_ns) && (w.until_ns == 0 || first <= w.until_ns);
}

bool DatedInWindow(const Observation& o, const IsolateWindow& w) { return SpanInWindow(o.time_ns, o.time_ns, w); }

void Rename(const Inventory* inventory, ComponentRef& ref) {
  if (inventory != nullptr && ref.type == ComponentType::kGpu) ref = CanonicalGpu(*inventory, ref);
}

}  // namespace

IsolateInput BuildIsolateInput(IsolateInputParts parts) {
  IsolateInput in;
  in.slowdown_reported = parts.slowdown_reported;
  in.layers_with_data = std::move(parts.layers_with_data);
  for (Finding& f : parts.findings) {
    if (!SpanInWindow(f.first_ns, f.last_ns, parts.window)) continue;
    Rename(parts.inventory, f.component);
    in.layers_with_data.insert(f.layer);
    in.findings.push_back(std::move(f));
  }
  for (auto* list : {&parts.readings, &parts.workload}) {
    for (Observation& o : *list) {
      if (!DatedInWindow(o, parts.window)) continue;
      Rename(parts.inventory, o.component);
      in.layers_with_data.insert(o.layer);
      in.observations.push_back(std::move(o));
    }
  }
  return in;
}

IsolateContext::IsolateContext(Inventory inventory, IsolateContextOptions options)
    : inventory_(std::move(inventory)), options_(options) {}

void IsolateContext::Observe(const Observation& obs) {
  LearnGpuIdentity(obs, inventory_);
  if (obs.layer == Layer::kWorkload) {
    workload_.push_back(obs);
    while (workload_.size() > options_.max_workload) workload_.pop_front();
    return;
  }
  auto key = std::make_pair(obs.component.Id(), obs.kind);
  auto it = latest_.find(key);
  if (it == latest_.end()) {
    if (latest_.size() >= options_.max_readings) {
      ++readings_dropped_;
      return;
    }
    latest_.emplace(std::move(key), obs);
    return;
  }
  if (it->second.time_ns <= obs.time_ns) it->second = obs;
}

void IsolateContext::Forget(int64_t before_ns) {
  while (!workload_.empty() && workload_.front().time_ns < before_ns) workload_.pop_front();
  std::erase_if(latest_, [before_ns](const auto& entry) { return entry.second.time_ns < before_ns; });
}

IsolateInputParts IsolateContext::Parts() const {
  IsolateInputParts parts;
  parts.readings.reserve(latest_.size());
  for (const auto& [key, o] : latest_) parts.readings.push_back(o);
  parts.workload.assign(workload_.begin(), workload_.end());
  parts.inventory = &inventory_;
  return parts;
}

}  // namespace faultline
