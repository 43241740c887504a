#include "engine/detect/critical.h"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "parse/xid_catalog.h"

namespace faultline {
namespace {

std::string_view Attr(const Observation& o, const char* key) {
  auto it = o.attrs.find(key);
  return it == o.attrs.end() ? std::string_view() : std::string_view(it->second);
}

bool Contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

// Case-insensitive search for an ASCII needle written in lower case.
bool ContainsLower(std::string_view hay, std::string_view lower_needle) {
  if (lower_needle.empty() || hay.size() < lower_needle.size()) return false;
  for (size_t i = 0; i + lower_needle.size() <= hay.size(); ++i) {
    size_t k = 0;
    while (k < lower_needle.size()) {
      char c = hay[i + k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != lower_needle[k]) break;
      ++k;
    }
    if (k == lower_needle.size()) return true;
  }
  return false;
}

bool IsCriticalSxid(const Observation& obs) {
  if (!obs.code) return false;
  const XidRule rule = RuleForSxid(static_cast<int>(*obs.code), Attr(obs, "severity"));
  return rule.severity == Severity::kFatal || rule.fault_class == FaultClass::kNvswitchFault;
}

// A Redfish/IPMI event the BMC itself calls Critical, about a power supply, a leak or a
// temperature (a sensor past its critical threshold, a thermal trip, coolant).
bool IsCriticalBmcEvent(const Observation& obs) {
  if (Attr(obs, "severity") != "Critical") return false;
  static constexpr std::array<std::string_view, 7> kParts{"leak",    "powersupply", "power supply", "temperature",
                                                          "thermal", "overtemp",    "coolant"};
  for (std::string_view field : {Attr(obs, "origin"), Attr(obs, "message_id"), std::string_view(obs.text)}) {
    if (Contains(field, "/PowerSupplies/") || Contains(field, "/LeakDetectors/")) return true;
    for (std::string_view part : kParts) {
      if (ContainsLower(field, part)) return true;
    }
  }
  return false;
}

// A threshold attr ("upper_critical": the BMC's own number), when it is one.
std::optional<double> Threshold(const Observation& obs, const char* key) {
  const std::string_view text = Attr(obs, key);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A BMC temperature (inlet, a board sensor, coolant) the BMC reports at Critical health,
// or at or past its own upper critical (or fatal) threshold: the node is about to trip.
bool IsCriticalThermalReading(const Observation& obs) {
  if (obs.layer != Layer::kOob || (obs.kind != ObsKind::kTemperature && obs.kind != ObsKind::kCoolantTemp)) {
    return false;
  }
  if (Attr(obs, "health") == "Critical") return true;
  if (!obs.value) return false;
  for (const char* key : {"upper_critical", "upper_fatal"}) {
    if (const auto limit = Threshold(obs, key); limit && *obs.value >= *limit) return true;
  }
  return false;
}

// A PSU or leak detector reading whose health the BMC maps to Critical (value 2 in
// parse/redfish_map.cc's HealthLevel), or a PSU that is no longer there.
bool IsCriticalOobReading(const Observation& obs) {
  if (obs.kind != ObsKind::kPsuState && obs.kind != ObsKind::kLeak) return false;
  if (obs.value && *obs.value >= 2) return true;
  return obs.kind == ObsKind::kPsuState && Attr(obs, "state") == "Absent";
}

}  // namespace

bool IsCriticalXid(int64_t code) {
  static constexpr std::array<int64_t, 7> kAlways{48, 64, 74, 79, 94, 95, 119};
  for (int64_t c : kAlways) {
    if (c == code) return true;
  }
  return code > 0 && code < 100000 && RuleForXid(static_cast<int>(code)).severity == Severity::kFatal;
}

bool IsFatalAer(const Observation& o) {
  const std::string_view sev = Attr(o, "severity");
  if (Contains(sev, "(Fatal)")) return true;
  for (std::string_view errors : {Attr(o, "errors"), Attr(o, "type")}) {
    if (Contains(errors, "SDES") || Contains(errors, "Surprise Down") || Contains(errors, "recover") ||
        Contains(errors, "DPC")) {
      return true;
    }
  }
  return false;
}

bool IsCritical(const Observation& obs) {
  switch (obs.kind) {
    case ObsKind::kXid:
      return obs.code && IsCriticalXid(*obs.code);
    case ObsKind::kGpuFellOffBus:
    case ObsKind::kGpuLost:
      return true;
    case ObsKind::kSxid:
      return IsCriticalSxid(obs);
    case ObsKind::kPcieAer:
      return IsFatalAer(obs);
    case ObsKind::kSelEntry:
      return IsCriticalBmcEvent(obs);
    case ObsKind::kPsuState:
    case ObsKind::kLeak:
      return IsCriticalOobReading(obs);
    case ObsKind::kTemperature:
    case ObsKind::kCoolantTemp:
      return IsCriticalThermalReading(obs);
    default:
      return false;
  }
}

}  // namespace faultline
