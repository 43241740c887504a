// PSU state, power redundancy, voltages and power vs capacity (layer 1).
#include <map>

#include "engine/detect/oob_detectors.h"
#include "engine/detect/oob_finding_book.h"
#include "parse/redfish_map.h"

namespace faultline {
namespace {

// What the detector knows of one PSU bay. State semantics (DMTF Resource.State):
//  - Absent: an empty bay, whatever Health the vendor puts on it: no finding, no
//    capacity. A bay that held a supply and turns Absent: the supply was removed (a
//    monitor-level note; its capacity is gone, so it counts as lost for capacity and
//    redundancy).
//  - UnavailableOffline ("present but cannot be used"): lost.
//  - StandbyOffline / StandbySpare (and the non-standard "Standby"): a spare waiting to
//    take over; Disabled: switched off on purpose. Neither is a fault by itself (Health
//    decides); a Disabled supply adds no capacity.
//  - Any other state: Health decides (Critical lost, Warning predictive).
struct PsuState {
  bool lost = false;
  bool absent = false;
  bool was_present = false;  // seen installed at least once
  bool disabled = false;
  std::string health;
  double capacity_w = 0;
};

class OobPowerDetector final : public Detector {
 public:
  explicit OobPowerDetector(const OobOptions& options) : options_(options), book_(options.max_evidence) {}
  std::string_view name() const override { return "oob_power"; }

