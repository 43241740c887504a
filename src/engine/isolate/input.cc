#include "engine/isolate/input.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/detect/gpu_identity.h"
#include "engine/isolate/diagnosis.h"

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

// The isolator's context picked from every reading and report: for each hardware layer,
// the latest quotable reading of each (component, kind) under its canonical name, the
// first `per_layer` in (component, kind) order. The same choice (and tie-break: of two
// equally recent readings the later one given) as the isolator's own when it quotes them
// (diagnosis.cc LatestReadings), so the diagnoses are the ones all readings would give.
class ContextPicker {
 public:
  ContextPicker(const Inventory* inventory, const IsolateWindow& window, std::set<Layer>& layers)
      : inventory_(inventory), window_(window), layers_(layers) {}

  void Offer(const Observation& o) {
    if (!DatedInWindow(o, window_)) return;
    layers_.insert(o.layer);
    if (!isolate::QuotableReading(o)) return;
    const int renamed = Renamed(o.component);
    const ComponentRef& name = renamed < 0 ? o.component : renamed_[static_cast<size_t>(renamed)].second;
    Candidate& slot = latest_[std::make_tuple(o.layer, name.Id(), o.kind)];
    if (slot.obs == nullptr || SortTimeNs(o) >= SortTimeNs(*slot.obs)) slot = Candidate{&o, renamed};
  }

  void TakeInto(std::vector<Observation>& out, size_t per_layer) {
    size_t in_layer = 0;
    std::optional<Layer> layer;
    for (const auto& [key, c] : latest_) {
      if (std::get<0>(key) != layer) {
        layer = std::get<0>(key);
        in_layer = 0;
      }
      if (in_layer++ >= per_layer) continue;
      Observation& o = out.emplace_back(*c.obs);
      if (c.renamed >= 0) o.component = renamed_[static_cast<size_t>(c.renamed)].second;
    }
    latest_.clear();
  }

 private:
  struct Candidate {
    const Observation* obs = nullptr;
    int renamed = -1;  // index in renamed_; -1: the name as seen
  };

  // A GPU's canonical name, worked out once per distinct reference: a node's thousand
  // series name its handful of GPUs over and over. Only a GPU can change its name.
  int Renamed(const ComponentRef& ref) {
    if (inventory_ == nullptr || ref.type != ComponentType::kGpu) return -1;
    std::vector<int>& same_name = by_name_[ref.name];  // the same name with other keys may rename otherwise
    for (int i : same_name) {
      if (*renamed_[static_cast<size_t>(i)].first == ref) return i;
    }
    renamed_.emplace_back(&ref, CanonicalGpu(*inventory_, ref));
    same_name.push_back(static_cast<int>(renamed_.size() - 1));
    return same_name.back();
  }

  const Inventory* inventory_;
  IsolateWindow window_;
  std::set<Layer>& layers_;
  std::map<std::tuple<Layer, std::string, ObsKind>, Candidate> latest_;
  std::vector<std::pair<const ComponentRef*, ComponentRef>> renamed_;  // as seen -> canonical
  std::unordered_map<std::string, std::vector<int>> by_name_;          // indexes in renamed_
};

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
  ContextPicker picker(parts.inventory, parts.window, in.layers_with_data);
  for (const auto* list : {&parts.readings, &parts.workload}) {
    for (const Observation& o : *list) picker.Offer(o);
  }
  for (const Observation* o : parts.borrowed) picker.Offer(*o);
  picker.TakeInto(in.observations, parts.context_per_layer);
  return in;
}

IsolateContext::IsolateContext(Inventory inventory, IsolateContextOptions options)
    : inventory_(std::move(inventory)), options_(options) {}

void IsolateContext::Observe(const Observation& obs) {
  Learn(obs);
  Keep(Observation(obs));
}

void IsolateContext::Learn(const Observation& obs) { LearnGpuIdentity(obs, inventory_); }

bool IsolateContext::Keep(Observation&& obs) {
  if (obs.layer == Layer::kWorkload) {
    workload_.push_back(std::move(obs));
    while (workload_.size() > options_.max_workload) workload_.pop_front();
    return false;  // reports are not quoted: they count only as the layer's data
  }
  auto key = std::make_pair(obs.component.Id(), obs.kind);
  auto it = latest_.find(key);
  if (it == latest_.end()) {
    if (latest_.size() >= options_.max_readings) {
      ++readings_dropped_;
      return false;
    }
    if (latest_.empty() || obs.time_ns < oldest_reading_ns_) oldest_reading_ns_ = obs.time_ns;
    latest_.emplace(std::move(key), std::move(obs));
    return true;
  }
  if (it->second.time_ns > obs.time_ns) return false;
  it->second = std::move(obs);
  return true;
}

void IsolateContext::Forget(int64_t before_ns) {
  while (!workload_.empty() && workload_.front().time_ns < before_ns) workload_.pop_front();
  if (latest_.empty() || oldest_reading_ns_ >= before_ns) return;
  std::erase_if(latest_, [before_ns](const auto& entry) { return entry.second.time_ns < before_ns; });
  oldest_reading_ns_ = std::numeric_limits<int64_t>::max();
  for (const auto& [key, o] : latest_) oldest_reading_ns_ = std::min(oldest_reading_ns_, o.time_ns);
}

IsolateInputParts IsolateContext::Parts() const {
  IsolateInputParts parts;
  parts.borrowed.reserve(latest_.size() + workload_.size());
  for (const auto& [key, o] : latest_) parts.borrowed.push_back(&o);
  for (const Observation& o : workload_) parts.borrowed.push_back(&o);
  parts.inventory = &inventory_;
  return parts;
}

}  // namespace faultline
