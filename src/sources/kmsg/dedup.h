// Folds identical kernel observations that repeat within a window into one, with a
// repeat count (SIGNALS.md: one node logged ~800,000 copies of one XID 95 line). Two
// observations are identical when kind, component, code and message text match; the
// window slides with the last copy seen, so a steady flood stays one observation.
// Timestamps of the first and last copy are kept (time_ns/mono_us = first,
// attrs["last_time_ns"] / attrs["last_mono_us"] = last).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/types.h"

namespace faultline {

class ObservationDeduper {
 public:
  explicit ObservationDeduper(int64_t window_ns = 300LL * 1'000'000'000) : window_ns_(window_ns) {}

  void Add(Observation obs);
  // The folded observations, in order of first appearance; leaves the deduper empty.
  std::vector<Observation> Take();
  uint64_t folded() const { return folded_; }

 private:
  int64_t window_ns_;
  std::vector<Observation> out_;
  std::unordered_map<std::string, size_t> index_;  // key -> position in out_
  uint64_t folded_ = 0;
};

}  // namespace faultline
