#include "policy/resolve.h"

#include "policy/identity.h"
#include "policy/ledger.h"
#include "store/store.h"

namespace faultline::policy {
namespace {

Result<std::optional<Row<Diagnosis>>> FindDiagnosis(Store& store, int64_t id) {
  RecordQuery q;
  q.limit = 0;
  auto rows = store.ListDiagnoses(q);
  if (!rows.ok()) return rows.status();
  for (auto& row : rows->rows) {
    if (row.id == id) return std::optional<Row<Diagnosis>>(std::move(row));
  }
  return std::optional<Row<Diagnosis>>();
}

bool IsOurDrain(const LedgerEntry& e) {
  return (e.action_class == actions::ActionClass::kDrain || e.action_class == actions::ActionClass::kCordon) &&
         (e.state == State::kDone || e.state == State::kDecided) && !e.record.dry_run;
}

// The decision the drain was made for, as the platform saw it (its key is what Kubernetes
// recorded on the node; its node and diagnosis id the tag Slurm's reason ends with).
actions::Decision DecisionFor(const LedgerEntry& e, const Row<Diagnosis>& diagnosis, const std::string& target) {
  actions::Decision d;
  d.key = e.key;
  d.node = diagnosis.node;
  d.target_node = target;
  d.action_class = *e.action_class;
  d.diagnosis_id = diagnosis.id;
  d.diagnosis = diagnosis.value;
  d.time_ns = e.record.time_ns;
  return d;
}

}  // namespace

Result<ResolveResult> ResolveIncident(Store& store, int64_t diagnosis_id, const std::string& fixed_by,
                                      actions::Reverter* platform, const std::string& target_node, int64_t now_ns) {
  if (fixed_by.empty()) return Status(StatusCode::kInvalidArgument, "--fixed-by must say what fixed it");
  auto found = FindDiagnosis(store, diagnosis_id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    return Status(StatusCode::kNotFound, "no diagnosis " + std::to_string(diagnosis_id) + " in the store");
  }
  ResolveResult result;
  result.diagnosis = std::move(**found);
  const std::string& node = result.diagnosis.node;
  const std::string incident = IncidentKey(result.diagnosis.value);
  Ledger ledger;
  if (Status s = ledger.Load(store, node); !s.ok()) return s;
  if (ledger.Resolved(incident, diagnosis_id)) {
    result.already_resolved = true;
    result.notes.push_back("already resolved");
    return result;
  }
  for (const LedgerEntry* e : ledger.ForDiagnosis(diagnosis_id)) {
    if (!IsOurDrain(*e)) continue;
    auto it = e->record.attrs.find("target_node");
    const std::string target = !target_node.empty() ? target_node : it != e->record.attrs.end() ? it->second : node;
    result.target_node = target;
    if (platform == nullptr) {
      result.notes.push_back("no platform to act on: " + target + " not returned to service");
      continue;
    }
    Status resumed = platform->Revert(DecisionFor(*e, result.diagnosis, target));
    if (resumed.code() == StatusCode::kPermissionDenied) {
      result.notes.push_back(resumed.message());
      continue;
    }
    if (!resumed.ok()) return Status(resumed.code(), "resume " + target + ": " + resumed.message());
    result.resumed = true;
    result.notes.push_back("resumed " + target);
    break;
  }
  if (result.target_node.empty()) result.notes.push_back("faultline did not drain a node for this diagnosis");
  ActionRecord r;
  r.time_ns = now_ns;
  r.node = node;
  r.action = Action::kNone;
  r.diagnosis_id = diagnosis_id;
  r.dry_run = false;
  r.outcome = "resolved: fixed by " + fixed_by;
  r.reason = fixed_by;
  r.attrs["state"] = std::string(ToString(State::kResolved));
  r.attrs["incident"] = incident;
  r.attrs["fixed_by"] = fixed_by;
  if (result.resumed) r.attrs["resumed"] = result.target_node;
  auto id = store.PutAction(r);
  if (!id.ok()) return id.status();
  return result;
}

}  // namespace faultline::policy
