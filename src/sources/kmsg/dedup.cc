#include "sources/kmsg/dedup.h"

#include "core/types.h"

namespace faultline {
namespace {

// (kind, component, code): what a detector groups by.
std::string GroupKeyOf(const Observation& o) {
  std::string key(ToString(o.kind));
  key += '\x1f';
  key += o.component.Id();
  key += '\x1f';
  key += o.code ? std::to_string(*o.code) : "-";
  return key;
}

std::string KeyOf(const std::string& group_key, const Observation& o) {
  std::string key = group_key;
  key += '\x1f';
  key += o.text;
  // Repeats from different processes stay apart: who faulted is what tells a program
  // bug from a bad GPU (one storm from one pid still collapses).
  for (const char* attr : {"pid", "process"}) {
    key += '\x1f';
    if (auto it = o.attrs.find(attr); it != o.attrs.end()) key += it->second;
  }
  return key;
}

}  // namespace

void ObservationDeduper::Fold(size_t into, const Observation& copy) {
  out_[into].count += copy.count;
  Last& last = last_[into];
  last.folded = true;
  const int64_t t = SortTimeNs(copy);
  if (t >= last.sort_ns) {
    last.sort_ns = t;
    if (copy.time_ns) last.time_ns = copy.time_ns;
    if (copy.mono_us) last.mono_us = copy.mono_us;
  }
}

void ObservationDeduper::Add(Observation obs) {
  const std::string group_key = GroupKeyOf(obs);
  const std::string key = KeyOf(group_key, obs);
  const int64_t t = SortTimeNs(obs);
  if (auto it = index_.find(key); it != index_.end()) {
    if (t - last_[it->second].sort_ns <= options_.window_ns) {
      Fold(it->second, obs);
      ++folded_;
      return;
    }
  }
  auto group = groups_.find(group_key);
  if (group != groups_.end() && group->second.variants >= options_.max_variants) {
    // Enough variants of this (kind, component, code) kept as evidence: count the rest.
    Fold(group->second.latest, obs);
    ++last_[group->second.latest].aggregated;
    ++aggregated_;
    return;
  }
  if (out_.size() >= options_.max_observations) {
    ++dropped_;
    return;
  }
  if (group == groups_.end()) group = groups_.emplace(group_key, Group{}).first;
  ++group->second.variants;
  group->second.latest = out_.size();
  index_[key] = out_.size();
  last_.push_back(Last{t, 0, {}, 0, false});
  out_.push_back(std::move(obs));
}

std::vector<Observation> ObservationDeduper::Take() {
  for (size_t i = 0; i < out_.size(); ++i) {
    const Last& last = last_[i];
    if (!last.folded) continue;
    auto& attrs = out_[i].attrs;
    attrs["last_sort_ns"] = std::to_string(last.sort_ns);
    if (last.time_ns) attrs["last_time_ns"] = std::to_string(last.time_ns);
    if (last.mono_us) attrs["last_mono_us"] = std::to_string(*last.mono_us);
    if (last.aggregated) attrs["aggregated"] = std::to_string(last.aggregated);
  }
  index_.clear();
  groups_.clear();
  last_.clear();
  std::vector<Observation> out;
  out.swap(out_);
  return out;
}

}  // namespace faultline
