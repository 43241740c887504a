// A platform double for the simulator (`faultline bench remediation`): an in-memory
// cluster of N named nodes that carries out every remediation action class behind the one
// `actions::Actuator` interface, and is the breaker's `actions::FleetView` over those
// nodes. It is a test double like the fake NVML library: the policy engine and the agent
// run unchanged against it (Agent::UseActuators, policy::Engine), nothing here decides.
//
// What it keeps, per node: who took it out (faultline's cordon or drain with the decision
// key and the simulated time, or an operator's), the GPU resets and reboots requested, the
// bundles and tickets written, the webhook posts sent. Every Apply is also recorded in
// order (simulated time, node, class, component, diagnosis id, decision key, outcome), so
// a bench counts what was requested of the platform, not what the policy says it did.
//
// Observe answers from that state the way each real actuator does (docs/remediation.md),
// so the policy's idempotence and crash logic run for real:
//   cordon        in effect when faultline cordoned or drained the node; someone else's
//                 cordon/drain -> other owner
//   drain         in effect when faultline drained it (a cordon alone is not a drain);
//                 someone else's -> other owner
//   reboot_node   in effect once a reboot was requested for this decision key (the real
//                 actuator's marker from an earlier boot); the simulated node is not rebooted
//   rma_bundle,
//   facility_ticket  in effect once written for this decision key
//   reset_gpu, webhook, notify_user  unknown (the real ones cannot tell), so re-applied
// Apply on a node someone else took out changes nothing and succeeds (as Slurm and
// Kubernetes leave an operator's drain alone). A target node the cluster does not know is
// an error (kNotFound), never an invented node.
//
// Thread-safe (one mutex): the lockstep is single-threaded, but a daemon agent evaluates
// on its own thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "core/status.h"
#include "core/types.h"

namespace faultline::sim {

// One request the platform received.
struct PlatformApply {
  int64_t time_ns = 0;  // the decision's time (the agent's simulated clock)
  std::string node;     // the decision's target node
  actions::ActionClass action_class = actions::ActionClass::kWebhook;
  ComponentRef component;  // the diagnosis' part
  FaultClass fault_class = FaultClass::kNone;
  Action recommended = Action::kNone;  // the diagnosis' recommended action
  int64_t diagnosis_id = 0;
  std::string decision_key;
  bool changed = false;  // false: already in that state, or someone else's (nothing done)
  std::string error;     // non-empty: the request failed (unknown node, injected failure)
};

// A node as the platform sees it.
struct SimNodeState {
  enum class Out { kIn, kCordoned, kDrained };
  Out out = Out::kIn;
  std::string owner;  // "faultline" or the operator's name when out
  int64_t since_ns = 0;
  std::string decision_key;  // faultline's decision that took it out
  int gpu_resets = 0;
  std::set<std::string> reboots;  // decision keys a reboot was requested for
  std::set<std::string> bundles;  // decision keys a bundle or ticket was written for
  int posts = 0;                  // webhook / notify_user
};

class SimPlatform final : public actions::Actuator, public actions::FleetView {
 public:
  // `nodes`: the cluster's node names (each once; empty names are dropped).
  explicit SimPlatform(std::vector<std::string> nodes);
  // `count` nodes: `first` itself when not empty, then node-0001, node-0002, ... up to
  // `count` in all (a bench names the simulated node first).
  static std::vector<std::string> FleetNames(size_t count, const std::string& first = "");

  // Actuator: every class.
  bool Handles(actions::ActionClass c) const override;
  Status Apply(const actions::Decision& decision) override;
  Result<actions::Observed> Observe(const actions::Decision& decision) override;
  // FleetView: every node, and those faultline cordoned or drained with their times.
  Result<actions::FleetState> Read() override;

  // An operator's drain (someone else's state the policy must leave alone).
  Status OperatorDrain(const std::string& node, const std::string& who, int64_t time_ns);
  // The next `count` Apply calls of class `c` fail with `error` (a controller down).
  void FailNext(actions::ActionClass c, int count, std::string error);

  std::vector<PlatformApply> applies() const;
  std::optional<SimNodeState> node(const std::string& name) const;
  size_t known_nodes() const;
  int fleet_reads() const;

 private:
  Status Carry(SimNodeState& n, const actions::Decision& d, PlatformApply& rec);

  mutable std::mutex mu_;
  std::map<std::string, SimNodeState> nodes_;
  std::map<actions::ActionClass, std::pair<int, std::string>> fail_next_;
  std::vector<PlatformApply> applies_;
  int fleet_reads_ = 0;
};

}  // namespace faultline::sim
