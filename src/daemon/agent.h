// The agent daemon (`faultline agent`): every configured source on its own thread and
// schedule, feeding one Pipeline (store -> detectors -> isolator), plus an evaluator
// thread. A source that fails is reported once (and once more when it recovers) and
// retried with doubling back-off up to [agent] max_backoff; it is never fatal.
//
// A batch the store refuses (a full disk, an I/O error) is not dropped: the agent holds
// it, stops polling that source, and retries the batch at each of its intervals; only
// once it is stored does the source read on. So the source's position never runs ahead
// of what was committed by more than the one held batch, and its stored cursor (saved
// with the batch) never skips it: after space comes back, or after a restart from the
// stored cursor, nothing is lost.
//
// Two ways to drive it:
//  - Start() / RequestStop() / Stop(): the daemon (threads, real time).
//  - RunOnce(): polls every source once, in order, on the calling thread, then
//    evaluates: deterministic for tests and the simulator with a FakeClock.
// RunFor(d) = Start, wait d (or until RequestStop), Stop.
//
// Evaluation (threads): every evaluate_interval, and at once when a stored batch held a
// critical observation (engine/detect/critical.h: XID 79/48/64/74/94/95/119 and other
// fatal XIDs, fatal SXid, fatal AER, PSU/leak at Critical, GPU lost). Requests coalesce:
// at most one evaluation runs and at most one is pending, so a storm of critical lines
// costs a handful of evaluations, not one per line. Sources that can wait for input
// (AgentSource::CanWaitForData: the kernel log) block in it between polls and are polled
// as soon as a line is there.
//
// Blind (docs/agent.md "Blind"): at each evaluation the agent judges each source. One fails
// when its last poll failed, when it holds a batch the store refused (read, never seen by the
// detectors), or when a poll has been in flight for kBlindAfterIntervals of its intervals (its
// poll deadline when longer: a Redfish sweep), i.e. it hangs. It sees when its last poll
// succeeded, even with nothing new (a quiet kernel log); before its first poll returns it is
// pending. When every source fails the agent is blind: silence then means nothing, so no
// "none" diagnosis is stored (nor replaces the last real one) until a source sees again;
// findings and real diagnoses are stored as ever. Until some source has seen, "none" is not
// stored either. Blindness beginning and ending is logged and recorded in the store
// (store/agent_state.h) for `faultline check` and `faultline serve`. An agent with no source
// at all is never blind (nothing is configured to fail).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "daemon/config.h"
#include "daemon/fleet_links.h"
#include "daemon/incident_notes.h"
#include "daemon/latency_histogram.h"
#include "daemon/log.h"
#include "daemon/pipeline.h"
#include "daemon/remediation.h"
#include "daemon/source.h"
#include "daemon/warning_log.h"
#include "store/agent_state.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

class FleetPublisher;

// Allocator settings for a process that hosts the agent for months: at most two malloc
// arenas (glibc makes up to 8 per core, one per busy thread, and each keeps the memory
// its thread freed: measured 4.2 -> 2.1 MiB held free, 1.6 MiB less anonymous memory on
// the simulated node, same CPU). Process-wide, so the program's entry point calls it,
// once, before any thread starts (`faultline agent`, `bench agent-rest`); never a library.
void TuneAllocatorForLongRun();

