#include "daemon/change_filter.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace faultline::daemon {
namespace {

// Kinds that report an event rather than sample a reading. Stored every time, whatever
// the source (DCGM's last-XID gauge included). No default: a new kind must be placed.
bool IsOneOffKind(ObsKind kind) {
  switch (kind) {
    case ObsKind::kXid:
    case ObsKind::kSxid:
    case ObsKind::kXidRecoveryAction:
    case ObsKind::kGpuFellOffBus:
    case ObsKind::kHostMemoryError:
    case ObsKind::kAppFault:
    case ObsKind::kKernelHang:
    case ObsKind::kDriverError:
    case ObsKind::kNicEvent:
    case ObsKind::kSelEntry:
    case ObsKind::kGpuLost:
    case ObsKind::kStepTime:
    case ObsKind::kThroughput:
      return true;
    case ObsKind::kPsuState:
    case ObsKind::kTemperature:
    case ObsKind::kVoltage:
    case ObsKind::kPower:
    case ObsKind::kPowerCapacity:
    case ObsKind::kFanSpeed:
    case ObsKind::kFanState:
    case ObsKind::kCoolantTemp:
    case ObsKind::kCoolantFlow:
    case ObsKind::kPumpState:
    case ObsKind::kLeak:
    case ObsKind::kHealth:
    case ObsKind::kEccSbe:
    case ObsKind::kEccDbe:
    case ObsKind::kRowRemapCorrectable:
    case ObsKind::kRowRemapUncorrectable:
    case ObsKind::kRowRemapPending:
    case ObsKind::kRowRemapFailure:
    case ObsKind::kRetiredPages:
    case ObsKind::kRetiredPagesPending:
    case ObsKind::kClockThrottle:
    case ObsKind::kClock:
    case ObsKind::kPowerLimit:
    case ObsKind::kGpuIdentity:
    case ObsKind::kPcieReplay:
    case ObsKind::kPcieAer:  // from a polled source: the sysfs AER counters (kmsg's are never filtered)
    case ObsKind::kPcieLinkWidth:
    case ObsKind::kPcieLinkSpeed:
    case ObsKind::kPcieLinkGen:
    case ObsKind::kNvlinkState:
    case ObsKind::kNvlinkCrcFlit:
    case ObsKind::kNvlinkCrcData:
    case ObsKind::kNvlinkReplay:
    case ObsKind::kNvlinkRecovery:
    case ObsKind::kIbPortState:
    case ObsKind::kIbRate:
    case ObsKind::kIbSymbolError:
    case ObsKind::kIbLinkErrorRecovery:
    case ObsKind::kIbLinkDowned:
    case ObsKind::kIbRcvError:
    case ObsKind::kIbLinkIntegrity:
    case ObsKind::kIbXmitDiscards:
    case ObsKind::kOther:
      return false;
  }
  return true;
}

// The attrs that name a series (what the collectors put there to tell two readings of one
// component and kind apart), per source. Any other attr describes the reading and is
// compared as content. A name missing here costs compression, never data: the readings
// it separates then differ in content and are all stored.
struct SeriesAttrs {
  Source source;
  std::array<std::string_view, 7> names;
};
constexpr SeriesAttrs kSeriesAttrs[] = {
    // nvml_gpu_reader.cc: ECC volatile/aggregate + location, retired-page cause,
    // gpu/memory temperature, sm/mem clock.
    {Source::kNvml, {"counter", "location", "cause", "sensor", "clock"}},
    // dcgm_fields.cc: each field's attr_key.
    {Source::kDcgmExporter, {"counter", "location", "cause", "sensor", "clock", "metric", "scope"}},
    // sysfs/collector.cc: AER counter name + correctable/nonfatal/fatal; IB counter file.
    {Source::kSysfs, {"error", "severity", "counter"}},
    // parse/redfish_map.cc: PSU input vs rail voltages, fan RPM vs %, redundancy groups,
    // status conditions.
    {Source::kRedfish, {"role", "data_source", "units", "scope", "redundancy", "message_id", "origin"}},
};

bool IsPolledSource(Source source) {
  return std::any_of(std::begin(kSeriesAttrs), std::end(kSeriesAttrs),
                     [source](const SeriesAttrs& s) { return s.source == source; });
}

void AppendField(std::string& key, std::string_view field) {
  key += field;
  key += '\x1f';  // unit separator: cannot occur in names the collectors write
}

}  // namespace

bool IsPeriodicReading(const Observation& obs) {
  return !obs.seq && IsPolledSource(obs.source) && !IsOneOffKind(obs.kind);
}

std::string SeriesKey(const Observation& obs) {
  if (!IsPeriodicReading(obs)) return "";
  std::string key;
  AppendField(key, obs.node);
  AppendField(key, ToString(obs.source));
  AppendField(key, obs.component.Id());
  AppendField(key, ToString(obs.kind));
  for (const SeriesAttrs& s : kSeriesAttrs) {
    if (s.source != obs.source) continue;
    for (std::string_view name : s.names) {
      if (name.empty()) continue;
      auto it = obs.attrs.find(std::string(name));
      if (it == obs.attrs.end()) continue;
      AppendField(key, name);
      AppendField(key, it->second);
    }
  }
  return key;
}

ChangeFilter::ChangeFilter(ChangeFilterOptions options) : options_(options) {}

ChangeFilter::Content ChangeFilter::ContentOf(const Observation& obs) {
  return Content{obs.layer, obs.value, obs.code, obs.text, obs.component.keys, obs.attrs};
}

bool ChangeFilter::Keep(const Observation& obs) {
  std::string key = SeriesKey(obs);
  // Without a time the heartbeat cannot be judged: store.
  if (key.empty() || obs.time_ns == 0) return true;
  EvictStale(obs.time_ns);
  auto it = series_.find(key);
  if (it != series_.end()) {
    Point& p = it->second;
    p.seen_ns = std::max(p.seen_ns, obs.time_ns);
    // A clock stepped back is stored too: the age of the last point means nothing then.
    const int64_t age = obs.time_ns - p.stored_ns;
    if (age >= 0 && age < options_.heartbeat_ns && p.content == ContentOf(obs)) return false;
  }
  Remember(std::move(key), obs);
  return true;
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
