#include "fleet/nats/ticket_ledger.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "core/json.h"

namespace faultline::fleet::nats {

namespace {

constexpr std::string_view kKeyPrefix = "ticket.";
constexpr std::string_view kDeliveryPrefix = "fleet|";

std::string Token(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out.empty() ? "_" : out;
}

std::string HashHex(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, h);
  return buf;
}

template <typename C>
bool Shares(const std::set<std::string>& a, const C& b) {
  return std::any_of(b.begin(), b.end(), [&](const std::string& x) { return a.count(x) != 0; });
}

// At least half of the smaller group's nodes are in the other: the same nodes, not one
// node that happens to sit in both.
bool MostlySameNodes(const std::set<std::string>& a, const std::vector<std::string>& b) {
  const size_t common =
      static_cast<size_t>(std::count_if(b.begin(), b.end(), [&](const std::string& x) { return a.count(x) != 0; }));
  return common > 0 && 2 * common >= std::min(a.size(), b.size());
}

Json ToJson(const Ticket& t) {
  return Json{{"id", t.id},        {"members", t.members}, {"causes", t.causes},     {"components", t.components},
              {"nodes", t.nodes},  {"linked", t.linked},   {"first_ns", t.first_ns}, {"last_ns", t.last_ns},
              {"posted", t.posted}};
}

std::optional<Ticket> FromJson(const std::string& text) {
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  try {
    Ticket t;
    t.id = j.at("id").get<std::string>();
    t.members = j.at("members").get<std::set<std::string>>();
    t.causes = j.at("causes").get<std::set<std::string>>();
    t.components = j.at("components").get<std::set<std::string>>();
    t.nodes = j.at("nodes").get<std::set<std::string>>();
    t.linked = j.at("linked").get<std::set<std::string>>();
    t.first_ns = j.at("first_ns").get<int64_t>();
    t.last_ns = j.at("last_ns").get<int64_t>();
    t.posted = j.at("posted").get<bool>();
    if (t.id.empty()) return std::nullopt;
    return t;
  } catch (const Json::exception&) {
    return std::nullopt;
  }
}

void Join(Ticket& t, const FleetDiagnosis& d) {
  t.members.insert(d.id);
  t.causes.insert(d.cause);
  if (!d.component.empty()) t.components.insert(d.component);
  t.nodes.insert(d.nodes.begin(), d.nodes.end());
  t.linked.insert(d.linked.begin(), d.linked.end());
  t.first_ns = t.first_ns == 0 ? d.first_ns : std::min(t.first_ns, d.first_ns);
  t.last_ns = std::max(t.last_ns, d.last_ns);
}

}  // namespace

TicketLedger::TicketLedger(KeyValue* kv, std::string scope, int64_t reopen_after_ns)
    : kv_(kv), scope_(Token(scope)), reopen_after_ns_(reopen_after_ns) {}

std::string TicketLedger::KeyFor(const std::string& ticket_id) const {
  return std::string(kKeyPrefix) + scope_ + "." + HashHex(ticket_id);
}

Status TicketLedger::Load() {
  if (kv_ == nullptr) return Status::Ok();
  auto keys = kv_->Keys();
  if (!keys.ok()) return keys.status();
  const std::string prefix = std::string(kKeyPrefix) + scope_ + ".";
  for (const std::string& key : *keys) {
    if (key.rfind(prefix, 0) != 0) continue;
    auto entry = kv_->Get(key);
    if (!entry.ok()) return entry.status();
    if (!entry->has_value()) continue;  // deleted meanwhile
    std::optional<Ticket> t = FromJson((*entry)->value);
    if (!t || KeyFor(t->id) != key) {
      ++damaged_;
      continue;
    }
    tickets_[t->id] = std::move(*t);
  }
  Forget();
  return Status::Ok();
}

Ticket* TicketLedger::Find(const FleetDiagnosis& d) {
  Ticket* best = nullptr;
  for (auto& [id, t] : tickets_) {
    if (t.members.count(d.id) != 0) return &t;                // its own ticket, whenever it opened
    if (t.last_ns + reopen_after_ns_ < d.first_ns) continue;  // closed: that fault was over
    const bool rack = d.cause == "rack" || t.causes.count("rack") != 0;
    const bool same = t.components.count(d.component) != 0 || Shares(t.linked, d.linked) ||
                      (rack && MostlySameNodes(t.nodes, d.nodes));
    // Of several, the one most recently active.
    if (same && (best == nullptr || t.last_ns > best->last_ns)) best = &t;
  }
  return best;
}

Result<TicketStep> TicketLedger::OnDiagnosis(const FleetDiagnosis& d) {
  TicketStep step;
  if (d.cause == "straggler" || d.cause.empty() || d.id.empty()) return step;
  Forget();  // before: a pointer into tickets_ is held below
  Ticket* t = Find(d);
  if (t == nullptr) {
    Ticket fresh;
    fresh.id = d.id;
    t = &tickets_.emplace(d.id, std::move(fresh)).first->second;
  }
  Join(*t, d);
  step.ticket_id = t->id;
  if (t->id != d.id) step.note = d.cause + " " + d.component + " (" + d.id + ") joins ticket " + t->id;
  if (Status s = Save(*t); !s.ok()) return s;
  if (t->posted) {
    step.note = (step.note.empty() ? "ticket " + t->id : step.note) + ": already posted";
    return step;
  }
  FleetDiagnosis as_ticket = d;
  as_ticket.id = t->id;  // the delivery key stays the ticket's
  step.as_ticket = std::move(as_ticket);
  return step;
}

Status TicketLedger::MarkPosted(const std::string& ticket_id_or_key) {
  std::string id = ticket_id_or_key;
  if (id.rfind(kDeliveryPrefix, 0) == 0) id.erase(0, kDeliveryPrefix.size());
  auto it = tickets_.find(id);
  if (it == tickets_.end()) return Status(StatusCode::kNotFound, "no ticket " + id);
  it->second.posted = true;
  return Save(it->second);
}

Status TicketLedger::Save(const Ticket& t) {
  if (kv_ == nullptr) return Status::Ok();
  auto put = kv_->Put(KeyFor(t.id), ToJson(t).dump());
  return put.ok() ? Status::Ok() : put.status();
}

void TicketLedger::Forget() {
  if (tickets_.size() <= kMaxTickets) return;
  std::vector<std::pair<int64_t, std::string>> by_age;
  for (const auto& [id, t] : tickets_) by_age.emplace_back(t.last_ns, id);
  std::sort(by_age.begin(), by_age.end());
  for (size_t i = 0; i + kMaxTickets < by_age.size(); ++i) {
    if (kv_ != nullptr) (void)kv_->Delete(KeyFor(by_age[i].second));
    tickets_.erase(by_age[i].second);
  }
}

}  // namespace faultline::fleet::nats