struct AgentStats {
  uint64_t polls = 0;
  uint64_t poll_failures = 0;
  uint64_t observations_inserted = 0;
  uint64_t observations_duplicate = 0;
  uint64_t store_failures = 0;  // batches the store refused (disk full...), each held and retried
  uint64_t evaluations = 0;
  uint64_t critical_batches = 0;       // stored batches that held a critical observation
  uint64_t evaluations_on_demand = 0;  // evaluations run early because of one (coalesced)
  uint64_t findings_stored = 0;
  uint64_t diagnoses_stored = 0;
  uint64_t retention_runs = 0;
  uint64_t policy_decisions = 0;  // remediation decision rows stored (daemon/remediation.h)
  uint64_t policy_errors = 0;
  uint64_t incident_notes = 0;          // assistant notes stored (daemon/incident_notes.h)
  uint64_t nones_withheld = 0;          // evaluations that kept a new "none" out of the store (no source sees)
  RemediationStats remediation;         // the remediation step's, live: its worker's queue (daemon/remediation.h)
  InvestigatorStats investigations;     // the model's, with [assistant] llm_url (daemon/incident_investigator.h)
  LatencyHistogram evaluation_latency;  // one Pipeline::Evaluate, monotonic clock
};

// One source as the agent sees it now (the API's source health).
struct SourceStatus {
  std::string name;  // "kmsg", "nvml", "redfish", ...
  Layer layer = Layer::kOs;
  bool up = false;  // polled at least once and its last poll succeeded
  uint64_t polls = 0;
  uint64_t errors = 0;                     // failed polls since the agent started
  std::optional<int64_t> last_success_ns;  // wall clock of its last successful poll
  // Counts against the agent's sight (the header's "Blind"): its last poll failed, its batch
  // is held, or a poll hangs. `error` says which ("" when not failing).
  bool failing = false;
  std::string error;
};

// Intervals a poll may stay in flight before its source counts as failing (hung).
inline constexpr int kBlindAfterIntervals = 3;

class Agent {
 public:
  // Opens the store, builds the configured sources and warm-starts the pipeline.
  // `clock` and `logger` must outlive the agent.
  static Result<std::unique_ptr<Agent>> Create(const AgentConfig& config, const Clock& clock, Logger& logger);
  // Same with the sources given (tests, simulator).
  static Result<std::unique_ptr<Agent>> CreateWithSources(const AgentConfig& config,
                                                          std::vector<std::unique_ptr<AgentSource>> sources,
                                                          const Clock& clock, Logger& logger);
  // Same with the store given too, already open (tests: a store whose commits fail on
  // demand, Store::SetFileSizeLimit); config.agent.store_path is not used.
  static Result<std::unique_ptr<Agent>> CreateWithStore(const AgentConfig& config, std::unique_ptr<Store> store,
                                                        std::vector<std::unique_ptr<AgentSource>> sources,
                                                        const Clock& clock, Logger& logger);
  ~Agent();  // Stop()s if running
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // One poll of every source, then one evaluation. Not while Start()ed.
  Status RunOnce();
  // When RunDue evaluates, besides every evaluate interval.
  enum class DueEvaluation {
    // After every poll too: the simulator's scoring, whose answers are then as fresh as
    // the polls (time to diagnosis on the simulated clock).
    kAfterEveryPoll,
    // As the daemon's evaluator thread does: at once after a stored batch that held a
    // critical observation, else only on the interval (`bench agent-days`: the work of a
    // deployed agent, simulated day after day).
    kAsTheDaemon,
  };
  // The daemon's schedule, driven by the caller: polls each source whose interval (or
  // retry back-off) has passed on the clock's monotonic time since its last poll, then
  // evaluates as `when` says, then applies the store's retention when its interval has
  // passed since the first evaluation or the last retention (as the evaluator thread
  // does). With a FakeClock this is the simulator's lockstep: same sources, same cadence,
  // no threads. Sets *evaluated (when given) to whether an evaluation ran. Not while
  // Start()ed.
  Status RunDue(bool* evaluated = nullptr, DueEvaluation when = DueEvaluation::kAfterEveryPoll);
  // The monotonic time at which RunDue will next poll a source or evaluate (now when
  // something is due already). The simulator's lockstep moves its fake clock straight
  // there, so idle stretches cost nothing and every poll still happens on schedule.
  int64_t NextDueNs() const;
  // A real-time-faithful schedule for RunDue (the simulator's `bench accuracy --phases`):
  // each source's first poll lands at a phase drawn from `seed`, uniform over the points
  // of the `quantum_ns` grid (the lockstep's tick; 0 = any time) in [0, its interval),
  // and each later poll comes its interval (or back-off) plus a draw in [0,
  // jitter_fraction x interval), rounded to the grid, after the last. The same seed gives
  // the same schedule. Before the first RunDue; the threads of Start() keep real time.
  void PerturbSchedule(uint64_t seed, double jitter_fraction, int64_t quantum_ns = 0);
  void Start();
  // Asks every thread to finish (async-signal-unsafe: call from a normal thread).
  void RequestStop();
  // RequestStop, joins the threads (each bounded by the shutdown timeout: in-flight
  // requests are cancelled), shuts the sources down (Redfish logout), evaluates once
  // more and closes the store. Idempotent; returns the first error met on the way.
  Status Stop();
  // Start, run for `duration` or until RequestStop, Stop.
  Status RunFor(std::chrono::nanoseconds duration);

