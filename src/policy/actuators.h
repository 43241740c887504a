// The actuators a [policy] config asks for, built once and owned together (the agent and
// `check --slurm` both need them; neither should know how each is put together).
//
// What is built (docs/remediation.md "Configuration"):
//  - cordon and drain, and the breaker's fleet view, by `platform`: "slurm" (the default:
//    scontrol/sinfo), "kubernetes" (the API server, with `kubeconfig` or the in-cluster
//    service account; `kubernetes_node` names the node), "none" (neither: enabled cordon
//    and drain stay "no_actuator", and without a fleet view the breaker holds every
//    disruptive class);
//  - reset_gpu (`gpu_reset_command`) and reboot_node (`reboot_command`, markers in
//    `state_dir`, which must not be tmpfs when reboot_node is enabled), always;
//  - rma_bundle and facility_ticket into `bundle_dir`, when a store is given (they read it);
//  - webhook and notify_user, when `webhook_url` is set.
// Nothing contacts a platform while building: errors are configuration errors (an
// unreadable kubeconfig or webhook secret, a bad URL or command) naming the policy key.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "actions/kube_config.h"
#include "core/status.h"
#include "policy/config.h"

namespace faultline {
class Store;
}
namespace faultline::ipmi {
class CommandRunner;
}

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
  // What undoes faultline's cordon/drain on the platform (`faultline resolve`); null for
  // platform "none".
  actions::Reverter* reverter() const { return reverter_; }

  // Used by the builder (and tests) to hand over ownership.
  void Add(std::unique_ptr<actions::Actuator> actuator);
  template <typename T>
  T* Keep(std::unique_ptr<T> thing) {
    T* raw = thing.get();
    keep_.push_back(std::shared_ptr<void>(std::move(thing)));
    return raw;
  }
  void SetFleet(actions::FleetView* fleet) { fleet_ = fleet; }
  void SetReverter(actions::Reverter* reverter) { reverter_ = reverter; }

 private:
  std::vector<std::shared_ptr<void>> keep_;  // runners, clients: destroyed after the actuators
  std::vector<std::unique_ptr<actions::Actuator>> owned_;
  std::vector<actions::Actuator*> actuators_;
  actions::FleetView* fleet_ = nullptr;
  actions::Reverter* reverter_ = nullptr;
};

// What the builder borrows from its caller; every field may stay empty.
struct ActuatorDeps {
  Store* store = nullptr;                 // the agent's store: rma_bundle / facility_ticket read it
  ipmi::CommandRunner* runner = nullptr;  // null = a ProcessRunner owned by the set (tests pass a fake)
  std::string boot_id_path;               // "" = /proc/sys/kernel/random/boot_id (tests)
  actions::EnvLookup env;                 // null = the process environment (in-cluster lookup)
  std::string service_account_dir;        // "" = the standard in-cluster path (tests)
  bool kube_allow_plain_http = false;     // tests against a plain-HTTP fake API server
};

// Builds what `config` asks for. Errors name the policy key; the agent refuses to start on
// them.
Result<std::unique_ptr<ActuatorSet>> BuildActuators(const PolicyConfig& config, const ActuatorDeps& deps = {});

}  // namespace faultline::policy
