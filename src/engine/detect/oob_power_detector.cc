// PSU state, power redundancy, voltages and power vs capacity (layer 1).
#include <map>

#include "engine/detect/oob_detectors.h"
#include "engine/detect/oob_finding_book.h"

namespace faultline {
namespace {

struct PsuState {
  bool lost = false;
  double capacity_w = 0;
};

class OobPowerDetector final : public Detector {
 public:
  explicit OobPowerDetector(const OobOptions& options) : options_(options), book_(options.max_evidence) {}
  std::string_view name() const override { return "oob_power"; }

  void Observe(const Observation& obs) override {
    if (obs.layer != Layer::kOob) return;
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

 private:
  void ObservePsu(const Observation& obs) {
    const std::string health = OobAttr(obs, "health");
    const std::string state = OobAttr(obs, "state");
    const std::string line = OobAttr(obs, "line_input");
    const std::string key = "psu:" + obs.component.Id();
    // "Standby" and other non-standard states are tolerated: only health decides.
    const bool input_lost = line == "LossOfInput" || line == "OutOfRange";
    PsuState& psu = psus_[obs.component.Id()];
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

  void ObserveVoltage(const Observation& obs) {
    if (!obs.value) return;
    const double v = *obs.value;
    const std::string role = OobAttr(obs, "role");
    const std::string key = "volt:" + obs.component.Id() + ":" + role + ":" + OobAttr(obs, "data_source");
    Severity sev = Severity::kInfo;
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
    if (role == "input" && !obs.attrs.count("lower_critical")) InputWithoutThresholds(obs, key, v, sev, why);
    if (sev == Severity::kInfo) {
      book_.Clear(key, obs);
      return;
    }
    // Input voltage is the feed (facility); a rail or regulator out of range is the part.
    const Action action = role == "input" ? Action::kFacilityTicket : Action::kRma;
    book_.Raise(key, obs, obs.component, FaultClass::kVoltageOutOfRange, sev, action, 0.8,
                obs.component.Id() + " voltage " + std::to_string(v) + " V " + why);
  }

  void InputWithoutThresholds(const Observation& obs, const std::string& key, double v, Severity& sev,
                              std::string& why) {
    auto [it, first] = input_baseline_.try_emplace(key, v);
    if (v < options_.input_voltage_min_v || v > options_.input_voltage_max_v) {
      sev = Severity::kCritical;
      why = "outside the accepted input range";
    } else if (!first && v < it->second * (1.0 - options_.input_voltage_sag_fraction)) {
      sev = Severity::kWarning;
      why = "sagged from " + std::to_string(it->second) + " V";
    }
    (void)obs;
  }

  void ObservePower(const Observation& obs) {
    if (!obs.value || obs.component.type != ComponentType::kChassis) return;
    consumed_w_ = *obs.value;
    CheckCapacity(obs);
  }

  void ObserveCapacity(const Observation& obs) {
    if (!obs.value) return;
    if (obs.component.type == ComponentType::kPsu) {
      psus_[obs.component.Id()].capacity_w = *obs.value;
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
      if (!psus_.empty() && !AnyPsuLost()) {
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

  // With a PSU lost, the healthy PSUs must carry the load.
  void CheckCapacity(const Observation& obs) {
    if (consumed_w_ <= 0) return;
    bool any_lost = false;
    double healthy_w = 0;
    bool all_known = true;
    for (const auto& [id, psu] : psus_) {
      any_lost |= psu.lost;
      if (!psu.lost) healthy_w += psu.capacity_w;
      all_known &= psu.capacity_w > 0;
    }
    const double capacity = (all_known && !psus_.empty()) ? healthy_w : chassis_capacity_w_;
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
