// The fleet's tickets (docs/fleet.md "Acting on fleet diagnoses"): which shared causes have
// had their one webhook, kept in the KV bucket so that a `faultline fleet` killed right
// after posting does not post again when it restarts, and which ticket a fleet diagnosis
// belongs to, so that a cause that grows (a rack's slowdown later pinned on its PDU) stays
// one ticket under one delivery key instead of becoming a second one.
//
// A ticket is named by the fleet diagnosis that opened it (its id is the webhook's delivery
// key, "fleet|<ticket id>"); it remembers the components, nodes and linked per-node
// diagnoses of every fleet diagnosis that joined it and the latest data time one reached.
// A fleet diagnosis joins an open ticket (one whose last time is at most `reopen_after_ns`
// before the diagnosis's first) when it is the same diagnosis (id), names the same
// component, shares a linked per-node diagnosis, or, when either of them is a `rack` cause,
// covers mostly the same nodes (at least half of the smaller group: a rack's cause is
// whatever its nodes share, so the PDU found later under those nodes is the same fault,
// while a switch that merely has one of them is not). Otherwise it opens a new ticket. Stragglers never make tickets
// (they are their node's own).
//
// Durability: each ticket is one KV key, "ticket.<scope>.<hash of its id>", written when a
// diagnosis joins it (before anything is posted) and again once its post succeeded
// (MarkPosted). A crash between the post and MarkPosted posts again after a restart, under
// the same delivery key (the receiver drops it): at least once, never under a second key.
// Without a bucket (null) the ledger lives in memory only.
//
// Not thread-safe: the fleet loop's thread uses it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/status.h"
#include "fleet/nats/client.h"
#include "fleet/wire.h"

namespace faultline::fleet::nats {

struct Ticket {
  std::string id;                 // the opening fleet diagnosis's id
  std::set<std::string> members;  // ids of the fleet diagnoses that joined it (its own included)
  std::set<std::string> causes;   // "rack", "pdu", ...
  std::set<std::string> components;
  std::set<std::string> nodes;
  std::set<std::string> linked;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  bool posted = false;
};

// What to do about one fleet diagnosis: post `as_ticket` (the diagnosis under its ticket's
// id), or nothing (the ticket was posted already; `note` says which).
struct TicketStep {
  std::optional<FleetDiagnosis> as_ticket;
  std::string ticket_id;
  std::string note;  // "" when the diagnosis opened its own ticket
};

class TicketLedger {
 public:
  static constexpr int64_t kDefaultReopenAfterNs = int64_t{1800} * 1'000'000'000;
  static constexpr size_t kMaxTickets = 10'000;  // oldest forgotten past this

  // `kv` (may be null) must outlive the ledger; `scope` names whose tickets these are (the
  // durable: every process of it shares them).
  TicketLedger(KeyValue* kv, std::string scope, int64_t reopen_after_ns = kDefaultReopenAfterNs);

  // Reads this scope's tickets from the bucket (after a restart). Unreadable ones are
  // skipped and counted in damaged().
  Status Load();
  // Joins `d` to its ticket (opening one when none fits) and saves that ticket. A
  // straggler gets an empty step with no ticket.
  Result<TicketStep> OnDiagnosis(const FleetDiagnosis& d);
  // The post under this ticket id (or delivery key "fleet|<id>") succeeded.
  Status MarkPosted(const std::string& ticket_id_or_key);

  const std::map<std::string, Ticket>& tickets() const { return tickets_; }
  size_t damaged() const { return damaged_; }
  std::string KeyFor(const std::string& ticket_id) const;

 private:
  Ticket* Find(const FleetDiagnosis& d);
  Status Save(const Ticket& t);
  void Forget();

  KeyValue* kv_;
  std::string scope_;
  int64_t reopen_after_ns_;
  std::map<std::string, Ticket> tickets_;  // by id
  size_t damaged_ = 0;
};

}  // namespace faultline::fleet::nats
