// The remediation policy (docs/remediation.md): diagnoses in, decisions out, each stored
// (ledger.h) with its diagnosis id, evidence ids, the rule that allowed or refused it, the
// dry-run flag and the outcome, and carried out through the actuators when enabled.
//
// For each diagnosis the rules (rules.h) propose action classes; each proposal then passes,
// in order: already resolved by an operator -> nothing; its key (identity.h) already final
// -> nothing (idempotent); a failed earlier try not yet due -> nothing; refused by a safety
// rule -> stored "refused"; paperwork a shared fleet cause replaces -> "superseded_by_fleet"
// (and, when enabled, held up to fleet_hold for that verdict: "held_for_fleet"); the same fault on the same part
// already acted on and not resolved -> nothing; class not enabled -> stored "dry_run"; no actuator -> "no_actuator";
// within the class's cool-down on this node -> "held_by_cooldown"; disruptive and the fleet
// breaker tripped -> "held_by_breaker" with the reason (fleet unreadable -> "failed", retried;
// no fleet view at all -> held: the breaker fails closed); else
// "decided" is stored, the platform is observed (someone else's drain is left alone), the
// actuator applies, and "done" or "failed" (error, attempt, next retry) is stored; a
// disruptive action, once in effect, is confirmed against the fleet a second time (ordered by
// drain time, then node name, so nodes acting at the same instant keep at most the limit) and
// undone -> "held_by_breaker" when over it, or -> "failed" when it cannot be confirmed. Held and
// failed decisions are looked at again at every call; a new row is written only when the
// state changes.
//
// Crash safety: "decided" is committed before the actuator runs. Start() re-checks every
// decision whose latest row is "decided" against the platform (Actuator::Observe): in
// effect -> "done" without acting again; not in effect -> applied once; an actuator that
// cannot tell (webhook) -> re-sent with the same delivery id.
//
// Not thread-safe: the agent calls it from its evaluation thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "policy/config.h"
#include "policy/fleet_verdicts.h"
#include "policy/ledger.h"
#include "policy/rules.h"
#include "store/records.h"

namespace faultline {
class Clock;
class Store;
}  // namespace faultline

namespace faultline::policy {

struct Outcome {
  actions::Decision decision;
  State state = State::kDecided;
  std::string detail;  // error, hold reason, refusal, what a dry run would do
  bool dry_run = true;
  bool changed = false;  // a row was stored by this call
};

class Engine {
 public:
  // `node`: the store's node name. `actuators` and `fleet` are borrowed and may be empty /
  // null (then enabled classes are "no_actuator" and disruptive ones are held: without a
  // fleet view the breaker cannot be checked, so it fails closed).
  Engine(PolicyConfig config, Store& store, std::string node, std::vector<actions::Actuator*> actuators,
         actions::FleetView* fleet);

  // Consider only these classes (empty = all). `faultline check --slurm` limits itself to
  // cordon/drain so its runs leave the other classes to the agent.
  void LimitTo(std::set<actions::ActionClass> classes) { only_ = std::move(classes); }

  // The fleet analyzer's verdicts (borrowed, may be null = no fleet): paperwork for a fault
  // a shared fleet cause links is stored "superseded_by_fleet" instead of done, and waits up
  // to config.fleet_hold for that verdict while the fault may be shared ("held_for_fleet").
  void UseFleetVerdicts(const FleetVerdicts* verdicts) { verdicts_ = verdicts; }

  // Loads the ledger and finishes every decision a crash left "decided".
  Result<std::vector<Outcome>> Start(int64_t now_ns);

  // The agent calls this after storing diagnoses (row ids from Store::PutDiagnosis). Also
  // retries failed decisions that are due, whether or not their diagnosis is still current.
  Result<std::vector<Outcome>> OnDiagnoses(const std::vector<Row<Diagnosis>>& diagnoses, int64_t now_ns);

  const Ledger& ledger() const { return ledger_; }
  const std::string& target_node() const { return target_node_; }

  // Test hook: runs after "decided" is committed and before the actuator (crash tests).
  std::function<void(const actions::Decision&)> after_decided;

  // The breaker's confirmation after a drain waits for the platform's clock to pass the
  // drain's second (docs/remediation.md "Breaker"): `clock` tells the time (null = the system
  // clock, borrowed), `sleep` waits that many ns (null = a real sleep). Tests pass a FakeClock
  // and a sleep that advances it, so nothing sleeps.
  void UseClock(const Clock* clock, std::function<void(int64_t ns)> sleep) {
    clock_ = clock;
    sleep_ = std::move(sleep);
  }

 private:
  std::optional<Outcome> Consider(const Row<Diagnosis>& row, const Proposal& p, int64_t now_ns, Status& error);
  Result<std::optional<int64_t>> PrimarySince(const Row<Diagnosis>& row);
  std::optional<Outcome> Settle(const Row<Diagnosis>& row, const actions::Decision& d, const LedgerEntry* previous,
                                int64_t now_ns, Status& error);
  Outcome Carry(actions::Decision d, const LedgerEntry* previous, int64_t now_ns, Status& error);
  std::optional<std::string> BreakerHold(int64_t now_ns);
  // Superseded or held for the fleet's verdict (fleet_verdicts.h); nullopt = go on.
  std::optional<Outcome> FleetStandDown(const actions::Decision& d, const LedgerEntry* previous, bool may_wait,
                                        int64_t now_ns, Status& error);
  Outcome Record(const actions::Decision& d, State s, bool dry_run, std::string detail, const LedgerEntry* previous,
                 int64_t now_ns, Status& error, int attempt = 0, int64_t next_retry_ns = 0);
  actions::Actuator* ActuatorFor(actions::ActionClass c) const;
  actions::Decision MakeDecision(const Row<Diagnosis>& row, actions::ActionClass c, const std::string& rule,
                                 int64_t now_ns);
  std::vector<std::string> EvidenceIds(const Diagnosis& d);
  Result<std::optional<Row<Diagnosis>>> LoadDiagnosis(int64_t id);

  PolicyConfig config_;
  Store& store_;
  std::string node_;
  std::string target_node_;
  std::vector<actions::Actuator*> actuators_;
  actions::FleetView* fleet_;
  const FleetVerdicts* verdicts_ = nullptr;
  std::set<actions::ActionClass> only_;
  Ledger ledger_;
  bool loaded_ = false;
  std::string fleet_error_;  // set by BreakerHold when the fleet could not be read

  // The breaker's second look, after a disruptive action took effect: nullopt = the drain
  // stays (within the limit, or nothing of ours to confirm); else the stored outcome (undone
  // and held, or failed and retried). See engine.cc.
  std::optional<Outcome> ConfirmBreaker(const actions::Decision& d, actions::Actuator& actuator, int attempt,
                                        int64_t next_retry_ns, int64_t now_ns, Status& error);
  // Undoes this decision's own drain after a failed confirmation and stores `why`.
  Outcome UndoOwnDrain(const actions::Decision& d, actions::Reverter& reverter, State if_undone, std::string why,
                       int attempt, int64_t next_retry_ns, int64_t now_ns, Status& error);
  // This node's name in the fleet view (kubernetes_node on Kubernetes, else the target node).
  std::string FleetName() const;
  int64_t WallNs() const;
  void SleepNs(int64_t ns);
  const Clock* clock_ = nullptr;
  std::function<void(int64_t)> sleep_;
};

// Human-readable platform reason for a decision (Slurm drain reason for cordon/drain).
std::string PlatformReason(const actions::Decision& d);

}  // namespace faultline::policy
