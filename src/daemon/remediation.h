// The agent's remediation step (docs/remediation.md "In the agent"): after each evaluation
// that stored a new primary diagnosis, the policy engine decides what to do about it and,
// for the classes the [policy] config enables, carries it out through the actuators; the
// rest are stored dry runs. Held and failed decisions are looked at again at most every
// retry_initial even when nothing new was diagnosed, so a tripped breaker or a failed drain
// is retried without costing an sinfo per evaluation.
//
// Nothing here is fatal: a policy error is logged and counted and the agent keeps
// diagnosing. Not thread-safe: the agent calls it from the evaluating thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "daemon/log.h"
#include "daemon/pipeline.h"
#include "policy/actuators.h"
#include "policy/config.h"
#include "policy/engine.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

struct RemediationStats {
  uint64_t decisions_stored = 0;  // decision rows written (a state that changed)
  uint64_t errors = 0;            // policy calls that failed (logged)
};

class Remediation {
 public:
  // With the actuators the config asks for (policy::BuildActuators). Errors name the
  // policy key; the agent refuses to start on them.
  static Result<std::unique_ptr<Remediation>> Create(const policy::PolicyConfig& config, Store& store, std::string node,
                                                     Logger& logger);
  // With borrowed actuators (the simulator's platform doubles, tests): they and `fleet`
  // must outlive this object; `fleet` may be null (disruptive classes are then held).
  Remediation(const policy::PolicyConfig& config, Store& store, std::string node,
              std::vector<actions::Actuator*> actuators, actions::FleetView* fleet, Logger& logger);

  // After one evaluation whose rows are committed.
  void AfterEvaluation(const EvaluateResult& result, int64_t now_ns);
  RemediationStats stats() const { return stats_; }
  // The fleet's verdicts on this node's diagnoses (borrowed; null = no fleet).
  void UseFleetVerdicts(const policy::FleetVerdicts* verdicts) { engine_.UseFleetVerdicts(verdicts); }

 private:
  void Run(const std::vector<Row<Diagnosis>>& rows, int64_t now_ns);
  void Report(const policy::Outcome& o);

  std::unique_ptr<policy::ActuatorSet> owned_;  // null when the actuators are borrowed
  policy::PolicyConfig config_;
  std::string node_;  // the store's node name (the diagnoses' rows)
  policy::Engine engine_;
  Logger& logger_;
  bool started_ = false;
  std::optional<int64_t> last_run_ns_;
  RemediationStats stats_;
};

}  // namespace faultline::daemon
