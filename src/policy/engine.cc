#include "policy/engine.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "actions/slurm.h"
#include "core/clock.h"
#include "core/time.h"
#include "policy/identity.h"
#include "store/store.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;
using actions::Decision;

constexpr size_t kMaxEvidenceIds = 20;

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::string Seconds(int64_t ns) { return std::to_string(ns / 1'000'000'000) + "s"; }

// Slurm stamps a drain's reason time, and Kubernetes our cordoned-at annotation, to the second.
constexpr int64_t kStampResolutionNs = 1'000'000'000;

// The breaker's order over the fleet's drains: unknown time first (the conservative side),
// then drain time, then node name. Every node reads the same times and names from the same
// platform, so every node puts any two drains in the same order.
bool DrainsBefore(const actions::FleetDrain& a, const actions::FleetDrain& b) {
  if ((a.since_ns == 0) != (b.since_ns == 0)) return a.since_ns == 0;
  if (a.since_ns != b.since_ns) return a.since_ns < b.since_ns;
  return a.node < b.node;
}

const actions::FleetDrain* FindDrain(const actions::FleetState& fleet, const std::string& node) {
  for (const actions::FleetDrain& drain : fleet.faultline_drains) {
    if (drain.node == node) return &drain;
  }
  return nullptr;
}

struct BreakerRank {
  int64_t ahead = 0;    // drains within the window ordered before ours
  int64_t counted = 1;  // drains within the window, ours included
};

BreakerRank RankOf(const actions::FleetState& fleet, const actions::FleetDrain& own, int64_t cutoff_ns) {
  BreakerRank r;
  for (const actions::FleetDrain& other : fleet.faultline_drains) {
    if (other.node == own.node) continue;
    if (other.since_ns != 0 && other.since_ns < cutoff_ns) continue;
    ++r.counted;
    // Our own time unknown: nothing says which came first, so every other drain counts.
    if (own.since_ns == 0 || DrainsBefore(other, own)) ++r.ahead;
  }
  return r;
}

// How long to wait before reading the fleet again: until the platform's clock has passed the
// second our drain was stamped in (a drain stamped later in that same second could still sort
// before ours by name; once the second is over, every later drain sorts after ours) plus the
// settle margin, for clock skew between this node and the platform. Never longer than that
// from now: our drain was stamped before Apply returned, so after that long the platform's
// clock has passed the mark whatever the skew. Unknown time: the margin alone, so drains
// already in flight land before the fleet is read again.
int64_t SettleWaitNs(int64_t drain_ns, int64_t settle_ns, int64_t wall_ns) {
  if (drain_ns == 0) return settle_ns;
  const int64_t most = kStampResolutionNs + settle_ns;
  return std::clamp(drain_ns + most - wall_ns, int64_t{0}, most);
}

}  // namespace

std::string PlatformReason(const Decision& d) {
  if (d.action_class == ActionClass::kDrain || d.action_class == ActionClass::kCordon) {
    return actions::SlurmDrainReason(d);
  }
  return std::string(ToString(d.diagnosis.fault_class)) + " " + d.diagnosis.component.Id() + ": " + d.diagnosis.summary;
}

Engine::Engine(PolicyConfig config, Store& store, std::string node, std::vector<actions::Actuator*> actuators,
               actions::FleetView* fleet)
    : config_(std::move(config)),
      store_(store),
      node_(std::move(node)),
      target_node_(config_.slurm_node.empty() ? node_ : config_.slurm_node),
      actuators_(std::move(actuators)),
      fleet_(fleet) {}

actions::Actuator* Engine::ActuatorFor(ActionClass c) const {
  for (actions::Actuator* a : actuators_) {
    if (a != nullptr && a->Handles(c)) return a;
  }
  return nullptr;
}

std::vector<std::string> Engine::EvidenceIds(const Diagnosis& d) {
  RecordQuery q;
  q.node = node_;
  q.since_ns = d.first_ns;
  if (d.last_ns != 0) q.until_ns = d.last_ns;
  q.limit = 0;
  std::vector<std::string> ids;
  auto findings = store_.ListFindings(q);
  if (!findings.ok()) return ids;  // evidence ids are a help, never a reason to fail
  for (const auto& row : findings->rows) {
    if (row.value.component.Id() != d.component.Id() && row.value.fault_class != d.fault_class) continue;
    ids.push_back("finding:" + std::to_string(row.id));
  }
  // The newest ones when there are many (a long fault is re-stored as it grows).
  if (ids.size() > kMaxEvidenceIds) ids.erase(ids.begin(), ids.end() - kMaxEvidenceIds);
  return ids;
}

Decision Engine::MakeDecision(const Row<Diagnosis>& row, ActionClass c, const std::string& rule, int64_t now_ns) {
  Decision d;
  d.key = DecisionKey(node_, c, row.value);
  d.node = node_;
  d.target_node = target_node_;
  d.action_class = c;
  d.diagnosis_id = row.id;
  d.diagnosis = row.value;
  d.rule = rule;
  d.time_ns = now_ns;
  return d;
}

Outcome Engine::Record(const Decision& d, State s, bool dry_run, std::string detail, const LedgerEntry* previous,
                       int64_t now_ns, Status& error, int attempt, int64_t next_retry_ns) {
  Outcome out{d, s, detail, dry_run, false};
  const std::string outcome = std::string(ToString(s)) + (detail.empty() ? "" : ": " + detail);
  // Held or failing with the same story: no new row per evaluation.
  if (previous != nullptr && previous->state == s && previous->record.outcome == outcome && s != State::kFailed) {
    return out;
  }
  ActionRecord r;
  r.time_ns = now_ns;
  r.node = node_;
  r.action = actions::CoreAction(d.action_class);
  r.diagnosis_id = d.diagnosis_id;
  r.dry_run = dry_run;
  r.outcome = outcome;
  r.reason = PlatformReason(d);
  r.attrs["key"] = d.key;
  r.attrs["incident"] = IncidentKey(d.diagnosis);
  r.attrs["fault"] = FaultKey(d.diagnosis);
  r.attrs["class"] = std::string(actions::ToString(d.action_class));
  r.attrs["state"] = std::string(ToString(s));
  r.attrs["rule"] = d.rule;
  r.attrs["target_node"] = d.target_node;
  const std::vector<std::string> evidence = d.evidence.empty() ? EvidenceIds(d.diagnosis) : d.evidence;
  if (!evidence.empty()) r.attrs["evidence"] = Join(evidence);
  if (attempt > 0) r.attrs["attempt"] = std::to_string(attempt);
  if (next_retry_ns > 0) r.attrs["next_retry_ns"] = std::to_string(next_retry_ns);
  if (s == State::kFailed) r.attrs["error"] = detail;
  auto id = ledger_.Append(store_, r);
  if (!id.ok()) {
    if (error.ok()) error = id.status();
    return out;
  }
  out.changed = true;
  return out;
}

std::optional<std::string> Engine::BreakerHold(int64_t now_ns) {
  fleet_error_.clear();
  if (fleet_ == nullptr) return std::string("no fleet view to check the breaker against");
  auto fleet = fleet_->Read();
  if (!fleet.ok()) {
    fleet_error_ = "cannot read the fleet for the breaker: " + fleet.status().message();
    return fleet_error_;
  }
  int64_t recent = 0;
  const std::string me = FleetName();
  for (const actions::FleetDrain& drain : fleet->faultline_drains) {
    // This node already out: acting on it again takes no more capacity.
    if (drain.node == me) return std::nullopt;
    // Unknown time counts: the breaker errs on the side of acting less.
    if (drain.since_ns == 0 || drain.since_ns >= now_ns - config_.breaker_window_ns) ++recent;
  }
  const int64_t limit = BreakerLimit(config_, fleet->known_nodes);
  if (recent < limit) return std::nullopt;
  return "breaker: " + std::to_string(recent) + " node(s) taken out by faultline in the last " +
         Seconds(config_.breaker_window_ns) + " (limit " + std::to_string(limit) + " of " +
         std::to_string(fleet->known_nodes) + " known nodes)";
}

std::string Engine::FleetName() const {
  // As policy::BuildActuators names the node to the Kubernetes platform.
  if (config_.platform == "kubernetes" && !config_.kubernetes_node.empty()) return config_.kubernetes_node;
  return target_node_;
}

int64_t Engine::WallNs() const { return clock_ != nullptr ? clock_->NowNs() : SystemClock().NowNs(); }

void Engine::SleepNs(int64_t ns) {
  if (ns <= 0) return;
  if (sleep_) return sleep_(ns);
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

// The second look (docs/remediation.md "Breaker"). The first look (BreakerHold) cannot see
// the nodes deciding at the same instant: each reads the fleet under the limit and drains.
// So after our drain took effect: wait until no drain that sorts before ours can still
// appear, read the fleet again, order every faultline drain in the window (DrainsBefore) and
// keep ours only when fewer than `limit` come before it. Why at most `limit` stay: take the
// last of the drains that stayed, in that order; every one before it was applied before its
// own settle wait ended, so it saw all of them and stepped back if they were `limit` or more.
// Errs toward acting less: a drain being undone that another node still counts only makes
// that node hold too.
std::optional<Outcome> Engine::ConfirmBreaker(const Decision& d, actions::Actuator& actuator, int attempt,
                                              int64_t next_retry_ns, int64_t now_ns, Status& error) {
  auto* reverter = dynamic_cast<actions::Reverter*>(&actuator);
  // Nothing could undo a drain over the limit (a platform double): the first look is all.
  if (reverter == nullptr || fleet_ == nullptr) return std::nullopt;
  const std::string me = FleetName();
  auto fleet = fleet_->Read();
  if (fleet.ok()) {
    if (const actions::FleetDrain* own = FindDrain(*fleet, me)) {
      if (const int64_t wait = SettleWaitNs(own->since_ns, config_.breaker_settle_ns, WallNs()); wait > 0) {
        SleepNs(wait);
        fleet = fleet_->Read();
      }
    }
  }
  // A drain that cannot be confirmed is undone: a fleet too busy to answer sinfo is exactly the
  // storm the breaker is for, and a node put back a little late costs less than a mass drain.
  if (!fleet.ok()) {
    return UndoOwnDrain(d, *reverter, State::kFailed,
                        "cannot read the fleet to confirm the breaker after the drain: " + fleet.status().message(),
                        attempt, next_retry_ns, now_ns, error);
  }
  const actions::FleetDrain* own = FindDrain(*fleet, me);
  if (own == nullptr) {
    // Someone else's drain (Apply left it alone) or already resumed: nothing of ours to count.
    auto seen = actuator.Observe(d);
    if (seen.ok() && *seen != actions::Observed::kInEffect) return std::nullopt;
    return UndoOwnDrain(d, *reverter, State::kFailed,
                        seen.ok() ? "the fleet view does not list this node's drain as " + me +
                                        " (check slurm_node / kubernetes_node): cannot confirm the breaker"
                                  : "cannot confirm the breaker: " + seen.status().message(),
                        attempt, next_retry_ns, now_ns, error);
  }
  const BreakerRank rank = RankOf(*fleet, *own, now_ns - config_.breaker_window_ns);
  const int64_t limit = BreakerLimit(config_, fleet->known_nodes);
  if (rank.ahead < limit) return std::nullopt;
  return UndoOwnDrain(d, *reverter, State::kHeldByBreaker,
                      "breaker: this node's drain ranks " + std::to_string(rank.ahead + 1) + " of " +
                          std::to_string(rank.counted) + " taken out by faultline in the last " +
                          Seconds(config_.breaker_window_ns) + " (by drain time, then node name; limit " +
                          std::to_string(limit) + " of " + std::to_string(fleet->known_nodes) + " known nodes)",
                      attempt, next_retry_ns, now_ns, error);
}

Outcome Engine::UndoOwnDrain(const Decision& d, actions::Reverter& reverter, State if_undone, std::string why,
                             int attempt, int64_t next_retry_ns, int64_t now_ns, Status& error) {
  // Revert touches only the drain made for this decision (Slurm: our reason naming its
  // diagnosis; Kubernetes: our mark with its key), never anyone else's.
  Status undone = reverter.Revert(d);
  if (undone.ok()) {
    if (if_undone == State::kFailed) {
      return Record(d, State::kFailed, false, why + "; drain undone", nullptr, now_ns, error, attempt, next_retry_ns);
    }
    return Record(d, if_undone, false, why + "; drain undone", nullptr, now_ns, error);
  }
  // The drain there is not this decision's (another diagnosis' drain on this node): it adds
  // no capacity loss and is not ours to undo.
  if (undone.code() == StatusCode::kPermissionDenied) {
    return Record(d, State::kDone, false, "already in effect", nullptr, now_ns, error);
  }
  // Still drained over the limit or unconfirmed: the retry confirms again (Carry).
  return Record(d, State::kFailed, false, why + "; undoing the drain failed: " + undone.message(), nullptr, now_ns,
                error, attempt, next_retry_ns);
}

std::optional<Outcome> Engine::FleetStandDown(const Decision& d, const LedgerEntry* previous, bool may_wait,
                                              int64_t now_ns, Status& error) {
  if (verdicts_ == nullptr || !FleetReplaces(d.action_class)) return std::nullopt;
  auto link = verdicts_->LinkFor(d.diagnosis);
  // An unreadable verdict never stops the node's own paperwork: it is filed as without a fleet.
  if (link.ok() && link->has_value()) {
    const FleetLink& l = **link;
    return Record(d, State::kSuperseded, false,
                  "the fleet links this diagnosis to " + l.cause + " " + l.component + " (fleet diagnosis " +
                      l.fleet_id + "), whose one action replaces this node's",
                  previous, now_ns, error);
  }
  if (!may_wait || config_.fleet_hold_ns <= 0 || !verdicts_->MayBeShared(d.diagnosis)) return std::nullopt;
  // Held since the first "held_for_fleet" row (Record writes no new row while the story is
  // the same, so that row's time is when the wait began).
  const int64_t since =
      previous != nullptr && previous->state == State::kHeldForFleet ? previous->record.time_ns : now_ns;
  if (now_ns - since >= config_.fleet_hold_ns) return std::nullopt;
  return Record(d, State::kHeldForFleet, false,
                "waiting up to " + Seconds(config_.fleet_hold_ns) +
                    " for the fleet analyzer: other nodes may share this fault's cause",
                previous, now_ns, error);
}

Outcome Engine::Carry(Decision d, const LedgerEntry* previous, int64_t now_ns, Status& error) {
  if (auto stood_down = FleetStandDown(d, previous, true, now_ns, error)) return *stood_down;
  actions::Actuator* actuator = ActuatorFor(d.action_class);
  if (actuator == nullptr) {
    return Record(d, State::kNoActuator, false,
                  "nothing configured carries out " + std::string(actions::ToString(d.action_class)), previous, now_ns,
                  error);
  }
  // The cool-down guards the node against flapping disruption: any disruptive class done on
  // the node holds the next. A notification, ticket or bundle is held only after one about the
  // same part or the same fault class: a corrected diagnosis naming another class on another
  // part is news, and holding it would leave on-call with the first, wrong story; a
  // refinement of one part's story, or one fault renamed, is not.
  const bool disruptive = actions::IsDisruptive(d.action_class);
  // A failed try may have left a drain the breaker never confirmed (an undo that failed, a
  // timeout after the drain went through): finding it in effect, confirm it.
  const bool confirm_in_effect = disruptive && previous != nullptr && previous->state == State::kFailed;
  if (const int64_t last = ledger_.LastDone(d.action_class, disruptive ? "" : FaultKey(d.diagnosis));
      last != 0 && now_ns - last < config_.cooldown_ns) {
    return Record(d, State::kHeldByCooldown, false,
                  std::string(actions::ToString(d.action_class)) + " done on this node at " + FormatIso8601(last) +
                      " (cool-down " + Seconds(config_.cooldown_ns) + ")",
                  previous, now_ns, error);
  }
  // Before anything is stored: `previous` points into the ledger, which each row updates.
  const int attempt = previous != nullptr && previous->state == State::kFailed ? previous->attempt + 1 : 1;
  int64_t backoff = config_.retry_initial_ns;
  for (int i = 1; i < attempt && backoff < config_.retry_max_ns; ++i) backoff *= 2;
  backoff = std::min(backoff, config_.retry_max_ns);
  if (actions::IsDisruptive(d.action_class)) {
    if (auto hold = BreakerHold(now_ns)) {
      // An unreadable fleet (controller down) is a failure to retry; a tripped breaker a hold.
      if (!fleet_error_.empty()) {
        return Record(d, State::kFailed, false, *hold, previous, now_ns, error, attempt, now_ns + backoff);
      }
      return Record(d, State::kHeldByBreaker, false, *hold, previous, now_ns, error);
    }
  }
  if (d.evidence.empty()) d.evidence = EvidenceIds(d.diagnosis);
  Outcome decided = Record(d, State::kDecided, false, "", nullptr, now_ns, error);
  if (!decided.changed) return decided;  // could not store "decided": do not act unrecorded
  if (after_decided) after_decided(d);
  auto observed = actuator->Observe(d);
  if (observed.ok() && *observed == actions::Observed::kInEffect) {
    if (confirm_in_effect) {
      if (auto undone = ConfirmBreaker(d, *actuator, attempt, now_ns + backoff, now_ns, error)) return *undone;
    }
    return Record(d, State::kDone, false, "already in effect", nullptr, now_ns, error);
  }
  if (observed.ok() && *observed == actions::Observed::kOtherOwner) {
    return Record(d, State::kRefused, false, "already in that state by someone else's action; left as it is", nullptr,
                  now_ns, error);
  }
  Status applied = observed.ok() ? actuator->Apply(d) : observed.status();
  if (applied.ok() && disruptive) {
    if (auto undone = ConfirmBreaker(d, *actuator, attempt, now_ns + backoff, now_ns, error)) return *undone;
  }
  if (applied.ok()) applied = actuator->Finish(d);  // kept by the breaker: now what cannot be undone
  if (applied.ok()) return Record(d, State::kDone, false, "", nullptr, now_ns, error);
  return Record(d, State::kFailed, false, applied.message(), nullptr, now_ns, error, attempt, now_ns + backoff);
}

// How long `row` has been the node's primary diagnosis, from the store (the agent stores
// a diagnosis when it changes, so the latest row has been the primary since it was
// stored); nullopt when another diagnosis has replaced it.
Result<std::optional<int64_t>> Engine::PrimarySince(const Row<Diagnosis>& row) {
  auto latest = store_.LatestDiagnosis(node_);
  if (!latest.ok()) return latest.status();
  // Stored again under a new row id with the same incident: still the same primary.
  if (latest->has_value() && ((*latest)->id == row.id || IncidentKey((*latest)->value) == IncidentKey(row.value))) {
    return std::optional<int64_t>((*latest)->created_ns);
  }
  return std::optional<int64_t>();
}

// Every decision waits until its diagnosis has settled (config.settle_ns); a
// decision whose diagnosis was replaced before it settled is withdrawn. nullopt = go on.
std::optional<Outcome> Engine::Settle(const Row<Diagnosis>& row, const Decision& d, const LedgerEntry* previous,
                                      int64_t now_ns, Status& error) {
  if (config_.settle_ns <= 0 || NeedsNoSettling(row.value)) return std::nullopt;
  auto since = PrimarySince(row);
  if (!since.ok()) {
    if (error.ok()) error = since.status();
    return Outcome{d, State::kHeldUntilSettled, since.status().message(), false, false};
  }
  if (!since->has_value()) {
    const bool was_held = previous != nullptr && previous->state == State::kHeldUntilSettled;
    if (!was_held) return Outcome{d, State::kWithdrawn, "superseded before it settled", false, false};
    return Record(d, State::kWithdrawn, false, "another diagnosis replaced this one before it settled", previous,
                  now_ns, error);
  }
  const int64_t settled_at = **since + config_.settle_ns;
  if (**since != 0 && now_ns < settled_at) {
    // next_retry_ns = when it settles: the caller looks again then, not a retry interval later.
    return Record(d, State::kHeldUntilSettled, false,
                  "waiting until this diagnosis has been the primary for " + Seconds(config_.settle_ns) +
                      " (settled at " + FormatIso8601(settled_at) + ")",
                  previous, now_ns, error, 0, settled_at);
  }
  return std::nullopt;
}

std::optional<Outcome> Engine::Consider(const Row<Diagnosis>& row, const Proposal& p, int64_t now_ns, Status& error) {
  if (!only_.empty() && !only_.count(p.action_class)) return std::nullopt;
  Decision d = MakeDecision(row, p.action_class, p.rule, now_ns);
  if (ledger_.Resolved(IncidentKey(row.value), row.id)) return std::nullopt;
  const LedgerEntry* previous = ledger_.Latest(d.key);
  if (previous != nullptr) {
    // A dry run is final only while its class stays off: once enabled (the agent's config,
    // or `check --slurm --apply`), the incident it described is acted on.
    const bool enabled_since = previous->state == State::kDryRun && config_.Enabled(p.action_class);
    // Report what is already known, act on nothing final.
    if (!enabled_since && (IsFinal(previous->state) || previous->state == State::kDecided ||
                           (previous->state == State::kFailed && now_ns < previous->next_retry_ns))) {
      Outcome known{d, previous->state, previous->record.outcome, previous->record.dry_run, false};
      return known;
    }
  }
  if (p.refused) return Record(d, State::kRefused, false, p.why, previous, now_ns, error);
  if (previous == nullptr &&
      ledger_.OpenIncident(p.action_class, FaultKey(row.value), !config_.Enabled(p.action_class))) {
    return std::nullopt;  // the same fault on the same part, already handled under another key
  }
  if (auto held = Settle(row, d, previous, now_ns, error)) {
    if (!held->changed && held->state == State::kWithdrawn) return std::nullopt;  // never decided anything
    return held;
  }
  if (!config_.Enabled(p.action_class)) {
    // A dry run says what the node would file; a fleet link already known says it would not.
    if (auto stood_down = FleetStandDown(d, previous, false, now_ns, error)) return *stood_down;
    return Record(
        d, State::kDryRun, true,
        "would " + std::string(actions::ToString(p.action_class)) + " " + target_node_ + " (" + PlatformReason(d) + ")",
        previous, now_ns, error);
  }
  return Carry(std::move(d), previous, now_ns, error);
}

Result<std::optional<Row<Diagnosis>>> Engine::LoadDiagnosis(int64_t id) {
  RecordQuery q;
  q.node = node_;
  q.limit = 0;
  auto rows = store_.ListDiagnoses(q);
  if (!rows.ok()) return rows.status();
  for (auto& row : rows->rows) {
    if (row.id == id) return std::optional<Row<Diagnosis>>(std::move(row));
  }
  return std::optional<Row<Diagnosis>>();
}

Result<std::vector<Outcome>> Engine::Start(int64_t now_ns) {
  ledger_ = Ledger();
  if (Status s = ledger_.Load(store_, node_); !s.ok()) return s;
  loaded_ = true;
  std::vector<Outcome> out;
  Status error;
  // Copy: Record() changes the ledger while we walk it.
  std::vector<LedgerEntry> crashed;
  for (const LedgerEntry* e : ledger_.Pending()) {
    if (e->state == State::kDecided) crashed.push_back(*e);
  }
  for (const LedgerEntry& e : crashed) {
    if (!e.action_class || !e.record.diagnosis_id) continue;
    auto row = LoadDiagnosis(*e.record.diagnosis_id);
    if (!row.ok()) return row.status();
    if (!row->has_value()) continue;  // its diagnosis aged out of the store
    Decision d =
        MakeDecision(**row, *e.action_class, e.record.attrs.count("rule") ? e.record.attrs.at("rule") : "", now_ns);
    d.key = e.key;
    d.target_node = e.record.attrs.count("target_node") ? e.record.attrs.at("target_node") : target_node_;
    actions::Actuator* actuator = ActuatorFor(d.action_class);
    if (actuator == nullptr) {
      out.push_back(Record(d, State::kNoActuator, false, "decided before a restart; nothing configured carries it out",
                           &e, now_ns, error));
      continue;
    }
    auto observed = actuator->Observe(d);
    if (observed.ok() && *observed == actions::Observed::kInEffect) {
      out.push_back(Record(d, State::kDone, false, "recovered after a restart: already in effect", &e, now_ns, error));
      continue;
    }
    if (observed.ok() && *observed == actions::Observed::kOtherOwner) {
      out.push_back(Record(d, State::kRefused, false, "recovered after a restart: someone else's action is in effect",
                           &e, now_ns, error));
      continue;
    }
    Status applied = observed.ok() ? actuator->Apply(d) : observed.status();
    if (applied.ok()) applied = actuator->Finish(d);
    if (applied.ok()) {
      out.push_back(Record(d, State::kDone, false, "recovered after a restart: applied", &e, now_ns, error));
    } else {
      out.push_back(
          Record(d, State::kFailed, false, applied.message(), &e, now_ns, error, 1, now_ns + config_.retry_initial_ns));
    }
  }
  if (!error.ok()) return error;
  return out;
}

Result<std::vector<Outcome>> Engine::OnDiagnoses(const std::vector<Row<Diagnosis>>& diagnoses, int64_t now_ns) {
  if (!loaded_) {
    auto started = Start(now_ns);
    if (!started.ok()) return started.status();
  }
  std::vector<Outcome> out;
  Status error;
  std::set<std::string> seen;
  for (const auto& row : diagnoses) {
    for (const Proposal& p : PlanActions(row.value)) {
      auto o = Consider(row, p, now_ns, error);
      if (!o) continue;
      seen.insert(o->decision.key);
      out.push_back(std::move(*o));
    }
  }
  // Failed decisions are retried when due, and held ones looked at again (the breaker's
  // window or the cool-down may have passed), whether or not their diagnosis is current.
  std::vector<LedgerEntry> due;
  for (const LedgerEntry* e : ledger_.Pending()) {
    const bool retry = e->state == State::kFailed && now_ns >= e->next_retry_ns;
    if ((retry || IsHeld(e->state)) && !seen.count(e->key)) due.push_back(*e);
  }
  for (const LedgerEntry& e : due) {
    if (!e.action_class || !e.record.diagnosis_id) continue;
    if (!only_.empty() && !only_.count(*e.action_class)) continue;
    if (ledger_.Resolved(e.incident, *e.record.diagnosis_id)) continue;
    auto row = LoadDiagnosis(*e.record.diagnosis_id);
    if (!row.ok()) return row.status();
    if (!row->has_value()) continue;
    const std::string rule = e.record.attrs.count("rule") ? e.record.attrs.at("rule") : "";
    if (e.state == State::kHeldUntilSettled) {
      // Not yet decided: the whole consideration again (settled, dry run or carried out).
      if (auto o = Consider(**row, Proposal{*e.action_class, rule, false, {}}, now_ns, error)) {
        out.push_back(std::move(*o));
      }
      continue;
    }
    Decision d = MakeDecision(**row, *e.action_class, rule, now_ns);
    d.key = e.key;
    out.push_back(Carry(std::move(d), ledger_.Latest(e.key), now_ns, error));
  }
  if (!error.ok()) return error;
  return out;
}

}  // namespace faultline::policy
