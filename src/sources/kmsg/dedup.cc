#include "sources/kmsg/dedup.h"

#include "core/types.h"

namespace faultline {
namespace {

std::string KeyOf(const Observation& o) {
  std::string key(ToString(o.kind));
  key += '\x1f';
  key += o.component.Id();
  key += '\x1f';
  key += o.code ? std::to_string(*o.code) : "-";
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

int64_t LastTime(const Observation& o) {
  if (auto it = o.attrs.find("last_sort_ns"); it != o.attrs.end()) return std::stoll(it->second);
  return SortTimeNs(o);
}

}  // namespace

void ObservationDeduper::Add(Observation obs) {
  const std::string key = KeyOf(obs);
  auto it = index_.find(key);
  const int64_t t = SortTimeNs(obs);
  if (it != index_.end()) {
    Observation& first = out_[it->second];
    if (t - LastTime(first) <= window_ns_) {
      first.count += obs.count;
      first.attrs["last_sort_ns"] = std::to_string(t);
      if (obs.time_ns) first.attrs["last_time_ns"] = std::to_string(obs.time_ns);
      if (obs.mono_us) first.attrs["last_mono_us"] = std::to_string(*obs.mono_us);
      ++folded_;
      return;
    }
  }
  index_[key] = out_.size();
  out_.push_back(std::move(obs));
}

std::vector<Observation> ObservationDeduper::Take() {
  index_.clear();
  std::vector<Observation> out;
  out.swap(out_);
  return out;
}

}  // namespace faultline
