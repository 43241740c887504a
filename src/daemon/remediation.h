// The agent's remediation step (docs/remediation.md "In the agent"): after each evaluation
// that stored a new primary diagnosis, the policy engine decides what to do about it and,
// for the classes the [policy] config enables, carries it out through the actuators; the
// rest are stored dry runs. Held and failed decisions are looked at again at most every
// retry_initial even when nothing new was diagnosed, so a tripped breaker or a failed drain
// is retried without costing an sinfo per evaluation.
//
// Two ways to run it:
//  - synchronous (as constructed): AfterEvaluation runs the engine, and so the actuators, on
//    the caller's thread. Agent::RunOnce / RunDue, the simulator's lockstep and the benches:
//    the same inputs give the same decisions at the same simulated time.
//  - on a worker (StartWorker(): Agent::Start, the daemon): the engine and every call into it
//    run on one thread of their own ("fl-policy"), so policy::Engine stays single-threaded,
//    and AfterEvaluation only queues the call. A webhook that takes 30 s to time out (three
//    10 s attempts) or a slow API server no longer holds the next fault's diagnosis. The
//    queue is bounded (RemediationOptions::queue_capacity) and AfterEvaluation never waits:
//    a look at held/failed decisions with nothing new is coalesced into any call already
//    waiting (every call looks at them: the engine re-derives them from its ledger), and when
//    the queue is full the oldest waiting diagnosis makes room for the newest (counted in
//    RemediationStats and logged). Stop() lets the worker finish what is queued until
//    stop_deadline, then gives up on it: an actuator call still blocked is abandoned, never
//    joined. That is safe for the node: "decided" is committed before any actuator runs, and
//    the next start finishes such a decision (Engine::Start, the crash-safety path). It is
//    safe for memory: the worker owns the engine, the actuators it built and a share of the
//    store; what it borrows (the logger, the fleet's verdicts, borrowed actuators and fleet
//    view) it reaches through a gate Stop() closes, so after Stop() returns the only borrowed
//    object still in use is the one whose call was abandoned (it must outlive that call).
//
// Nothing here is fatal: a policy error is logged and counted and the agent keeps
// diagnosing. AfterEvaluation, StartWorker and Stop are called from one thread at a time
// (the agent's evaluating thread, then its stopping one); stats() and UseFleetVerdicts
// from any.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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
  // On a worker only:
  uint64_t queued = 0;      // calls handed to the worker
  uint64_t coalesced = 0;   // looks at held/failed decisions folded into a call already waiting
  uint64_t dropped = 0;     // diagnoses dropped from a full queue for a newer one (oldest first)
  uint64_t max_queued = 0;  // the most calls ever waiting at once (never above queue_capacity)
  uint64_t abandoned = 0;   // calls Stop() gave up on: the one blocked in an actuator and those behind it
};

struct RemediationOptions {
  // Calls waiting for the worker, each at most one diagnosis (a few hundred bytes).
  size_t queue_capacity = 8;
  // How long Stop() lets the worker finish what is queued and in flight before it gives up
  // on it (the agent's shutdown must not wait for a webhook's or an API server's timeouts).
  std::chrono::nanoseconds stop_deadline = std::chrono::seconds(2);
};

class Remediation {
 public:
  // With the actuators the config asks for (policy::BuildActuators). Errors name the
  // policy key; the agent refuses to start on them. The store is shared so that a worker
  // Stop() gave up on still has it (closed by then: its late writes fail kUnavailable).
  static Result<std::unique_ptr<Remediation>> Create(const policy::PolicyConfig& config, std::shared_ptr<Store> store,
                                                     std::string node, Logger& logger, RemediationOptions options = {});
  // With borrowed actuators (the simulator's platform doubles, tests): they must outlive
  // this object, and one whose call Stop() abandoned must outlive that call; `fleet` may be
  // null (disruptive classes are then held).
  Remediation(const policy::PolicyConfig& config, std::shared_ptr<Store> store, std::string node,
              std::vector<actions::Actuator*> actuators, actions::FleetView* fleet, Logger& logger,
              RemediationOptions options = {});
  // Same over a borrowed store: synchronous only (StartWorker refuses it), the store must
  // outlive this object (the simulator's fleet bench).
  Remediation(const policy::PolicyConfig& config, Store& store, std::string node,
              std::vector<actions::Actuator*> actuators, actions::FleetView* fleet, Logger& logger,
              RemediationOptions options = {});
  ~Remediation();  // Stop()s
  Remediation(const Remediation&) = delete;
  Remediation& operator=(const Remediation&) = delete;

  // After one evaluation whose rows are committed: runs the policy now (synchronous) or
  // queues it for the worker (never blocks).
  void AfterEvaluation(const EvaluateResult& result, int64_t now_ns);
  // From now on the engine runs on its own thread. Once; kInvalidArgument over a borrowed
  // store. Not after Stop().
  Status StartWorker();
  // Lets the worker finish what is queued, at most options.stop_deadline, then gives up on
  // what is left (logged, counted in `abandoned`). After a clean finish the remediation is
  // synchronous again; after giving up, later calls are dropped. Idempotent; nothing to do
  // when synchronous.
  void Stop();

  RemediationStats stats() const;
  // The fleet's verdicts on this node's diagnoses (borrowed: must outlive this object or
  // its Stop(); null = no fleet).
  void UseFleetVerdicts(const policy::FleetVerdicts* verdicts);

 private:
  struct Core;
  enum class Mode { kSync, kWorker, kGaveUp };

  Remediation(std::shared_ptr<Core> core, RemediationOptions options);

  std::shared_ptr<Core> core_;  // shared with the worker thread
  RemediationOptions options_;
  Mode mode_ = Mode::kSync;
  std::thread worker_;
  std::optional<int64_t> last_run_ns_;  // the caller's: when a call last went to the engine
};

}  // namespace faultline::daemon
