// What the fleet analyzer said about this node's diagnoses (docs/remediation.md "Shared
// causes"). A PDU sagging under twelve nodes is one fault with one facility ticket, not
// twelve; a bad cable is one cable, not one ticket per end. The fleet analyzer links the
// per-node diagnoses it explains into one fleet diagnosis (docs/fleet.md) and acts on that
// one; the node's policy then stands down for what the fleet's action replaces.
//
// Only the per-node paperwork is replaced (rma_bundle, facility_ticket, webhook): a cordon,
// drain, reset or reboot is the node's own safety and never waits for the fleet (the
// breaker bounds those fleet-wide).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "actions/actuator.h"
#include "core/status.h"
#include "core/types.h"

namespace faultline::policy {

// A shared fleet cause that links one of this node's diagnoses.
struct FleetLink {
  std::string fleet_id;   // the fleet diagnosis' stable id ("pdu/r12-a/<first_ns>")
  std::string cause;      // "pdu", "feed", "cooling_loop", "cable", "switch", "driver", "rack"
  std::string component;  // what the fleet names ("pdu/r12-a")
  int64_t recorded_ns = 0;
};

class FleetVerdicts {
 public:
  virtual ~FleetVerdicts() = default;
  // True when the fleet may yet link this diagnosis to a shared cause (its class is one the
  // fleet correlates across nodes): worth waiting a little for before filing paperwork.
  virtual bool MayBeShared(const Diagnosis& diagnosis) const = 0;
  // The shared cause linking this diagnosis (the same fault on the same part), if any.
  virtual Result<std::optional<FleetLink>> LinkFor(const Diagnosis& diagnosis) const = 0;
};

// The classes a fleet diagnosis' one action replaces on the node.
bool FleetReplaces(actions::ActionClass c);

}  // namespace faultline::policy
