// Inlet air, fans, pumps, coolant temperatures and leak detectors (layer 1).
#include <algorithm>
#include <deque>
#include <map>

#include "engine/detect/oob_detectors.h"
#include "engine/detect/oob_finding_book.h"
#include "parse/text.h"

namespace faultline {
namespace {

bool IsInlet(const Observation& obs) {
  const std::string context = OobAttr(obs, "physical_context");
  if (context == "Intake" || context == "Ambient") return true;
  const std::string& n = obs.component.name;
  return Contains(n, "Inlet") || Contains(n, "Intake") || Contains(n, "inlet") || Contains(n, "intake");
}

class OobThermalDetector final : public Detector {
 public:
  explicit OobThermalDetector(const OobOptions& options) : options_(options), book_(options.max_evidence) {}
  std::string_view name() const override { return "oob_thermal"; }

  void Observe(const Observation& obs) override {
    if (obs.layer != Layer::kOob) return;
    switch (obs.kind) {
      case ObsKind::kTemperature:
        ObserveInlet(obs);
        break;
      case ObsKind::kFanState:
        ObservePart(obs, "fan", Action::kRma);
        break;
      case ObsKind::kPumpState:
        ObservePart(obs, "pump", Action::kFacilityTicket);
        break;
      case ObsKind::kCoolantTemp:
        ObserveCoolant(obs);
        break;
      case ObsKind::kLeak:
        ObserveLeak(obs);
        break;
      case ObsKind::kHealth:
        ObserveRedundancy(obs);
        break;
      default:
        break;
    }
  }

  std::vector<Finding> Findings() const override { return book_.All(); }

 private:
  void ObserveInlet(const Observation& obs) {
    if (!obs.value || !IsInlet(obs)) return;
    const double t = *obs.value;
    const std::string key = "inlet:" + obs.component.Id();
    auto noncrit = OobAttrNum(obs, "upper_noncritical");
    auto crit = OobAttrNum(obs, "upper_critical");
    const double warn_at = noncrit ? *noncrit : (crit ? *crit : options_.inlet_max_c);
    Severity sev = Severity::kInfo;
    if (crit && t > *crit) {
      sev = Severity::kCritical;
    } else if (t > warn_at) {
      sev = Severity::kWarning;
    }
    if (sev != Severity::kInfo) {
      book_.Raise(
          key, obs, obs.component, FaultClass::kThermalInlet, sev, Action::kFacilityTicket, 0.85,
          "inlet " + obs.component.Id() + " at " + std::to_string(t) + " C above " + std::to_string(warn_at) + " C");
    } else if (t <= warn_at - options_.hysteresis_c) {
      book_.Clear(key, obs);
    }
  }

  // A failed fan is a part to replace; a failed pump belongs to the cooling plant.
  void ObservePart(const Observation& obs, const std::string& part, Action action) {
    const std::string health = OobAttr(obs, "health");
    const std::string state = OobAttr(obs, "state");
    const std::string key = part + ":" + obs.component.Id();
    if (health == "Critical" || state == "UnavailableOffline") {
      book_.Raise(key, obs, obs.component, FaultClass::kCoolingDegraded, Severity::kCritical, action, 0.85,
                  part + " " + obs.component.Id() + " failed (" + state + "/" + health + ")");
    } else if (health == "Warning") {
      book_.Raise(key, obs, obs.component, FaultClass::kCoolingDegraded, Severity::kWarning, action, 0.6,
                  part + " " + obs.component.Id() + " degraded");
    } else if (health == "OK") {
      book_.Clear(key, obs);
    }
  }

  // Return or delta temperature rising within the window, or delta above the limit.
  void ObserveCoolant(const Observation& obs) {
    const std::string point = OobAttr(obs, "point");
    if (!obs.value || (point != "return" && point != "delta")) return;
    const std::string key = "coolant:" + obs.component.Id() + ":" + point;
    auto& hist = history_[key];
    const int64_t now = SortTimeNs(obs);
    hist.push_back({now, *obs.value});
    while (!hist.empty() && now - hist.front().first > options_.coolant_window_ns) hist.pop_front();
    double low = hist.front().second;
    for (const auto& [t, v] : hist) low = std::min(low, v);
    const double rise = *obs.value - low;
    const bool delta_high = point == "delta" && *obs.value > options_.coolant_delta_max_c;
    if (rise >= options_.coolant_rise_c || delta_high) {
      book_.Raise(key, obs, obs.component, FaultClass::kCoolingDegraded,
                  delta_high ? Severity::kCritical : Severity::kWarning, Action::kFacilityTicket, 0.75,
                  "coolant " + point + " on " + obs.component.Id() + " at " + std::to_string(*obs.value) + " C (rose " +
                      std::to_string(rise) + " C)");
    } else if (rise < options_.coolant_rise_c - options_.hysteresis_c) {
      book_.Clear(key, obs);
    }
  }

  void ObserveLeak(const Observation& obs) {
    const std::string key = "leak:" + obs.component.Id();
    const double level = obs.value.value_or(-1);
    if (level >= 1) {
      book_.Raise(key, obs, obs.component, FaultClass::kCoolantLeak,
                  level >= 2 ? Severity::kCritical : Severity::kWarning, Action::kFacilityTicket, 0.9,
                  "leak detector " + obs.component.Id() + " reports " + obs.text);
    } else if (level == 0) {
      book_.Clear(key, obs);
    }
  }

  void ObserveRedundancy(const Observation& obs) {
    if (OobAttr(obs, "scope") != "cooling") return;
    const std::string health = OobAttr(obs, "health");
    const std::string key = "fan_redundancy:" + obs.component.Id();
    if (health == "Critical" || health == "Warning") {
      book_.Raise(key, obs, obs.component, FaultClass::kCoolingDegraded,
                  health == "Critical" ? Severity::kCritical : Severity::kWarning, Action::kRma, 0.7,
                  "fan redundancy degraded on " + obs.component.Id());
    } else if (health == "OK") {
      book_.Clear(key, obs);
    }
  }

  OobOptions options_;
  OobFindingBook book_;
  std::map<std::string, std::deque<std::pair<int64_t, double>>> history_;
};

}  // namespace

std::unique_ptr<Detector> MakeOobThermalDetector(const OobOptions& options) {
  return std::make_unique<OobThermalDetector>(options);
}

}  // namespace faultline
