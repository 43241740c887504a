// Folds identical kernel observations that repeat within a window into one, with a
// repeat count (SIGNALS.md: one node logged ~800,000 copies of one XID 95 line). Two
// observations are identical when kind, component, code, message text, pid and process
// match; the window slides with the last copy seen, so a steady flood stays one
// observation. Timestamps of the first and last copy are kept (time_ns/mono_us = first,
// attrs["last_time_ns"] / attrs["last_mono_us"] = last).
//
// Bounded whatever the input (docs/kernel-log.md "Bounded memory"): at most
// max_variants distinct observations are kept per (kind, component, code), and at most
// max_observations in all. Past the first bound a new variant (another pid, another
// address) is aggregated into the latest kept variant of its (kind, component, code):
// its count grows and attrs["aggregated"] counts the variants folded in, so counts and
// time spans stay true while the evidence kept stays bounded. Past the second bound an
// observation of a new (kind, component, code) is dropped and counted (dropped()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/types.h"

namespace faultline {

struct DedupOptions {
  int64_t window_ns = 300LL * 1'000'000'000;
  size_t max_variants = 1024;         // distinct observations kept per (kind, component, code)
  size_t max_observations = 100'000;  // distinct observations kept in all
};

class ObservationDeduper {
 public:
  explicit ObservationDeduper(DedupOptions options = {}) : options_(options) {}

  void Add(Observation obs);
  // The folded observations, in order of first appearance; leaves the deduper empty.
  std::vector<Observation> Take();
  uint64_t folded() const { return folded_; }
  uint64_t aggregated() const { return aggregated_; }  // variants folded past max_variants
  uint64_t dropped() const { return dropped_; }        // observations dropped past max_observations
  size_t size() const { return out_.size(); }          // observations held now

 private:
  struct Group {
    size_t variants = 0;  // distinct observations of this (kind, component, code) kept
    size_t latest = 0;    // position in out_ of the latest one
  };
  // The last copy folded into out_[i]; written into its attrs by Take(), so a flood of
  // copies costs no attribute formatting per line.
  struct Last {
    int64_t sort_ns = 0;
    int64_t time_ns = 0;
    std::optional<int64_t> mono_us;
    uint64_t aggregated = 0;
    bool folded = false;
  };
  void Fold(size_t into, const Observation& copy);

  DedupOptions options_;
  std::vector<Observation> out_;
  std::vector<Last> last_;                         // parallel to out_
  std::unordered_map<std::string, size_t> index_;  // full key -> position in out_
  std::unordered_map<std::string, Group> groups_;  // (kind, component, code) -> its variants
  uint64_t folded_ = 0;
  uint64_t aggregated_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace faultline
