// The policy's memory: every decision state change is one appended row of the store's
// actions table (ActionRecord; the policy's fields in `attrs`), so the history is kept and a
// restart reads the state back (docs/remediation.md "Crash safety"). The latest row of a key
// is its state. Row layout:
//   action = CoreAction(class), diagnosis_id, dry_run, outcome = "<state>[: detail]",
//   reason = what the platform was told (the Slurm drain reason, ...),
//   attrs: key, incident, fault (FaultKey), class, state, rule, evidence ("finding:12,..."),
//          target_node, attempt, next_retry_ns, error; resolved rows: state=resolved,
//          incident, fixed_by.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actions/actuator.h"
#include "core/status.h"
#include "store/records.h"

namespace faultline {
class Store;
}

namespace faultline::policy {

enum class State {
  kDecided,           // stored before the actuator runs
  kDone,              // the actuator reported the platform in the intended state
  kFailed,            // the actuator failed; retried with back-off
  kHeldByBreaker,     // disruptive and the fleet breaker is tripped
  kHeldByCooldown,    // the class acted on this node within the cool-down
  kDryRun,            // class not enabled: what would have been done
  kRefused,           // a safety rule refused it
  kNoActuator,        // enabled, but nothing configured can carry it out
  kResolved,          // an operator closed the incident (faultline resolve)
  kHeldForFleet,      // paperwork waiting for the fleet analyzer's verdict (fleet_verdicts.h)
  kSuperseded,        // a shared fleet cause links the diagnosis: the fleet's action replaces it
  kHeldUntilSettled,  // disrupts or blames: waits until its diagnosis has been the primary for settle_ns
  kWithdrawn,         // its diagnosis was superseded before it settled: never carried out
};
std::string_view ToString(State s);
std::optional<State> ParseState(std::string_view s);
// Nothing more will happen to this key.
bool IsFinal(State s);
// Waiting for something to pass (the breaker's window, the cool-down, the fleet's verdict,
// the diagnosis to settle): looked at again at every call.
bool IsHeld(State s);

struct LedgerEntry {
  int64_t row_id = 0;
  ActionRecord record;
  State state = State::kDecided;
  std::string key;
  std::string incident;
  std::string fault;
  std::optional<actions::ActionClass> action_class;
  int attempt = 0;
  int64_t next_retry_ns = 0;
};

class Ledger {
 public:
  // Reads every action row of `node` (the store's retention bounds them).
  Status Load(Store& store, const std::string& node);
  // Appends `record` and remembers it.
  Result<int64_t> Append(Store& store, const ActionRecord& record);

  const LedgerEntry* Latest(const std::string& key) const;
  bool Resolved(const std::string& incident, int64_t diagnosis_id) const;
  // The last time a `c` action of this node was done for real for an incident not resolved
  // since; 0 when none.
  // `related_to` (a FaultKey, "" = any): only decisions about the same fault class or the
  // same part.
  int64_t LastDone(actions::ActionClass c, std::string_view related_to = {}) const;
  // A decision of class `c` for this fault (FaultKey) is done, in flight, held or failing
  // (dry runs too when `include_dry_run`), and not resolved.
  bool OpenIncident(actions::ActionClass c, const std::string& fault, bool include_dry_run) const;
  // Latest entries not finished: decided, failed, held by the breaker or the cool-down
  // (crash recovery, retries, holds looked at again).
  std::vector<const LedgerEntry*> Pending() const;
  // Latest entries of one diagnosis id.
  std::vector<const LedgerEntry*> ForDiagnosis(int64_t diagnosis_id) const;
  size_t size() const { return latest_.size(); }

 private:
  void Remember(int64_t row_id, const ActionRecord& record);
  std::map<std::string, LedgerEntry> latest_;  // by key
  std::set<std::string> resolved_incidents_;
  std::set<int64_t> resolved_diagnoses_;
};

}  // namespace faultline::policy
