#include "engine/detect/critical.h"

#include <array>
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

// A Redfish/IPMI event the BMC itself calls Critical, about a power supply or a leak.
bool IsCriticalBmcEvent(const Observation& obs) {
  if (Attr(obs, "severity") != "Critical") return false;
  for (std::string_view field : {Attr(obs, "origin"), Attr(obs, "message_id"), std::string_view(obs.text)}) {
    if (Contains(field, "/PowerSupplies/") || Contains(field, "/LeakDetectors/")) return true;
    if (ContainsLower(field, "leak") || ContainsLower(field, "powersupply") || ContainsLower(field, "power supply")) {
      return true;
    }
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
    default:
      return false;
  }
}

}  // namespace faultline
