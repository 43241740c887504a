// The agent's side of the fleet's verdicts (docs/remediation.md "Shared causes"): reads the
// fleet diagnoses `faultline fleet` publishes for the agent's site and remembers, in the
// store, which of this node's diagnoses a shared cause links (a PDU, a feed, a loop, a cable,
// a switch, a driver, a rack). The policy reads them through policy::FleetVerdicts and stands
// down for the paperwork the fleet's one action replaces.
//
// Reading: a durable pull consumer per node ("faultline-agent-<node>", filtered to
// faultline.<site>.fleet.fleet.fleet), so a restarted agent resumes where it stopped and a
// new one reads the fleet diagnoses still in the stream. A message is acked once its links
// are stored. Stragglers are not shared causes (their diagnosis is the node's own) and are
// skipped. Until `faultline fleet` has created the stream the consumer cannot bind: Poll
// says kNotFound and is tried again next round.
//
// Storing: one store cursor per linked fault (node <node>, source "fleet_link", key the
// diagnosis' policy FaultKey), a small JSON value naming the fleet diagnosis. A link counts
// for `link_ttl` after it was last recorded, so a fault that recurs on that part long after
// the shared cause ended is the node's own again.
//
// Thread-safety: Poll from one thread (the fleet publisher's); MayBeShared / LinkFor from
// any thread (they only read the store, which serialises itself).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "fleet/nats/client.h"
#include "fleet/wire.h"
#include "policy/fleet_verdicts.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

class Logger;

struct FleetLinksOptions {
  std::string site = "default";
  std::string node;  // the agent's node name (store rows, "<node>#<row>" in fleet links)
  std::string stream = "FAULTLINE";
  int fetch_batch = 64;
  int64_t link_ttl_ns = int64_t{24} * 3600 * 1'000'000'000;
};

class FleetLinks : public policy::FleetVerdicts {
 public:
  // `store`, `clock` and `logger` (may be null) must outlive it.
  FleetLinks(Store& store, FleetLinksOptions options, const Clock& clock, Logger* logger);
  ~FleetLinks() override;

  // Reads the fleet diagnoses waiting for this node (up to a few batches, waiting at most
  // `timeout_ns` for the first) and stores the links to this node's diagnoses. Returns the
  // links stored. Drops the consumer on a connection error so the next call binds anew.
  Result<size_t> Poll(fleet::nats::Connection& conn, int64_t timeout_ns);
  // Stores the links one fleet diagnosis makes to this node's diagnoses (Poll's step; tests).
  Result<size_t> Record(const fleet::FleetDiagnosis& fleet_diagnosis);

  bool MayBeShared(const Diagnosis& diagnosis) const override;
  Result<std::optional<policy::FleetLink>> LinkFor(const Diagnosis& diagnosis) const override;

  // The durable consumer's name for a node: "faultline-agent-" + the node with every byte
  // a durable may not hold made '_'.
  static std::string DurableFor(const std::string& node);

 private:
  Result<std::optional<Diagnosis>> LoadDiagnosis(int64_t row_id) const;

  Store& store_;
  FleetLinksOptions options_;
  const Clock& clock_;
  Logger* logger_;
  std::unique_ptr<fleet::nats::PullConsumer> consumer_;
};

}  // namespace faultline::daemon