  // Called on the evaluating thread after every evaluation whose writes are committed
  // (finding and diagnosis rows), with its result and the CLOCK_MONOTONIC time it ended
  // (the bench's fault-to-diagnosis latency). Set before Start(); must not call back into
  // the agent.
  using EvaluationListener = std::function<void(const EvaluateResult&, int64_t done_mono_ns)>;
  void SetEvaluationListener(EvaluationListener listener);

  // Remediation through these actuators instead of the ones [policy] asks for (the
  // simulator's platform doubles, tests). Borrowed: they must outlive the agent; `fleet`
  // may be null. Before Start() / the first RunOnce or RunDue.
  void UseActuators(std::vector<actions::Actuator*> actuators, actions::FleetView* fleet);

  // Asks the evaluator thread for an evaluation now (an operator's re-evaluate, a resolve);
  // coalesced like a critical observation's. Only while Start()ed.
  void RequestEvaluationNow() { RequestEvaluation(); }
  const AgentConfig& config() const { return config_; }

  AgentStats stats() const;
  // The pipeline's counters (detectors asked, isolations reused).
  PipelineStats pipeline_stats() const;
  // Each source now (failing judged at this moment).
  std::vector<SourceStatus> SourceStatuses() const;
  // Whether the agent is blind, since when, and each source as its last evaluation judged
  // them: what it records in the store when blindness begins or ends. Before its first
  // judgement, what the store held from the last run (or not blind).
  AgentState Sight() const;
  // The isolator's last answer (a "none" in it is not stored while no source sees: Sight()).
  std::vector<Diagnosis> LastDiagnoses() const;
  // The agent's store, for a server running beside it (the Store serializes itself).
  Store& store() { return *store_; }
  const std::string& node() const { return node_; }
  // The [assistant] knowledge base, for the server's /api/v1/ask; null without one.
  // Searchable from any thread.
  const assistant::Retriever* knowledge_base() const { return notes_ ? notes_->knowledge_base() : nullptr; }
  // The model's worker ([assistant] llm_url); null without one. Valid until the agent is
  // destroyed (stopped by Stop()).
  IncidentInvestigator* investigator() { return notes_ ? notes_->investigator() : nullptr; }
  // The [fleet] publisher (daemon/fleet_publisher.h); null when [fleet] is off. It runs on
  // its own thread between Start() and Stop() only.
  FleetPublisher* fleet_publisher() { return fleet_.get(); }

