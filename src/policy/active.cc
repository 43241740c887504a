#include "policy/active.h"

#include <set>

#include "policy/identity.h"
#include "policy/ledger.h"
#include "store/store.h"

namespace faultline::policy {

Result<std::vector<Row<Diagnosis>>> ActiveDiagnoses(Store& store, const std::string& node) {
  Ledger ledger;
  if (Status s = ledger.Load(store, node); !s.ok()) return s;
  std::set<int64_t> wanted;
  auto latest = store.LatestDiagnosis(node);
  if (!latest.ok()) return latest.status();
  if (latest->has_value() && (*latest)->value.fault_class != FaultClass::kNone) wanted.insert((*latest)->id);
  // Every diagnosis with a real (not dry-run) drain or cordon: the node stays out for it.
  for (const LedgerEntry* e : ledger.Pending()) {
    if (e->record.diagnosis_id) wanted.insert(*e->record.diagnosis_id);
  }
  RecordQuery q;
  q.node = node;
  q.limit = 0;
  auto actions = store.ListActions(q);
  if (!actions.ok()) return actions.status();
  for (const auto& row : actions->rows) {
    const auto& a = row.value.attrs;
    auto state = a.find("state");
    auto cls = a.find("class");
    if (state == a.end() || cls == a.end() || row.value.dry_run || !row.value.diagnosis_id) continue;
    if (state->second == "done" && (cls->second == "drain" || cls->second == "cordon")) {
      wanted.insert(*row.value.diagnosis_id);
    }
  }
  std::vector<Row<Diagnosis>> out;
  if (wanted.empty()) return out;
  auto rows = store.ListDiagnoses(q);
  if (!rows.ok()) return rows.status();
  for (auto& row : rows->rows) {
    if (!wanted.count(row.id)) continue;
    if (ledger.Resolved(IncidentKey(row.value), row.id)) continue;
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace faultline::policy
