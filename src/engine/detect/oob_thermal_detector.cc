// Inlet air, fans, pumps, coolant temperatures and leak detectors (layer 1).
#include <algorithm>
#include <deque>
#include <map>
#include <optional>

#include "engine/detect/oob_detectors.h"
#include "engine/detect/oob_finding_book.h"
#include "engine/detect/oob_sensor_class.h"
#include "parse/text.h"

namespace faultline {
namespace {

class OobThermalDetector final : public Detector {
 public:
  explicit OobThermalDetector(const OobOptions& options) : options_(options), book_(options.max_evidence) {}
  std::string_view name() const override { return "oob_thermal"; }

  void Observe(const Observation& obs) override {
    if (obs.layer != Layer::kOob) return;
    ++revision_;
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
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  // Only the chassis intake (oob_sensor_class.h). The sensor's own thresholds and the
  // BMC's Health decide; the fixed inlet_max_c applies only to a sensor without
  // thresholds, and on one the BMC calls healthy it is a monitor-level note at most.
  void ObserveInlet(const Observation& obs) {
    if (!obs.value || ClassifyTemperature(obs) != TempSite::kInlet || obs.attrs.count("quirk")) return;
    const double t = *obs.value;
    const std::string key = "inlet:" + OobPartKey(obs.component);
    // The same sensor comes as a full Sensor (thresholds, Health) and as a bare excerpt
    // (ThermalMetrics, Thermal without thresholds): the excerpt is judged by the limits
    // the full resource gave, not by the fixed default.
    SensorLimits& known = limits_[key];
    auto noncrit = OobAttrNum(obs, "upper_noncritical");
    auto crit = OobAttrNum(obs, "upper_critical");
    auto fatal = OobAttrNum(obs, "upper_fatal");
    std::string health = OobAttr(obs, "health");
    const bool excerpt = !OobAttr(obs, "data_source").empty();
    if (noncrit || crit || fatal) {
      known = {noncrit, crit, fatal, known.health};
    } else if (excerpt && !known.noncrit && !known.crit && !known.fatal && known.health.empty()) {
      return;  // an excerpt of a Sensor not read yet: the Sensor itself is judged when it comes
    } else {
      noncrit = known.noncrit;
      crit = known.crit;
      fatal = known.fatal;
    }
    if (!health.empty()) {
      known.health = health;
    } else {
      health = known.health;
    }
    const bool own = noncrit || crit || fatal;
    const double warn_at = noncrit ? *noncrit : crit ? *crit : fatal ? *fatal : options_.inlet_max_c;
    Severity sev = Severity::kInfo;
    Action action = Action::kFacilityTicket;
    std::string why;
    if (own) {
      if ((fatal && t > *fatal) || (crit && t > *crit)) {
        sev = Severity::kCritical;
      } else if (t > warn_at) {
        sev = Severity::kWarning;
      }
      why = "above its threshold " + Num(sev == Severity::kCritical ? (crit ? *crit : *fatal) : warn_at) + " C";
    } else if (t > options_.inlet_max_c) {
      sev = Severity::kWarning;
      why = "above the default limit " + Num(options_.inlet_max_c) + " C (the sensor has no thresholds)";
      if (health == "OK") {
        sev = Severity::kInfo;  // the BMC calls it healthy: a note, not a ticket
        action = Action::kMonitor;
        why += "; the BMC calls it healthy";
      }
    }
    // The BMC's own verdict on the sensor counts even without thresholds.
    if (health == "Critical" && sev < Severity::kCritical) {
      sev = Severity::kCritical;
      action = Action::kFacilityTicket;
      why = "reported Critical by the BMC";
    } else if (health == "Warning" && sev < Severity::kWarning) {
      sev = Severity::kWarning;
      action = Action::kFacilityTicket;
      why = "reported Warning by the BMC";
    }
    if (sev > Severity::kInfo || action == Action::kMonitor) {
      book_.Raise(key, obs, obs.component, FaultClass::kThermalInlet, sev, action,
                  action == Action::kMonitor ? 0.3 : 0.85,
                  "inlet " + obs.component.Id() + " at " + Num(t) + " C " + why);
    } else if (t <= warn_at - options_.hysteresis_c && health != "Warning" && health != "Critical") {
      book_.Clear(key, obs);
    }
  }

  static std::string Num(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

  // A failed fan is a part to replace; a failed pump belongs to the cooling plant.
  // An empty slot (State Absent) is no part at all, whatever its Health says.
  void ObservePart(const Observation& obs, const std::string& part, Action action) {
    const std::string health = OobAttr(obs, "health");
    const std::string state = OobAttr(obs, "state");
    if (state == "Absent" || OobAttr(obs, "present") == "false") return;
    const std::string key = part + ":" + OobPartKey(obs.component);
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
    if (obs.attrs.count("quirk")) return;
    const std::string key = "coolant:" + OobPartKey(obs.component) + ":" + point;
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
    const std::string key = "leak:" + OobPartKey(obs.component);
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
  uint64_t revision_ = 0;
  std::map<std::string, std::deque<std::pair<int64_t, double>>> history_;
  // Per inlet sensor: the thresholds and Health its fullest resource reported.
  struct SensorLimits {
    std::optional<double> noncrit, crit, fatal;
    std::string health;
  };
  std::map<std::string, SensorLimits> limits_;
};

}  // namespace

std::unique_ptr<Detector> MakeOobThermalDetector(const OobOptions& options) {
  return std::make_unique<OobThermalDetector>(options);
}

}  // namespace faultline
