// Change-only storage of periodic readings. An 8-GPU NVML sample is ~930 observations,
// almost all identical to the previous sample; storing each one costs ~5 GB/day. The
// pipeline asks this filter which observations to store; the detectors still get all.
//
// A periodic reading is an observation of a polled source (nvml, dcgm_exporter, sysfs,
// redfish) of a reading kind (a sensor, counter or state: temperature, ecc_sbe,
// nvlink_crc_flit, psu_state, ...), without a sequence number. Everything else (kernel
// lines, SEL/log entries, Redfish events, workload reports, one-off kinds such as xid or
// gpu_lost) is always stored.
//
// A series is (node, source, component, kind, and the attrs that name a series rather
// than describe a reading: the ECC counter and location, the retired-page cause, the
// temperature sensor, the clock, the AER error and severity, the Redfish rail/role/units
// ...; the table is in change_filter.cc). A reading is dropped when its series' last
// stored point had the same content (value, code, text, every attr, component keys) and
// is younger than the heartbeat, so a reader of the store still sees a flat series at
// least once per heartbeat and "last seen" stays fresh. Two readings that share a series
// but differ in content are both stored (never lost, only not compressed).
//
// Memory is bounded: a series not seen for more than two heartbeats is forgotten (its
// next reading is stored), and past `max_series` everything is forgotten at once.
//
// Time is the observations' own time, so the filter is deterministic under a fake clock.
// Not thread-safe: the pipeline calls it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/types.h"

namespace faultline::daemon {

struct ChangeFilterOptions {
  int64_t heartbeat_ns = 300'000'000'000;  // a flat series is stored at least this often
  size_t max_series = 1'000'000;           // hard memory bound (a node has a few thousand)
};

class ChangeFilter {
 public:
  explicit ChangeFilter(ChangeFilterOptions options = {});

  // True when `obs` must be stored; then it becomes its series' last stored point.
  bool Keep(const Observation& obs);
  // Records an observation already in the store as its series' last stored point (warm
  // start), without deciding anything. Observations must come oldest first.
  void Prime(const Observation& obs);
  // Forgets the series of `obs`, so its next reading is stored (a failed store append).
  void Forget(const Observation& obs);

  size_t series() const { return series_.size(); }

 private:
  // What a reader of the store would see change.
  struct Content {
    Layer layer = Layer::kOs;
    std::optional<double> value;
    std::optional<int64_t> code;
    std::string text;
    std::map<std::string, std::string> keys;
    std::map<std::string, std::string> attrs;
    bool operator==(const Content&) const = default;
  };
  struct Point {
    Content content;
    int64_t stored_ns = 0;  // time of the last stored reading
    int64_t seen_ns = 0;    // time of the last reading, stored or not
  };

  static Content ContentOf(const Observation& obs);
  void Remember(std::string key, const Observation& obs);
  void EvictStale(int64_t now_ns);

  ChangeFilterOptions options_;
  std::unordered_map<std::string, Point> series_;
  int64_t latest_ns_ = 0;      // newest observation time seen
  int64_t next_evict_ns_ = 0;  // when the next stale-series sweep is due
};

// Whether `obs` is a periodic reading the filter may drop (see the header comment).
bool IsPeriodicReading(const Observation& obs);
// The series `obs` belongs to (empty for an observation that is not a periodic reading).
std::string SeriesKey(const Observation& obs);

}  // namespace faultline::daemon
