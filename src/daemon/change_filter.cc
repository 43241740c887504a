#include "daemon/change_filter.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace faultline::daemon {

std::vector<Deadband> DefaultDeadbands() {
  // Board power wanders by watts at every sample under any load, clocks by a boost bin or
  // two under a power cap, fan tachometers by tens of RPM: stored exactly, they are most
  // of a healthy node's rows. No detector thresholds them (GPU power brakes are judged
  // from the clock event reasons, chassis power from the BMC's chassis reading, fans from
  // their state): docs/agent.md "Change-only storage".
  // GPU temperatures step a degree now and then under any load; the throttle detector
  // judges them against the slowdown threshold (at it, and within 5 C of it), so they are
  // banded (1 C: a change of 2 C is stored) only 10 C or more below it.
  constexpr double kTempMargin = 10, kTempLimit = 85;
  return {
      {Source::kNvml, ObsKind::kPower, 10, 0.10},
      {Source::kDcgmExporter, ObsKind::kPower, 10, 0.10},
      {Source::kNvml, ObsKind::kClock, 30, 0.05},
      {Source::kDcgmExporter, ObsKind::kClock, 30, 0.05},
      {Source::kNvml, ObsKind::kTemperature, 2, 0, kTempMargin, "slowdown", kTempLimit},
      {Source::kDcgmExporter, ObsKind::kTemperature, 2, 0, kTempMargin, "slowdown", kTempLimit},
      {Source::kRedfish, ObsKind::kFanSpeed, 0, 0.05},
  };
}

namespace {

// The reading's own limit (e.g. NVML's slowdown temperature), else the band's default.
// The attrs are equal to the stored point's here (compared first), so either's will do.
double LimitOf(const Observation& obs, const Deadband& band) {
  auto it = obs.attrs.find(band.limit_attr);
  if (it == obs.attrs.end()) return band.limit_default;
  double v = 0;
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(v) ? v : band.limit_default;
}

}  // namespace

ChangeFilter::ChangeFilter(ChangeFilterOptions options) : options_(std::move(options)) {}

ChangeFilter::Content ChangeFilter::ContentOf(const Observation& obs) {
  return Content{obs.layer, obs.value, obs.code, obs.text, obs.component.keys, obs.attrs};
}

// Exact comparison, except the value of a dead-banded kind, compared with the stored
// value within its tolerance. Chassis power (Redfish) is not NVML's, so a (source, kind)
// pair names a dead-band, never a kind alone.
bool ChangeFilter::Unchanged(const Observation& obs, const Content& stored) const {
  // Field by field on the observation itself: no copy of its maps for the common answer.
  if (obs.layer != stored.layer || obs.code != stored.code || obs.text != stored.text ||
      obs.component.keys != stored.keys || obs.attrs != stored.attrs) {
    return false;
  }
  if (obs.value == stored.value) return true;
  if (!obs.value || !stored.value || !std::isfinite(*obs.value) || !std::isfinite(*stored.value)) return false;
  const auto band = std::find_if(options_.deadbands.begin(), options_.deadbands.end(),
                                 [&obs](const Deadband& d) { return d.source == obs.source && d.kind == obs.kind; });
  if (band == options_.deadbands.end()) return false;
  if (band->margin > 0) {
    const double limit = LimitOf(obs, *band) - band->margin;
    if (*obs.value > limit || *stored.value > limit) return false;  // near the limit: exact
  }
  const double tolerance = std::max(band->abs, band->rel * std::fabs(*stored.value));
  return std::fabs(*obs.value - *stored.value) < tolerance;
}

StoreDecision ChangeFilter::Decide(const Observation& obs) {
  std::string key = SeriesKey(obs);
  // Without a time the heartbeat cannot be judged: store.
  if (key.empty() || obs.time_ns == 0) return StoreDecision::kStore;
  EvictStale(obs.time_ns);
  auto it = series_.find(key);
  if (it != series_.end()) {
    Point& p = it->second;
    // A series not read for over two heartbeats (the agent was down, the source failed)
    // starts a new stretch with a row: a stretch never spans a gap it did not see. Two,
    // not one: a source polled exactly once per heartbeat (a multi-day simulation's
    // schedule) must not store every reading.
    const bool gap = obs.time_ns - p.seen_ns > 2 * options_.heartbeat_ns;
    p.seen_ns = std::max(p.seen_ns, obs.time_ns);
    // A clock stepped back is stored too: the age of the last mark means nothing then.
    const int64_t age = obs.time_ns - p.marked_ns;
    if (!gap && age >= 0 && Unchanged(obs, p.content)) {
      if (age < options_.heartbeat_ns) return StoreDecision::kSkip;
      p.marked_ns = obs.time_ns;
      return StoreDecision::kSeen;
    }
  }
  Remember(std::move(key), obs);
  return StoreDecision::kStore;
}

void ChangeFilter::Prime(const Observation& obs) {
  std::string key = SeriesKey(obs);
  if (key.empty() || obs.time_ns == 0) return;
  EvictStale(obs.time_ns);
  Remember(std::move(key), obs);
}

void ChangeFilter::Forget(const Observation& obs) {
  const std::string key = SeriesKey(obs);
  if (!key.empty()) series_.erase(key);
}

void ChangeFilter::Remember(std::string key, const Observation& obs) {
  // Past the bound the table is dropped whole: the next reading of every series is
  // stored, which is safe, and a node never gets near it with sane collectors.
  if (series_.size() >= options_.max_series && !series_.count(key)) series_.clear();
  series_[std::move(key)] = Point{ContentOf(obs), obs.time_ns, obs.time_ns};
}

void ChangeFilter::EvictStale(int64_t now_ns) {
  latest_ns_ = std::max(latest_ns_, now_ns);
  if (latest_ns_ < next_evict_ns_) return;
  // One sweep per heartbeat keeps the cost per observation constant.
  const int64_t cutoff = latest_ns_ - 2 * options_.heartbeat_ns;
  std::erase_if(series_, [cutoff](const auto& entry) { return entry.second.seen_ns < cutoff; });
  next_evict_ns_ = latest_ns_ + options_.heartbeat_ns;
}

}  // namespace faultline::daemon
