#include "store/series.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace faultline::store {
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
    case ObsKind::kAmdgpuEvent:
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
    case ObsKind::kRoceCounter:
    case ObsKind::kEthCounter:
    case ObsKind::kEthLinkState:
    case ObsKind::kEthSpeed:
    case ObsKind::kOther:
      return false;
  }
  return true;
}

// The attrs that name a series (what the collectors put there to tell two readings of one
// component and kind apart), per source. Any other attr describes the reading and is
// compared as content.
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
    {Source::kSysfs, {"error", "severity", "counter", "location", "sensor", "cause"}},
    // sources/amdsmi: ECC location (dram = UMC, sram = on-chip blocks), temperature sensor,
    // retired-page cause, XGMI scope (docs/amd.md).
    {Source::kAmdSmi, {"counter", "location", "cause", "sensor", "scope", "metric"}},
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

// SHA-256 fetched once: EVP_sha256() makes EVP_Digest look the algorithm up again at
// every call, under OpenSSL's locks (a few percent of a simulated multi-day run). The
// fetched object is immutable and shared by all threads; it lives as long as the process.
const EVP_MD* Sha256() {
  static const EVP_MD* const md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? static_cast<const EVP_MD*>(fetched) : EVP_sha256();
  }();
  return md;
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

std::string SeriesId(const Observation& obs) {
  const std::string key = SeriesKey(obs);
  if (key.empty()) return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(key.data(), key.size(), digest, &len, Sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), kSeriesIdBytes);
}

}  // namespace faultline::store
