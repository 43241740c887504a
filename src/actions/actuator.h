// The one interface every remediation target implements (Slurm, Kubernetes, webhook,
// RMA bundle, facility ticket), and the decision the policy hands it (docs/remediation.md).
//
// Contract for implementations:
//  - Apply carries out one decision and returns OK only when the platform now shows the
//    intended state (node drained with our reason, webhook answered 2xx, ...). Any failure
//    (tool missing, controller down, 5xx, timeout) is an error Status with the reason; the
//    policy stores it as "failed" and retries with back-off. Apply must be safe to call again
//    for a decision that is already in effect (it checks first and does not act twice).
//  - Observe answers, after a crash between "decided" and "done", whether the decision is
//    already in effect on the platform, so recovery neither loses nor repeats it. An
//    actuator that cannot observe (a webhook) answers kUnknown and the policy re-applies
//    (at-least-once, with a delivery id the receiver can deduplicate on).
//  - Never logs secrets (tokens, webhook keys).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace faultline::actions {

// What the policy may do about a diagnosis. Closed: the [policy] config names them, and
// the breaker and the rules reason about them.
enum class ActionClass {
  kCordon,          // stop new work on the node (Slurm: DRAIN; Kubernetes: spec.unschedulable)
  kDrain,           // cordon and move work off (Slurm: DRAIN; Kubernetes: eviction)
  kResetGpu,        // GPU reset (needs the node drained first)
  kRebootNode,      // node reboot (needs the node drained first)
  kRmaBundle,       // evidence bundle for a vendor RMA
  kFacilityTicket,  // ticket to facilities (power, cooling, leak)
  kWebhook,         // POST the diagnosis to a configured URL
  kNotifyUser,      // tell the job's owner (a user-program fault); sent through the webhook
};

std::string_view ToString(ActionClass c);
std::optional<ActionClass> ParseActionClass(std::string_view name);
const std::vector<ActionClass>& AllActionClasses();
// Classes that take capacity away from the fleet or interrupt work: held by the breaker.
bool IsDisruptive(ActionClass c);
// The closest core Action, for the store's `action` column.
Action CoreAction(ActionClass c);
// "<node>/d<diagnosis id>": whose diagnosis an action was made for. Diagnosis ids are per
// store, so per node: the id alone names one incident on every node that has it. `node` is the
// diagnosing node (Decision::node, the store's node), not the node acted on. The node part has
// every byte outside [A-Za-z0-9._-] replaced by '_' ("_" when empty) and is at most
// kDiagnosisTagNodeMaxBytes; a name that had to change for either reason ends in '-' and 8 hex
// digits of a hash of the real name, so two names that read alike once made safe keep two tags.
// Never holds a blank: it is the last word of a Slurm drain reason.
inline constexpr size_t kDiagnosisTagNodeMaxBytes = 48;
std::string DiagnosisTag(std::string_view node, int64_t diagnosis_id);
// A file name for what an actuator keeps per decision (a bundle, a reboot marker):
// "<key with every byte outside [A-Za-z0-9._-] as '_', at most 160 bytes>-<16 hex of a hash
// of the whole key><suffix>". One key is one name; keys that read alike once made safe, or
// share their first 160 bytes, still get two names. Never hidden, never "." or "..".
std::string DecisionFileName(std::string_view key, std::string_view suffix);

// One decision of the policy, as an actuator sees it.
struct Decision {
  std::string key;          // stable identity (policy/identity.h): same fault -> same key
  std::string node;         // the store's node name
  std::string target_node;  // the platform's name for it (Slurm NodeName, Kubernetes node)
  ActionClass action_class = ActionClass::kWebhook;
  int64_t diagnosis_id = 0;  // store row id
  Diagnosis diagnosis;
  std::vector<std::string> evidence;  // "finding:12", ... (store row ids backing the diagnosis)
  std::string rule;                   // the rule that allowed it
  int64_t time_ns = 0;
};

// What Observe found on the platform.
enum class Observed {
  kInEffect,     // the decision's state is there, made by faultline
  kNotInEffect,  // not there: safe to apply
  kOtherOwner,   // the state is there but someone else made it (never undone by faultline)
  kUnknown,      // this actuator cannot tell (e.g. a webhook)
};

class Actuator {
 public:
  virtual ~Actuator() = default;
  // Which classes this actuator carries out.
  virtual bool Handles(ActionClass c) const = 0;
  virtual Status Apply(const Decision& decision) = 0;
  virtual Result<Observed> Observe(const Decision& decision) = 0;
  // The part of an action that cannot be undone, run by the policy engine only once the
  // breaker's second look has kept the drain (Kubernetes: the evictions after the cordon).
  // Apply does only what a Reverter can take back, so a drain over the fleet's budget is
  // undone before any work was moved. Default: nothing left to do.
  virtual Status Finish(const Decision& decision) {
    (void)decision;
    return Status::Ok();
  }
};

// A platform where faultline's own cordon or drain can be undone (`faultline resolve`,
// docs/remediation.md "Resolve"). Revert returns the decision's node to service only when
// the cordon/drain there is faultline's AND was made for this decision (Slurm: the drain
// reason ends in DiagnosisTag(node, diagnosis id); Kubernetes: our cordoned-by mark and the
// decision key, which starts with the diagnosing node):
// kPermissionDenied, nothing done, when it is someone else's or another decision's; OK,
// nothing done, when the node is not cordoned at all. Safe to call again.
class Reverter {
 public:
  virtual ~Reverter() = default;
  virtual Status Revert(const Decision& decision) = 0;
};

// The breaker's view of the fleet, read from shared state the cluster already has (the
// Slurm or Kubernetes node list), not from a protocol of our own.
struct FleetDrain {
  std::string node;
  int64_t since_ns = 0;  // when the drain/cordon was made (0 = unknown)
};
struct FleetState {
  size_t known_nodes = 0;
  std::vector<FleetDrain> faultline_drains;  // nodes taken out by faultline (any node's agent)
};
class FleetView {
 public:
  virtual ~FleetView() = default;
  virtual Result<FleetState> Read() = 0;
};

}  // namespace faultline::actions
