#include "policy/ledger.h"

#include <array>
#include <utility>

#include "store/store.h"

namespace faultline::policy {
namespace {

constexpr std::array<std::pair<State, std::string_view>, 13> kStates = {{
    {State::kDecided, "decided"},
    {State::kDone, "done"},
    {State::kFailed, "failed"},
    {State::kHeldByBreaker, "held_by_breaker"},
    {State::kHeldByCooldown, "held_by_cooldown"},
    {State::kDryRun, "dry_run"},
    {State::kRefused, "refused"},
    {State::kNoActuator, "no_actuator"},
    {State::kResolved, "resolved"},
    {State::kHeldForFleet, "held_for_fleet"},
    {State::kSuperseded, "superseded_by_fleet"},
    {State::kHeldUntilSettled, "held_until_settled"},
    {State::kWithdrawn, "withdrawn"},
}};

std::string Attr(const ActionRecord& r, const char* name) {
  auto it = r.attrs.find(name);
  return it == r.attrs.end() ? std::string() : it->second;
}

int64_t AttrInt(const ActionRecord& r, const char* name) {
  const std::string v = Attr(r, name);
  try {
    return v.empty() ? 0 : std::stoll(v);
  } catch (...) {
    return 0;  // a damaged attr reads as "none", never as a crash
  }
}

}  // namespace

std::string_view ToString(State s) {
  for (const auto& [v, name] : kStates) {
    if (v == s) return name;
  }
  return "decided";
}

std::optional<State> ParseState(std::string_view s) {
  for (const auto& [v, name] : kStates) {
    if (name == s) return v;
  }
  return std::nullopt;
}

bool IsHeld(State s) {
  return s == State::kHeldByBreaker || s == State::kHeldByCooldown || s == State::kHeldForFleet ||
         s == State::kHeldUntilSettled;
}

bool IsFinal(State s) {
  return s == State::kDone || s == State::kDryRun || s == State::kRefused || s == State::kResolved ||
         s == State::kSuperseded || s == State::kWithdrawn;
}

void Ledger::Remember(int64_t row_id, const ActionRecord& r) {
  auto state = ParseState(Attr(r, "state"));
  if (!state) return;  // not a policy row (or a newer binary's state): ignored
  if (*state == State::kResolved) {
    if (auto inc = Attr(r, "incident"); !inc.empty()) resolved_incidents_.insert(inc);
    if (r.diagnosis_id) resolved_diagnoses_.insert(*r.diagnosis_id);
    return;
  }
  const std::string key = Attr(r, "key");
  if (key.empty()) return;
  LedgerEntry e;
  e.row_id = row_id;
  e.record = r;
  e.state = *state;
  e.key = key;
  e.incident = Attr(r, "incident");
  e.fault = Attr(r, "fault");
  e.action_class = actions::ParseActionClass(Attr(r, "class"));
  e.attempt = static_cast<int>(AttrInt(r, "attempt"));
  e.next_retry_ns = AttrInt(r, "next_retry_ns");
  auto it = latest_.find(key);
  if (it == latest_.end() || it->second.row_id < row_id) latest_[key] = std::move(e);
}

Status Ledger::Load(Store& store, const std::string& node) {
  RecordQuery q;
  q.node = node;
  q.limit = 0;
  auto rows = store.ListActions(q);
  if (!rows.ok()) return rows.status();
  for (const auto& row : rows->rows) Remember(row.id, row.value);
  return Status::Ok();
}

Result<int64_t> Ledger::Append(Store& store, const ActionRecord& record) {
  auto id = store.PutAction(record);
  if (!id.ok()) return id.status();
  Remember(*id, record);
  return *id;
}

const LedgerEntry* Ledger::Latest(const std::string& key) const {
  auto it = latest_.find(key);
  return it == latest_.end() ? nullptr : &it->second;
}

bool Ledger::Resolved(const std::string& incident, int64_t diagnosis_id) const {
  return resolved_incidents_.count(incident) > 0 || resolved_diagnoses_.count(diagnosis_id) > 0;
}

namespace {
// Faults are "<fault class>|<component id>"; related when either half is the same (one part
// may be named two ways in one run, gpu/1 and pcie/0000:04:00.0; one class may be refined).
bool RelatedFault(std::string_view a, std::string_view b) {
  const size_t ia = a.find('|');
  const size_t ib = b.find('|');
  if (ia == std::string_view::npos || ib == std::string_view::npos) return a == b;
  return a.substr(0, ia) == b.substr(0, ib) || a.substr(ia + 1) == b.substr(ib + 1);
}
}  // namespace

int64_t Ledger::LastDone(actions::ActionClass c, std::string_view related_to) const {
  int64_t last = 0;
  for (const auto& [key, e] : latest_) {
    if (e.action_class != c || e.state != State::kDone || e.record.dry_run) continue;
    if (!related_to.empty() && !RelatedFault(e.fault, related_to)) continue;
    // An operator's resolve ends the cool-down: a new fault after a repair is news.
    if (Resolved(e.incident, e.record.diagnosis_id.value_or(0))) continue;
    last = std::max(last, e.record.time_ns);
  }
  return last;
}

bool Ledger::OpenIncident(actions::ActionClass c, const std::string& fault, bool include_dry_run) const {
  for (const auto& [key, e] : latest_) {
    if (e.action_class != c || e.fault != fault) continue;
    if (e.state == State::kRefused || e.state == State::kResolved || e.state == State::kWithdrawn) continue;
    if (e.state == State::kDryRun && !include_dry_run) continue;
    if (Resolved(e.incident, e.record.diagnosis_id.value_or(0))) continue;
    return true;
  }
  return false;
}

std::vector<const LedgerEntry*> Ledger::Pending() const {
  std::vector<const LedgerEntry*> out;
  for (const auto& [key, e] : latest_) {
    if (e.state == State::kDecided || e.state == State::kFailed || IsHeld(e.state)) out.push_back(&e);
  }
  return out;
}

std::vector<const LedgerEntry*> Ledger::ForDiagnosis(int64_t diagnosis_id) const {
  std::vector<const LedgerEntry*> out;
  for (const auto& [key, e] : latest_) {
    if (e.record.diagnosis_id == diagnosis_id) out.push_back(&e);
  }
  return out;
}

}  // namespace faultline::policy
