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
#pragma once

#include <memory>
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
};

// Shared helpers every detector uses to build findings.
Evidence EvidenceFrom(const Observation& obs);

}  // namespace faultline