  void Observe(const Observation& obs) override {
    if (obs.layer != Layer::kOob) return;
    ++revision_;
    switch (obs.kind) {
      case ObsKind::kPsuState:
        ObservePsu(obs);
        break;
      case ObsKind::kVoltage:
        ObserveVoltage(obs);
        break;
      case ObsKind::kPower:
        ObservePower(obs);
        break;
      case ObsKind::kPowerCapacity:
        ObserveCapacity(obs);
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
  void ObservePsu(const Observation& obs) {
    const std::string health = OobAttr(obs, "health");
    const std::string state = OobAttr(obs, "state");
    const std::string line = OobAttr(obs, "line_input");
    const std::string part = OobPartKey(obs.component);
    const std::string key = "psu:" + part;
    PsuState& psu = psus_[part];
    if (state == "Absent" || OobAttr(obs, "present") == "false") {
      ObserveAbsent(obs, psu, part);
      return;
    }
    book_.Clear("removed:" + part, obs);  // a supply is back in the bay
    psu.absent = false;
    psu.was_present = true;
    psu.health = health;
    psu.disabled = state == "Disabled";
    const bool input_lost = line == "LossOfInput" || line == "OutOfRange";
    psu.lost = health == "Critical" || input_lost || state == "UnavailableOffline";
    if (psu.lost) {
      // A PSU whose input feed is gone is a facility problem, not a bad part.
      book_.Raise(key, obs, obs.component, FaultClass::kPowerSupply, Severity::kCritical,
                  input_lost ? Action::kFacilityTicket : Action::kRma, 0.9,
                  obs.component.Id() +
                      (input_lost ? " lost its input power (" + line + ")" : " failed (" + state + "/" + health + ")"));
    } else if (health == "Warning") {
      book_.Raise(key, obs, obs.component, FaultClass::kPowerSupply, Severity::kWarning, Action::kRma, 0.7,
                  obs.component.Id() + " reports a warning (predictive failure)");
    } else if (health == "OK") {
      book_.Clear(key, obs);
    }
    CheckCapacity(obs);
  }

  // An empty bay is not a failing PSU; a supply taken out of its bay is worth a note.
  void ObserveAbsent(const Observation& obs, PsuState& psu, const std::string& part) {
    const bool removed = psu.was_present && !psu.absent;
    psu.absent = true;
    psu.health.clear();
    psu.capacity_w = 0;
    // Whatever was wrong with the supply left with it.
    book_.Clear("psu:" + part, obs);
    if (removed) {
      psu.lost = true;  // the capacity it carried is gone
      book_.Raise("removed:" + part, obs, obs.component, FaultClass::kPowerSupply, Severity::kWarning, Action::kMonitor,
                  0.6, obs.component.Id() + " was removed from its bay (now reported Absent)");
    } else if (!psu.was_present) {
      psu.lost = false;
    }
    CheckCapacity(obs);
  }

  bool IsAbsent(const Observation& obs) const {
    auto it = psus_.find(OobPartKey(obs.component));
    return it != psus_.end() && it->second.absent;
  }

  // The part the reading belongs to is called healthy by the BMC (the reading's own
  // Status, or the PSU's state).
  bool PartHealthy(const Observation& obs) const {
    if (OobAttr(obs, "health") == "OK") return true;
    auto it = psus_.find(OobPartKey(obs.component));
    return it != psus_.end() && it->second.health == "OK" && !it->second.lost;
  }

  void ObserveVoltage(const Observation& obs) {
    if (!obs.value || obs.attrs.count("quirk")) return;
    if (obs.component.type == ComponentType::kPsu && IsAbsent(obs)) return;  // an empty bay reads nothing
    if (!redfish::ImplausibleReason(obs, PartHealthy(obs)).empty()) return;  // a vendor quirk, not evidence
    const double v = *obs.value;
    const std::string role = OobAttr(obs, "role");
    const std::string key = "volt:" + OobPartKey(obs.component) + ":" + role + ":" + OobAttr(obs, "data_source");
    Severity sev = Severity::kInfo;
    Action action = role == "input" ? Action::kFacilityTicket : Action::kRma;
    std::string why;
    auto over = [&](const char* attr, bool upper, Severity s) {
      auto t = OobAttrNum(obs, attr);
      if (t && (upper ? v > *t : v < *t) && s > sev) {
        sev = s;
        why = std::string(upper ? "above " : "below ") + attr + " " + OobAttr(obs, attr);
      }
    };
    over("upper_noncritical", true, Severity::kWarning);
    over("lower_noncritical", false, Severity::kWarning);
    over("upper_critical", true, Severity::kCritical);
    over("lower_critical", false, Severity::kCritical);
    over("upper_fatal", true, Severity::kFatal);
    over("lower_fatal", false, Severity::kFatal);
    if (role == "input" && !obs.attrs.count("lower_critical") && !obs.attrs.count("lower_noncritical")) {
      InputWithoutThresholds(obs, key, v, sev, action, why);
    }
    if (sev == Severity::kInfo && action != Action::kMonitor) {
      book_.Clear(key, obs);
      return;
    }
    // Input voltage is the feed (facility); a rail or regulator out of range is the part.
    book_.Raise(key, obs, obs.component, FaultClass::kVoltageOutOfRange, sev, action,
                action == Action::kMonitor ? 0.3 : 0.8,
                obs.component.Id() + " voltage " + std::to_string(v) + " V " + why);
  }

  // No BMC thresholds: the fixed wide-range window, and a sag below the first reading.
  // The fixed window alone, on a supply the BMC calls healthy, is only a note (a 277 V
  // or HVDC feed is outside it and perfectly fine); a sag is a change the BMC would not
  // flag, so it stays a facility warning.
  void InputWithoutThresholds(const Observation& obs, const std::string& key, double v, Severity& sev, Action& action,
                              std::string& why) {
    auto [it, first] = input_baseline_.try_emplace(key, v);
    if (!first && v < it->second * (1.0 - options_.input_voltage_sag_fraction)) {
      sev = Severity::kWarning;
      why = "sagged from " + std::to_string(it->second) + " V";
    }
    if (v < options_.input_voltage_min_v || v > options_.input_voltage_max_v) {
      if (PartHealthy(obs)) {
        if (sev == Severity::kInfo) {
          action = Action::kMonitor;
          why = "outside the usual input range while the BMC calls the supply healthy";
        }
      } else {
        sev = Severity::kCritical;
        why = "outside the accepted input range";
      }
    }
  }

  void ObservePower(const Observation& obs) {
    if (!obs.value || obs.component.type != ComponentType::kChassis) return;
    consumed_w_ = *obs.value;
    CheckCapacity(obs);
  }

  void ObserveCapacity(const Observation& obs) {
    if (!obs.value || obs.attrs.count("quirk")) return;
    if (obs.component.type == ComponentType::kPsu) {
      if (IsAbsent(obs)) return;
      psus_[OobPartKey(obs.component)].capacity_w = *obs.value;
    } else if (obs.component.type == ComponentType::kChassis) {
      chassis_capacity_w_ = *obs.value;
    }
    CheckCapacity(obs);
  }

  void ObserveRedundancy(const Observation& obs) {
    if (OobAttr(obs, "scope") != "power") return;
    const std::string health = OobAttr(obs, "health");
    const std::string key = "redundancy:" + obs.component.Id();
    const std::string overload = "overload:" + obs.component.Id();
    if (health == "Critical" || health == "Warning") {
      const Severity sev = health == "Critical" ? Severity::kCritical : Severity::kWarning;
      // Redundancy lost while every PSU we know of is healthy: no supply failed, the load
      // outgrew them (more load, or too few PSUs installed for it).
      if (AnyPsuInstalled() && !AnyPsuLost()) {
        book_.Raise(overload, obs, obs.component, FaultClass::kPowerInsufficient, sev, Action::kFacilityTicket, 0.8,
                    "power redundancy lost on " + obs.component.Id() +
                        " with every PSU healthy: the load exceeds "
                        "what the installed supplies can carry redundantly");
      } else {
        book_.Raise(key, obs, obs.component, FaultClass::kPowerSupply, sev, Action::kFacilityTicket, 0.8,
                    "power redundancy lost on " + obs.component.Id());
      }
    } else if (health == "OK") {
      book_.Clear(key, obs);
      book_.Clear(overload, obs);
    }
  }

  bool AnyPsuLost() const {
    for (const auto& [id, psu] : psus_) {
      if (psu.lost) return true;
    }
    return false;
  }
  bool AnyPsuInstalled() const {
    for (const auto& [id, psu] : psus_) {
      if (!psu.absent) return true;
    }
    return false;
  }

  // With a PSU lost, the healthy PSUs must carry the load.
  void CheckCapacity(const Observation& obs) {
    if (consumed_w_ <= 0) return;
    bool any_lost = false;
    double healthy_w = 0;
    bool all_known = true;
    size_t installed = 0;
    for (const auto& [id, psu] : psus_) {
      any_lost |= psu.lost;
      if (psu.absent) continue;  // an empty bay adds nothing and is not unknown
      ++installed;
      if (!psu.lost && !psu.disabled) healthy_w += psu.capacity_w;
      all_known &= psu.capacity_w > 0 || psu.disabled;
    }
    const double capacity = (all_known && installed > 0) ? healthy_w : chassis_capacity_w_;
    const std::string key = "capacity";
    ComponentRef chassis{ComponentType::kChassis, "chassis", {}};
    if (any_lost && capacity > 0 && consumed_w_ >= options_.power_near_capacity_fraction * capacity) {
      book_.Raise(key, obs, chassis, FaultClass::kPowerInsufficient, Severity::kCritical, Action::kFacilityTicket, 0.85,
                  "consumed " + std::to_string(consumed_w_) + " W near remaining capacity " + std::to_string(capacity) +
                      " W with a PSU lost");
    } else if (!any_lost || consumed_w_ < (options_.power_near_capacity_fraction - 0.05) * capacity) {
      book_.Clear(key, obs);
    }
  }

  OobOptions options_;
  OobFindingBook book_;
  uint64_t revision_ = 0;
  std::map<std::string, PsuState> psus_;
  std::map<std::string, double> input_baseline_;
  double consumed_w_ = 0;
  double chassis_capacity_w_ = 0;
};

}  // namespace

std::unique_ptr<Detector> MakeOobPowerDetector(const OobOptions& options) {
  return std::make_unique<OobPowerDetector>(options);
}

}  // namespace faultline
