#include "actions/kube_platform.h"

#include <utility>

namespace faultline::actions {
namespace {

// "faultline: hbm_uncorrectable gpu/3 gpu-7/d42: <summary>": what `kubectl describe node` shows.
std::string Describe(const Decision& d) {
  std::string text = "faultline: " + std::string(ToString(d.diagnosis.fault_class)) + " " + d.diagnosis.component.Id() +
                     " " + DiagnosisTag(d.node, d.diagnosis_id);
  if (!d.diagnosis.summary.empty()) text += ": " + d.diagnosis.summary;
  return text;
}

// The taint value: the fault class when it is a label value (every FaultClass name is),
// else a fixed word, so a strange name can never make the cordon fail.
std::string TaintValue(const Decision& d) {
  std::string v(ToString(d.diagnosis.fault_class));
  bool ok = !v.empty() && v.size() <= 63;
  for (char c : v) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  return ok && v.front() != '_' && v.back() != '_' ? v : "fault";
}

}  // namespace

KubernetesPlatform::KubernetesPlatform(KubernetesActuator& kube, KubePlatformOptions options)
    : kube_(kube), options_(std::move(options)) {}

bool KubernetesPlatform::Handles(ActionClass c) const { return c == ActionClass::kCordon || c == ActionClass::kDrain; }

std::string KubernetesPlatform::NodeFor(const Decision& d) const {
  return options_.node.empty() ? d.target_node : options_.node;
}

Result<Observed> KubernetesPlatform::Observe(const Decision& d) {
  const std::string node = NodeFor(d);
  auto st = kube_.GetNodeState(node);
  if (!st.ok()) return st.status();
  if (!st->unschedulable) return Observed::kNotInEffect;
  if (st->cordoned_by != kube_.options().identity) return Observed::kOtherOwner;
  if (d.action_class != ActionClass::kDrain) return Observed::kInEffect;
  // Cordoned by us but pods still to evict (a crash or a timeout cut the drain short).
  auto pods = kube_.EvictablePods(node);
  if (!pods.ok()) return pods.status();
  return pods->empty() ? Observed::kInEffect : Observed::kNotInEffect;
}

// An Event when this call made the cordon (first: it tells why the node went out), then the
// taint and the condition, which are idempotent and redone by a retry when they failed.
Status KubernetesPlatform::Mark(const std::string& node, const Decision& d, bool cordoned_now) {
  if (cordoned_now) {
    const bool drain = d.action_class == ActionClass::kDrain;
    Status s = kube_.PostEvent(node, {drain ? "FaultlineDrain" : "FaultlineCordon",
                                      std::string(drain ? "draining: " : "cordoned: ") + Describe(d), true});
    if (!s.ok()) return s;
  }
  if (Status s = kube_.Taint(node, TaintValue(d)); !s.ok()) return s;
  NodeConditionUpdate condition{ConditionTypeForLayer(d.diagnosis.layer), true,
                                std::string(ToString(d.diagnosis.fault_class)), Describe(d)};
  return kube_.SetCondition(node, condition);
}

Status KubernetesPlatform::Apply(const Decision& d) {
  if (!Handles(d.action_class)) {
    return Status(StatusCode::kUnsupported, "kubernetes cannot " + std::string(ToString(d.action_class)));
  }
  const std::string node = NodeFor(d);
  auto before = Observe(d);
  if (!before.ok()) return before.status();
  // Someone else's cordon: theirs to keep and to undo; we add nothing to it.
  if (*before == Observed::kOtherOwner) return Status::Ok();
  auto cordon = kube_.Cordon(node, d.key);
  if (!cordon.ok()) return cordon.status();
  if (*cordon == CordonOutcome::kCordonedByOther) return Status::Ok();  // cordoned in between
  if (Status s = Mark(node, d, *cordon == CordonOutcome::kCordoned); !s.ok()) return s;
  // Only the cordon here: it can be undone (Revert). A drain's evictions wait for Finish,
  // after the breaker's second look has kept this node's drain.
  auto st = kube_.GetNodeState(node);
  if (!st.ok()) return st.status();
  if (!st->unschedulable || st->cordoned_by != kube_.options().identity) {
    return Status(StatusCode::kUnavailable,
                  "kubernetes: " + node + " is not cordoned by faultline after the requests were accepted");
  }
  return Status::Ok();
}

Status KubernetesPlatform::Finish(const Decision& d) {
  if (d.action_class != ActionClass::kDrain) return Status::Ok();
  const std::string node = NodeFor(d);
  auto st = kube_.GetNodeState(node);
  if (!st.ok()) return st.status();
  // Someone else's cordon (Apply left it alone): theirs, and so are its pods.
  if (st->unschedulable && st->cordoned_by != kube_.options().identity) return Status::Ok();
  // Never evict from a node in service: uncordoned since Apply (the breaker's undo, resolve).
  if (!st->unschedulable) {
    return Status(StatusCode::kUnavailable, "kubernetes: " + node + " was uncordoned before its pods were evicted");
  }
  auto drained = kube_.Drain(node, d.key);
  if (!drained.ok()) return drained.status();
  auto after = Observe(d);
  if (!after.ok()) return after.status();
  if (*after != Observed::kInEffect) {
    return Status(StatusCode::kUnavailable,
                  "kubernetes: " + node + " is not drained after the evictions were accepted");
  }
  return Status::Ok();
}

Status KubernetesPlatform::Revert(const Decision& d) {
  const std::string node = NodeFor(d);
  auto st = kube_.GetNodeState(node);
  if (!st.ok()) return st.status();
  if (!st->unschedulable) return Status::Ok();
  if (st->cordoned_by != kube_.options().identity) {
    return Status(StatusCode::kPermissionDenied, node + " is cordoned by someone else: left cordoned");
  }
  if (st->decision != d.key) {
    return Status(StatusCode::kPermissionDenied, node + " is cordoned by faultline for another decision (" +
                                                     st->decision + "): left cordoned");
  }
  // Marks first, cordon last: a failure half-way leaves the node out of service (and still
  // ours, so running resolve again finishes), never back in service with a stale taint.
  if (Status s = kube_.Untaint(node); !s.ok()) return s;
  NodeConditionUpdate condition{ConditionTypeForLayer(d.diagnosis.layer), false, "Resolved",
                                "faultline: resolved " + DiagnosisTag(d.node, d.diagnosis_id)};
  if (Status s = kube_.SetCondition(node, condition); !s.ok()) return s;
  if (Status s = kube_.Uncordon(node); !s.ok()) return s;
  return kube_.PostEvent(node, {"FaultlineUncordon", "uncordoned: " + Describe(d) + " resolved", false});
}

Result<FleetState> KubernetesPlatform::Read() {
  auto nodes = kube_.ListNodes();
  if (!nodes.ok()) return nodes.status();
  FleetState fleet;
  fleet.known_nodes = nodes->size();
  for (const KubeNodeState& n : *nodes) {
    if (n.unschedulable && !n.cordoned_by.empty()) fleet.faultline_drains.push_back({n.name, n.cordoned_at_ns});
  }
  return fleet;
}

}  // namespace faultline::actions
