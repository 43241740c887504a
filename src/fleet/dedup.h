// What the fleet analyzer remembers to process each record once under at-least-once
// delivery (docs/fleet.md "Idempotency"). Both are bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/json.h"

namespace faultline::fleet {

// The last `capacity` message ids, as 64-bit hashes (8 bytes each in the ring, about 40
// in the set): a re-sent message inside that window is recognised. JetStream's own
// duplicate window catches re-sends at publish time; this one catches redelivery.
class MsgIdWindow {
 public:
  explicit MsgIdWindow(size_t capacity) : capacity_(capacity) {}
  // True when `id` is new (and remembers it); false for a repeat. Empty ids are never
  // remembered (always new).
  bool Insert(std::string_view id);
  size_t size() const { return set_.size(); }

  Json ToJson() const;
  bool FromJson(const Json& j);

 private:
  size_t capacity_;
  std::vector<uint64_t> ring_;  // insertion order; ring_[next_] is the oldest once full
  size_t next_ = 0;
  std::unordered_set<uint64_t> set_;
};

// Store row ids a node's records have carried, as disjoint sorted ranges: a batch of rows
// [first, last] adds one range and touching ranges merge, so a node publishing in store
// order holds one range. Past max_ranges the lowest two merge (the gap between them is
// then taken as seen: only rows re-sent from that far back could be dropped wrongly).
class RowRanges {
 public:
  bool Contains(int64_t id) const;
  void Add(int64_t first, int64_t last);
  size_t ranges() const { return ranges_.size(); }

  Json ToJson() const;
  bool FromJson(const Json& j);

  static constexpr size_t kMaxRanges = 16;

 private:
  std::vector<std::pair<int64_t, int64_t>> ranges_;
};

}  // namespace faultline::fleet
