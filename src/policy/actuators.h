// The actuators a [policy] config asks for, built once and owned together (the agent and
// `check --slurm` both need them; neither should know how each is put together).
//
// What is built (docs/remediation.md "Configuration"):
//  - Slurm (`platform = "slurm"`, the default): cordon and drain through scontrol; also the
//    breaker's fleet view (sinfo).
//  - Webhook, when `webhook_url` is set: webhook and notify_user.
// Classes with no actuator stay "no_actuator" in the ledger when enabled, never "done".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "core/status.h"
#include "policy/config.h"

namespace faultline::policy {

// Owns every actuator and what they borrow (command runner, HTTP client).
class ActuatorSet {
 public:
  ActuatorSet();
  ~ActuatorSet();
  ActuatorSet(const ActuatorSet&) = delete;
  ActuatorSet& operator=(const ActuatorSet&) = delete;

  // Borrowed views for policy::Engine; valid while the set lives.
  const std::vector<actions::Actuator*>& actuators() const { return actuators_; }
  actions::FleetView* fleet() const { return fleet_; }

  // Used by the builder (and tests) to hand over ownership.
  void Add(std::unique_ptr<actions::Actuator> actuator);
  template <typename T>
  T* Keep(std::unique_ptr<T> thing) {
    T* raw = thing.get();
    keep_.push_back(std::shared_ptr<void>(std::move(thing)));
    return raw;
  }
  void SetFleet(actions::FleetView* fleet) { fleet_ = fleet; }

 private:
  std::vector<std::shared_ptr<void>> keep_;  // runners, clients: destroyed after the actuators
  std::vector<std::unique_ptr<actions::Actuator>> owned_;
  std::vector<actions::Actuator*> actuators_;
  actions::FleetView* fleet_ = nullptr;
};

// Builds what `config` asks for. Errors (an unreadable webhook secret, a bad URL) name the
// policy key; the agent refuses to start on them.
Result<std::unique_ptr<ActuatorSet>> BuildActuators(const PolicyConfig& config);

}  // namespace faultline::policy
