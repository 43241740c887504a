// Internal to the kernel detector (kernel_detector.cc): bounded containers for the
// per-rule state and the helpers every rule uses to grow a finding. Not a public API.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace faultline::kernel {

// A string-keyed map that never holds more than `cap` entries: when full, the half
// touched longest ago is dropped (amortized O(log n) per insert, whatever the input).
// Iteration is in key order, so anything built from it is deterministic.
template <typename V>
class BoundedMap {
 public:
  struct Entry {
    V value;
    int64_t touched = 0;
  };

  explicit BoundedMap(size_t cap) : cap_(std::max<size_t>(cap, 2)) {}

  V* Find(const std::string& key) {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second.value;
  }
  const V* Find(const std::string& key) const {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second.value;
  }

  // The entry for `key`, created (value-initialized) when absent; `fresh` says which.
  V& Get(const std::string& key, int64_t now, bool& fresh) {
    auto it = map_.find(key);
    fresh = it == map_.end();
    if (fresh) {
      if (map_.size() >= cap_) EvictOldestHalf();
      it = map_.emplace(key, Entry{}).first;
    }
    it->second.touched = std::max(it->second.touched, now);
    return it->second.value;
  }
  V& Get(const std::string& key, int64_t now) {
    bool fresh = false;
    return Get(key, now, fresh);
  }

  void Erase(const std::string& key) { map_.erase(key); }
  // Drops every entry whose last touch `stale(touched)` calls stale; returns how many went.
  template <typename Pred>
  size_t ForgetIf(Pred stale) {
    return std::erase_if(map_, [&stale](const auto& entry) { return stale(entry.second.touched); });
  }
  size_t size() const { return map_.size(); }
  const std::map<std::string, Entry>& entries() const { return map_; }
  std::map<std::string, Entry>& entries() { return map_; }

 private:
  void EvictOldestHalf() {
    std::vector<int64_t> times;
    times.reserve(map_.size());
    for (const auto& [k, e] : map_) times.push_back(e.touched);
    auto mid = times.begin() + static_cast<long>(times.size() / 2);
    std::nth_element(times.begin(), mid, times.end());
    const int64_t cutoff = *mid;
    size_t dropped = 0;
    const size_t want = map_.size() / 2;
    for (auto it = map_.begin(); it != map_.end() && dropped < want;) {
      if (it->second.touched <= cutoff) {
        it = map_.erase(it);
        ++dropped;
      } else {
        ++it;
      }
    }
  }

  size_t cap_;
  std::map<std::string, Entry> map_;
};

// How a finding grows from observations: span, count, evidence (the first `max` lines,
// each cut to `max_bytes`).
struct EvidencePolicy {
  size_t max = 20;
  size_t max_bytes = 1024;
};

Finding StartFinding(const Observation& first, FaultClass fc, Layer layer, Action action, Severity sev,
                     double confidence);
void AddObservation(Finding& f, const Observation& o, const EvidencePolicy& policy);
// Sets the finding's identity (Finding::key) when its rule starts it: the rule, the
// group it belongs to (length-prefixed, so no group text can pose as another) and the
// first line's own time (kernel monotonic time when known, else its sort time). Never
// changed afterwards, whatever the finding absorbs.
void SetEventKey(Finding& f, std::string_view rule, std::string_view group, const Observation& first);
// Adds `from`'s span, count and evidence to `into` (evidence up to the cap).
void MergeFinding(Finding& into, const Finding& from, const EvidencePolicy& policy);

// The last time a folded observation stands for ("last_sort_ns" attr), else its time.
int64_t LastTimeOf(const Observation& o);

}  // namespace faultline::kernel
