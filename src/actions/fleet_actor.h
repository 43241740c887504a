// The one action a shared fleet cause gets (docs/fleet.md "Acting on fleet diagnoses"): the
// fleet analyzer (`faultline fleet --webhook-url ...`) tells the on-call / ticketing webhook
// once about a PDU, feed, cooling loop, cable, switch, driver or rack that several nodes
// share, while each node's policy stands down for the paperwork this replaces
// (policy/fleet_verdicts.h). Stragglers are not acted on here: their diagnosis is the node's
// own and its agent acts on it.
//
// Dry run by default (what would be posted is returned, nothing is sent). Idempotent: one
// decision per fleet diagnosis id, keyed "fleet|<id>" and sent as X-Faultline-Delivery, so
// a fleet diagnosis reported again (changed, or after a restart before the analyzer's
// snapshot) is not posted twice by this process and is recognisable to the receiver.
// Not thread-safe: the fleet loop's thread calls it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "actions/webhook.h"
#include "fleet/wire.h"

namespace faultline::actions {

// The webhook decision for a fleet diagnosis: class webhook, rule "fleet_shared_cause", node
// "fleet", target the fleet's component, evidence the linked "<node>#<row id>" diagnoses.
Decision FleetDecision(const fleet::FleetDiagnosis& f, int64_t now_ns);

struct FleetActOutcome {
  std::string key;
  bool dry_run = true;
  Status status;       // Ok = sent (or, dry run, would be)
  std::string detail;  // what was (or would be) posted, or the error
};

class FleetActor {
 public:
  // `webhook` null = dry run (nothing configured to carry it out); `act` false = dry run.
  FleetActor(Actuator* webhook, bool act) : webhook_(webhook), act_(act) {}

  // A new or changed fleet diagnosis; nullopt when it needs nothing from here (a straggler,
  // no action, or already acted on). A failed post is kept and retried by RetryDue.
  std::optional<FleetActOutcome> OnDiagnosis(const fleet::FleetDiagnosis& f, int64_t now_ns);
  // Failed posts whose back-off (30 s, doubling to 15 min) has passed, tried again.
  std::vector<FleetActOutcome> RetryDue(int64_t now_ns);
  size_t acted() const { return done_.size(); }
  size_t pending() const { return failed_.size(); }

 private:
  struct Failed {
    Decision decision;
    std::string what;
    int attempt = 1;
    int64_t next_ns = 0;
  };
  FleetActOutcome Post(const Decision& d, const std::string& what, int attempt, int64_t now_ns);

  Actuator* webhook_;
  bool act_;
  std::set<std::string> done_;            // keys sent (or dry-run reported) by this process
  std::map<std::string, Failed> failed_;  // keys whose post failed, by key (bounded)
};

}  // namespace faultline::actions
