// The Kubernetes actuator: cordon, taint, node conditions, events and drain through the
// API server's REST interface (libcurl), as a node-problem-detector plus `kubectl drain`
// would, and nothing more forceful.
//
// Contract (docs/remediation-kubernetes.md):
//  - Cordon sets spec.unschedulable and marks the node with the annotation
//    faultline.io/cordoned-by=<identity>, in one PATCH guarded by the node's
//    resourceVersion (a 409 re-reads and retries). A node someone else had already cordoned
//    is left alone and not marked, so Uncordon never undoes another party's cordon:
//    Uncordon refuses (kPermissionDenied) unless the mark is present and ours.
//  - Taint adds or updates one NoSchedule (by default) taint with key faultline.io/fault;
//    Untaint removes only that key. Both are guarded by resourceVersion like Cordon.
//  - SetCondition writes one NodeCondition (one type per layer, ConditionTypeForLayer) with a
//    strategic-merge patch on the node's status subresource; other conditions are untouched.
//  - PostEvent creates a core/v1 Event about the node in options.event_namespace.
//  - Drain cordons, then evicts every pod on the node through the Eviction API
//    (policy/v1), skipping DaemonSet-owned pods, mirror (static) pods and finished pods.
//    A 429 (a PodDisruptionBudget forbids it now) is retried with exponential back-off and
//    never forced: no pod is ever deleted directly. A 404 means the pod is already gone. The
//    drain ends when no evictable pod is left on the node, or fails with kTimeout after
//    options.drain_timeout_ms naming the pods that remain.
//  - Errors: kPermissionDenied (401/403), kNotFound (404 node), kUnavailable (5xx, 429 outside
//    a drain, connection or TLS failure, conflicts that kept coming), kTimeout, and
//    kInvalidArgument for names the API would reject or a 4xx answer to a request it
//    should have accepted. Nothing is logged; the bearer token is in no message.
//  - Thread-safe: every call uses its own libcurl handle; calls for the same node race only
//    through the API server's resourceVersion checks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actions/kube_config.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/types.h"

namespace faultline::actions {

inline constexpr char kCordonedByAnnotation[] = "faultline.io/cordoned-by";
// Written with our cordon: when (RFC 3339, the breaker's "since") and for which decision.
inline constexpr char kCordonedAtAnnotation[] = "faultline.io/cordoned-at";
inline constexpr char kDecisionAnnotation[] = "faultline.io/decision";
inline constexpr char kDefaultTaintKey[] = "faultline.io/fault";

struct KubeOptions {
  bool allow_plain_http = false;             // http:// servers (tests, a loopback kubectl proxy)
  std::string identity = "faultline";        // value of the cordoned-by annotation; one per deployment
  std::string taint_key = kDefaultTaintKey;  // the only taint key Taint/Untaint ever touch
  std::string event_namespace = "default";   // where Node events live (kubectl's convention)
  std::string component = "faultline";       // Event source/reportingController
  int64_t request_timeout_ms = 10'000;
  int64_t connect_timeout_ms = 5'000;
  int conflict_retries = 5;  // 409s on a resourceVersion-guarded PATCH before giving up
  int64_t drain_timeout_ms = 600'000;
  int64_t evict_backoff_initial_ms = 1'000;
  int64_t evict_backoff_max_ms = 30'000;
  int64_t drain_poll_ms = 2'000;  // re-list interval while evicted pods terminate
  size_t max_body_bytes = 64u << 20;
  // Time and waiting, injectable so tests run the back-off on a fake clock. Null = the
  // system clock and a real sleep.
  const Clock* clock = nullptr;
  std::function<void(int64_t ns)> sleep;
};

enum class CordonOutcome {
  kCordoned,         // this call cordoned it and marked it ours
  kAlreadyOurs,      // already unschedulable with our mark: nothing changed
  kCordonedByOther,  // already unschedulable without our mark: left alone, not marked
};
std::string_view ToString(CordonOutcome v);

struct NodeConditionUpdate {
  std::string type;     // e.g. ConditionTypeForLayer(Layer::kGpu)
  bool active = true;   // status "True" (the problem is present) or "False"
  std::string reason;   // CamelCase, e.g. "HbmUncorrectable"; sanitized
  std::string message;  // one line for `kubectl describe node`; trimmed to 1024 bytes
};

struct KubeEvent {
  std::string reason;  // CamelCase, e.g. "FaultlineCordon"
  std::string message;
  bool warning = true;  // type Warning, else Normal
};

struct DrainReport {
  CordonOutcome cordon = CordonOutcome::kCordoned;
  std::vector<std::string> evicted;  // "namespace/name"
  std::vector<std::string> gone;     // 404 on eviction: already deleted
  std::vector<std::string> skipped;  // "namespace/name (daemonset|mirror|finished)"
  int pdb_refusals = 0;              // 429 answers, each retried later
};

// What a node shows about cordons (GetNodeState, ListNodes).
struct KubeNodeState {
  std::string name;
  bool unschedulable = false;
  std::string cordoned_by;     // value of faultline.io/cordoned-by ("" = none)
  std::string decision;        // value of faultline.io/decision
  int64_t cordoned_at_ns = 0;  // faultline.io/cordoned-at; 0 = absent or unparsable
};

// "FaultlineGPUProblem", "FaultlineOOBProblem", ... : one condition type per layer.
std::string ConditionTypeForLayer(Layer layer);
// "hbm_uncorrectable" -> "HbmUncorrectable" (a valid Kubernetes reason).
std::string CamelReason(std::string_view text);

class KubernetesActuator {
 public:
  // Validates the config (ValidateKubeConfig) and options; no request is made.
  static Result<std::unique_ptr<KubernetesActuator>> Create(KubeConfig config, KubeOptions options = {});
  ~KubernetesActuator();

  // `decision` (a decision key, may be empty) goes into faultline.io/decision with our
  // mark; faultline.io/cordoned-at records the time. Uncordon removes all three.
  Result<CordonOutcome> Cordon(const std::string& node, const std::string& decision = "");
  Status Uncordon(const std::string& node);
  Status Taint(const std::string& node, const std::string& value, const std::string& effect = "NoSchedule");
  Status Untaint(const std::string& node);
  Status SetCondition(const std::string& node, const NodeConditionUpdate& condition);
  Status PostEvent(const std::string& node, const KubeEvent& event);
  Result<DrainReport> Drain(const std::string& node, const std::string& decision = "");

  // One node's cordon state (GET), and every node's (GET /api/v1/nodes, paged by 500).
  Result<KubeNodeState> GetNodeState(const std::string& node);
  Result<std::vector<KubeNodeState>> ListNodes();
  // "namespace/name" of the pods a drain would still evict from `node` (not DaemonSet,
  // mirror or finished pods; a terminating pod counts until it is gone).
  Result<std::vector<std::string>> EvictablePods(const std::string& node);
  const KubeOptions& options() const;

  struct Impl;

 private:
  explicit KubernetesActuator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True for a name the API accepts for nodes, pods and namespaces (DNS-1123 subdomain).
bool IsValidKubeName(std::string_view name);

}  // namespace faultline::actions
