#include "assistant/kb/incidents.h"

#include <map>

#include "store/store.h"

namespace faultline::assistant::kb {
namespace {

// The ledger's name for a closed incident (policy/ledger.h State::kResolved, written by
// policy/resolve.cc). Spelled here rather than linking the policy module for one string;
// kb_incidents_test resolves through policy::ResolveIncident, so a rename fails that test.
constexpr const char* kResolvedState = "resolved";

std::string Attr(const ActionRecord& a, const char* key) {
  auto it = a.attrs.find(key);
  return it == a.attrs.end() ? std::string() : it->second;
}

}  // namespace

Result<std::vector<Incident>> ResolvedIncidents(Store& store) {
  RecordQuery all;
  all.limit = 0;
  auto actions = store.ListActions(all);
  if (!actions.ok()) return actions.status();
  std::map<int64_t, const ActionRecord*> fixes;  // diagnosis id -> newest resolution
  for (const auto& row : actions->rows) {
    const ActionRecord& a = row.value;
    if (!a.diagnosis_id || Attr(a, "state") != kResolvedState || Attr(a, "fixed_by").empty()) continue;
    auto [it, inserted] = fixes.emplace(*a.diagnosis_id, &a);
    if (!inserted && a.time_ns >= it->second->time_ns) it->second = &a;
  }
  std::vector<Incident> incidents;
  if (fixes.empty()) return incidents;
  auto diagnoses = store.ListDiagnoses(all);
  if (!diagnoses.ok()) return diagnoses.status();
  for (const auto& row : diagnoses->rows) {
    auto fix = fixes.find(row.id);
    if (fix == fixes.end()) continue;
    const Diagnosis& d = row.value;
    Incident inc;
    inc.diagnosis_id = row.id;
    inc.node = row.node;
    inc.fault_class = d.fault_class;
    inc.component = d.component.Id();
    inc.summary = d.summary;
    inc.fixed_by = Attr(*fix->second, "fixed_by");
    inc.first_ns = d.first_ns;
    inc.resolved_ns = fix->second->time_ns;
    incidents.push_back(std::move(inc));
  }
  return incidents;
}

Result<size_t> IndexResolvedIncidents(Store& store, KnowledgeBase& kb) {
  auto incidents = ResolvedIncidents(store);
  if (!incidents.ok()) return incidents.status();
  for (const Incident& inc : *incidents) {
    if (Status s = kb.AddIncident(inc); !s.ok()) return s;
  }
  return incidents->size();
}

}  // namespace faultline::assistant::kb
