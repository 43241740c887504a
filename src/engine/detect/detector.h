// The detector interface (DESIGN.md "Detectors"): one per layer or concern, stateful,
// a pure function of the observation stream it is fed. Detectors never print and
// never call back into sources; they are driven by the caller (CLI, agent, simulator).
//
// Contract:
//  - Observe() is called with observations in (roughly) time order; a detector ignores
//    kinds it does not handle.
//  - Findings() returns the detector's current conclusions; calling it does not change
//    state. A finding carries its evidence (the observations that support it).
//  - Counters that go backwards (reset/reboot) must be treated as a new baseline, never
//    as a negative rate.
//  - Not thread-safe: one detector instance belongs to one pipeline thread.
//  - Revision() (optional) lets a caller that evaluates on a timer reuse the last
//    Findings() while nothing new reached the detector (the agent's pipeline does).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/inventory.h"
#include "core/types.h"

namespace faultline {

class Detector {
 public:
  virtual ~Detector() = default;
  virtual std::string_view name() const = 0;
  virtual void Observe(const Observation& obs) = 0;
  virtual std::vector<Finding> Findings() const = 0;
  // A count that moves whenever an Observe() may have changed what Findings() returns
  // (it may also move when nothing did: a spurious move only costs a recomputation).
  // Findings() is then the same for the same Revision(): it depends on the observation
  // stream alone, never on the wall clock (findings age out of a caller's window by
  // their own last_ns, which the caller judges). nullopt = not tracked: recompute at
  // every call. A detector that also reads the caller's shared inventory (the kernel
  // detector) leaves watching that inventory to the caller.
  virtual std::optional<uint64_t> Revision() const { return std::nullopt; }
};

// Shared helpers every detector uses to build findings.
Evidence EvidenceFrom(const Observation& obs);

}  // namespace faultline
