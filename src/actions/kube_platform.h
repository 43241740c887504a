// The Kubernetes actuator behind the one Actuator interface (actuator.h), and the breaker's
// fleet view from the cluster's own node list (docs/remediation.md "Kubernetes").
//
// Contract:
//  - Handles cordon and drain. Apply, on the decision's node (KubePlatformOptions::node when
//    set, else Decision::target_node): a node someone else cordoned is left alone (OK, nothing
//    done, exactly like the Slurm actuator with an operator's drain). Otherwise: cordon
//    (spec.unschedulable with the annotations faultline.io/cordoned-by, -cordoned-at and
//    faultline.io/decision = the decision key), an Event when this call made the cordon, the
//    faultline.io/fault taint (value = the fault class), the layer's NodeCondition (True,
//    reason = the fault class). OK when the node is then cordoned with our mark. Every step is
//    idempotent, so a retry after a failure redoes only what is missing.
//  - Finish (a drain, after the breaker's second look kept it): the evictions
//    (KubernetesActuator::Drain: PDBs respected, nothing forced); OK only when Observe then
//    answers kInEffect. Someone else's cordon: nothing done; a node uncordoned since Apply:
//    kUnavailable, nothing evicted. Apply alone never moves a pod, so the breaker's undo of a
//    drain over the fleet's budget costs no job its place.
//  - Observe: unschedulable with our cordoned-by mark -> kInEffect (a drain also needs no
//    evictable pod left on the node; while some remain it is kNotInEffect and Apply goes
//    on evicting); unschedulable without our mark -> kOtherOwner; else kNotInEffect.
//  - Read (FleetView): every node the API server lists; those unschedulable with a
//    faultline.io/cordoned-by mark (any faultline identity: the breaker counts every
//    deployment's cordons) with the time of faultline.io/cordoned-at (0 when absent).
//  - Revert (`faultline resolve`): only a cordon carrying our cordoned-by mark and this
//    decision's key (which starts with the diagnosing node, so another node's diagnosis
//    with the same store id never matches) is undone: the taint and the layer's condition (set False) go, the
//    node is uncordoned (marks removed) and a Normal event says so. Someone else's cordon,
//    or ours for another decision, is kPermissionDenied with nothing touched.
//  - Borrows the KubernetesActuator; never logs (the token stays inside it).
#pragma once

#include <string>

#include "actions/actuator.h"
#include "actions/kubernetes.h"

namespace faultline::actions {

struct KubePlatformOptions {
  std::string node;  // the Kubernetes node name; "" = Decision::target_node
};

class KubernetesPlatform final : public Actuator, public FleetView, public Reverter {
 public:
  KubernetesPlatform(KubernetesActuator& kube, KubePlatformOptions options = {});

  bool Handles(ActionClass c) const override;
  Status Apply(const Decision& decision) override;
  Status Finish(const Decision& decision) override;
  Result<Observed> Observe(const Decision& decision) override;
  Result<FleetState> Read() override;
  Status Revert(const Decision& decision) override;

  // The node a decision acts on.
  std::string NodeFor(const Decision& decision) const;

 private:
  Status Mark(const std::string& node, const Decision& decision, bool cordoned_now);
  KubernetesActuator& kube_;
  KubePlatformOptions options_;
};

}  // namespace faultline::actions