 private:
  struct SourceState;
  // One evaluation's view of the sources (Judge).
  struct Judgement {
    bool any_sees = false;  // some source's last poll succeeded
    bool all_fail = false;  // there are sources and every one fails: blind
    std::vector<SourceSight> sources;
  };
  Agent(const AgentConfig& config, std::string node, std::unique_ptr<Store> store,
        std::vector<std::unique_ptr<AgentSource>> sources, std::unique_ptr<Topology> topology, const Clock& clock,
        Logger& logger);
  void PollOne(SourceState& s);
  // One batch into the pipeline; false when the store refused it (the batch is intact).
  bool StoreBatch(SourceState& s, SourceBatch& batch);
  // `record_sight` = false at stop: sources cancelled there may look failed; the sight
  // recorded stays the last one judged while running.
  Status EvaluateNow(bool record_sight = true);
  // Under mu_: how `s` stands now (the header's "Blind"); `why` says why it fails.
  enum class Standing { kSees, kFails, kPending };
  Standing Judge(const SourceState& s, int64_t now_mono_ns, std::string* why) const;
  Judgement JudgeSources() const;
  // After an evaluation: updates sight_, logs and stores a change of blindness.
  void RecordSight(Judgement judgement, int64_t now_ns);
  // RecordSight's update of sight_ (mu_); the record to store when the store's copy differs.
  std::optional<AgentState> UpdateSight(Judgement judgement, int64_t now_ns);
  // At creation: the blind state the store holds from the last run.
  void LoadSight();
  // The deadline of one poll of `s` (Redfish: its sweep deadline; else its interval).
  int64_t PollBudget(const SourceState& s) const;
  // Builds the remediation step from [policy] and warm-starts the pipeline.
  static Result<std::unique_ptr<Agent>> Finish(std::unique_ptr<Agent> agent);
  void SourceLoop(SourceState& s);
  void EvaluateLoop();
  void ApplyRetention();
  // After an evaluation (the evaluator thread, RunDue): ApplyRetention once its interval
  // has passed since the last one.
  void ApplyRetentionWhenDue();
  // Waits up to `ns` or until stop; false when stopping.
  bool WaitFor(int64_t ns);
  // Between two polls of a source: blocks in its WaitForData when it can and is healthy,
  // else sleeps its interval (or back-off); false when stopping.
  bool WaitForNextPoll(SourceState& s);
  // Asks the evaluator thread for an evaluation now (coalesced with a pending one).
  void RequestEvaluation();
  int64_t IntervalFor(const AgentSource& s) const;
  // PerturbSchedule's jitter before the next RunDue poll of `s` (none when not perturbed).
  static void DrawJitter(SourceState& s);

  AgentConfig config_;
  std::string node_;
  const Clock& clock_;
  Logger& logger_;
  WarningLog warnings_{logger_};  // source warnings: each kind once per hour, repeats counted (mu_)
  std::unique_ptr<Topology> topology_;
  std::shared_ptr<Store> store_;  // shared with the remediation worker (daemon/remediation.h)
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<FleetLinks> fleet_links_;  // [fleet]: the fleet's verdicts (outlives its users below)
  std::unique_ptr<Remediation> remediation_;  // used by the evaluating thread only
  std::unique_ptr<IncidentNotes> notes_;      // likewise
  std::unique_ptr<FleetPublisher> fleet_;     // [fleet]: store -> NATS on its own thread
  std::vector<std::unique_ptr<SourceState>> sources_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable evaluate_wake_;  // the evaluator: timer, on-demand request, stop
  bool evaluation_requested_ = false;      // one pending on-demand evaluation
  EvaluationListener listener_;
  bool stop_requested_ = false;
  bool running_ = false;
  bool stopped_ = false;
  AgentStats stats_;
  std::optional<int64_t> last_due_evaluation_ns_;  // RunDue's evaluate cadence
  std::optional<int64_t> last_retention_ns_;       // retention cadence (evaluating thread only)
  std::vector<Diagnosis> last_diagnoses_;
  AgentState sight_;                    // the blind state (mu_)
  std::optional<bool> recorded_blind_;  // what the store holds (evaluating thread only)
  bool sight_write_failed_ = false;     // the last write of it failed (evaluating thread only)
  Status first_error_;
  std::vector<std::thread> threads_;
};

// This host's name ("localhost" when unknown): the default [agent] node.
std::string HostName();

}  // namespace faultline::daemon
