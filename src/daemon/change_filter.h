// Change-only storage of periodic readings. An 8-GPU NVML sample is ~930 observations,
// almost all identical to the previous sample; storing each one costs ~5 GB/day. The
// pipeline asks this filter what to do with each observation; the detectors still get
// every one.
//
// Periodic readings and their series are defined in store/series.h (nvml, dcgm_exporter,
// sysfs and redfish sensors, counters and states; kernel lines, SEL/log entries, Redfish
// events, workload reports and one-off kinds are never filtered). For a periodic reading
// the filter answers:
//  - kStore: its content (value, code, text, every attr, component keys) differs from
//    its series' last stored point, or the series is new: a row, the series' new point;
//  - kSeen: unchanged, and the series' last-seen time in the store is a heartbeat old:
//    no row, the store moves that series' last-seen time (Store::Append `seen`), so a
//    reader sees a flat series alive up to its last reading (to within a heartbeat);
//  - kSkip: unchanged, last seen recently enough: nothing is written.
// After a gap in a series' readings longer than two heartbeats (the agent was stopped, the
// source failed), its next reading is stored even if unchanged: a stretch never claims
// readings it did not see.
//
// Dead-band: a few analog readings that no detector thresholds exactly and that wander
// at every sample (GPU board power and clocks from NVML/DCGM, BMC fan speeds; GPU/HBM
// temperatures, but only far below their slowdown threshold, where no detector judges
// them) count as unchanged while their value stays within a tolerance of the last STORED
// value (|v - stored| < max(abs, rel x |stored|)), so slow drift is stored once it adds
// up to the tolerance and the stored history is accurate to it. Never for counters,
// states, BMC temperatures, voltages or chassis power (detectors compare those with
// thresholds exactly): the kinds are listed in DefaultDeadbands() and a test checks every
// other kind is compared exactly. `deadbands` empty = exact comparison for everything.
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
#include <vector>

#include "core/types.h"
#include "store/series.h"

namespace faultline::daemon {

// The tolerance of one (source, kind) of analog reading (see the header comment).
struct Deadband {
  Source source = Source::kNvml;
  ObsKind kind = ObsKind::kPower;
  double abs = 0;  // in the reading's unit (W, MHz, RPM, % or C)
  double rel = 0;  // of the stored value's magnitude
  // > 0: banded only while the new and the stored value both stay this far below the
  // reading's own limit (the number in attr `limit_attr`, else `limit_default`): near a
  // limit a detector judges, every change is stored exactly.
  double margin = 0;
  const char* limit_attr = "";
  double limit_default = 0;
};

// GPU board power (NVML, DCGM): 10%, at least 10 W; SM/memory clocks: 5%, at least
// 30 MHz (two boost bins); GPU and HBM temperatures (NVML, DCGM): 1 C steps, only while
// 10 C or more below the reading's slowdown threshold (85 C when it carries none); BMC
// fan speeds: 5%. Why these and only these: docs/agent.md "Change-only
// storage".
std::vector<Deadband> DefaultDeadbands();

struct ChangeFilterOptions {
  int64_t heartbeat_ns = 300'000'000'000;  // a flat series' last-seen time is written this often
  size_t max_series = 1'000'000;           // hard memory bound (a node has a few thousand)
  std::vector<Deadband> deadbands = DefaultDeadbands();
};

enum class StoreDecision { kSkip, kSeen, kStore };

class ChangeFilter {
 public:
  explicit ChangeFilter(ChangeFilterOptions options = {});

  // What to do with `obs` (see the header comment). kStore makes it its series' stored
  // point; kSeen moves the series' last-seen time.
  StoreDecision Decide(const Observation& obs);
  // Records an observation read back from the store (warm start: a stored row, or a copy
  // of one dated when its series was last seen) as its series' stored point, seen at its
  // time, without deciding anything. Observations must come oldest first.
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
    Content content;        // of the last stored reading
    int64_t marked_ns = 0;  // time of the last stored reading or last-seen mark
    int64_t seen_ns = 0;    // time of the last reading, stored or not
  };

  static Content ContentOf(const Observation& obs);
  bool Unchanged(const Observation& obs, const Content& stored) const;
  void Remember(std::string key, const Observation& obs);
  void EvictStale(int64_t now_ns);

  ChangeFilterOptions options_;
  std::unordered_map<std::string, Point> series_;
  int64_t latest_ns_ = 0;      // newest observation time seen
  int64_t next_evict_ns_ = 0;  // when the next stale-series sweep is due
};

// Whether `obs` is a periodic reading the filter may drop (store/series.h).
using store::IsPeriodicReading;
// The series `obs` belongs to (empty for an observation that is not a periodic reading).
using store::SeriesKey;

}  // namespace faultline::daemon
