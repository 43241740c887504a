// Runs one scenario end to end: the simulated node (sim/node) serving its interfaces,
// and the real agent (daemon/agent.h) reading them, in lockstep on a FakeClock. At each
// tick where the agent has something due the node moves forward, then the agent polls
// whatever sources are due and evaluates, exactly as its threads would on that schedule;
// ticks where nothing is due are skipped (the fake clock jumps), so idle simulated time
// costs nothing. The primary diagnosis is
// recorded every time it changes, and checked against the scenario's ground truth.
// The agent is built as `faultline agent` builds it (configured sources, pipeline, warm
// start); only its store, thrown away with the run, is opened without an fsync per commit
// (StoreOptions::Synchronous::kNormal) and without the integrity check of a file just made.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "daemon/agent.h"
#include "policy/config.h"
#include "sim/node/node_scenario.h"
#include "sim/node/sim_node.h"
#include "store/records.h"

namespace faultline::sim {

// The simulated wall clock at scenario second 0 (fixed: runs are reproducible).
inline constexpr int64_t kSimEpochNs = 1795996800LL * 1'000'000'000;  // 2026-11-30T00:00:00Z

struct LockstepOptions {
  std::string workdir;       // existing parent; each run makes <workdir>/<name>-XXXXXX
                             // (workdir.h) and removes only that, unless keep_workdir
  std::string nvml_library;  // the fake libnvidia-ml.so.1
  double tick_s = 0.25;      // lockstep resolution (the time-to-diagnosis figures are this fine)
  // The agent's schedule in the simulation (seconds).
  double fast_interval_s = 1.0;    // kmsg, workload, evaluation
  double sample_interval_s = 5.0;  // NVML, sysfs
  double redfish_interval_s = 10.0;
  bool keep_workdir = false;
  // Visit only the ticks where the agent has something due (the default; same results).
  // false visits every tick, as the lockstep did before: tests compare the two.
  bool skip_idle_ticks = true;
  // Rebuild the node's NVML state file and its BMC sensor resources only at ticks where
  // the agent's NVML / Redfish source may poll (the default; same results, SimPublish).
  // false rebuilds them at every visited tick: tests compare the two.
  bool publish_when_read = true;
  std::ostream* agent_log = nullptr;  // the agent's log lines (warn and above); null = dropped
  // Called after each evaluation (the demo prints progress); may be empty.
  std::function<void(double t, const std::vector<Diagnosis>&)> on_evaluation;
  // Remediation (`bench remediation`): the agent's [policy] section (unset: the agent's
  // defaults, every class a dry run), and a hook called once the agent and the node are
  // built, before the first poll (Agent::UseActuators with the platform double, a listener).
  std::optional<policy::PolicyConfig> policy;
  std::function<void(daemon::Agent&, const SimNode&)> on_agent_created;
  // The agent's configuration after SimAgentConfig, before the agent is built (`bench
  // agent-days` sets the production defaults' intervals); may be empty.
  std::function<void(daemon::AgentConfig&)> configure;
  // When the agent evaluates: after every poll (scoring: answers as fresh as the polls)
  // or as the daemon's evaluator thread does (its interval, critical batches at once).
  daemon::Agent::DueEvaluation evaluate = daemon::Agent::DueEvaluation::kAfterEveryPoll;
  // The run's phase (`bench accuracy --phases`): 0 is the aligned lockstep above, every
  // source polling on multiples of its interval. k > 0 is real time's disorder, drawn
  // from PhaseSeed(scenario name, k): each source's first poll at a random phase of its
  // interval (on the tick grid), each later poll `phase_jitter` x interval late at most
  // (Agent::PerturbSchedule), and the agent evaluating as the daemon does (`evaluate`
  // is then kAsTheDaemon whatever it says).
  int phase = 0;
  double phase_jitter = 0.2;
  // Called after each visited tick with the CPU time this thread spent in the agent's
  // RunDue (its polls, evaluation and retention; not the node's publishing); may be empty.
  std::function<void(double t, int64_t agent_cpu_ns, const daemon::Agent&)> on_tick;
};

struct DiagnosisChange {
  double t = 0;  // scenario seconds
  Diagnosis primary;
};

// The remediation decisions of one run, read from the agent's store (policy/ledger.h):
// a decision (one ledger key) counts as taken once any of its rows reached dry_run,
// decided, done or failed; held, withdrawn, refused and superseded ones were not taken.
struct DecisionScore {
  int taken = 0;
  // Taken for a diagnosis whose fault class is not the truth's, dry run or not. On a
  // healthy scenario (truth class none): any taken cordon, drain, GPU reset, reboot, RMA
  // bundle or user notice (a webhook or facility ticket only informs). A decision for one
  // of the truth's other incidents (Truth::also), from its start on, is not wrong.
  int wrong = 0;
  std::vector<std::string> wrong_details;  // "t=12.0s drain for gpu_thermal|gpu/3 (dry run)"
  // The first taken decision for a diagnosis of the truth's class (scenario seconds).
  std::optional<double> first_correct_s;
};

// Scores the store's action rows of one run against its truth; `epoch_ns` is the wall
// time of scenario second 0. Pure.
DecisionScore ScoreDecisions(const std::vector<ActionRecord>& actions, const Truth& truth, int64_t epoch_ns);

// Changes of the primary diagnosis after the first one that was not `none`: how often
// the answer moved once there was one.
int CountFlaps(const std::vector<DiagnosisChange>& changes);

// The seed of run `phase` of a scenario: the same name and phase, the same schedule.
uint64_t PhaseSeed(const std::string& scenario, int phase);

struct ScenarioRun {
  std::string name;
  int phase = 0;        // LockstepOptions::phase
  std::string workdir;  // the run's files, when kept (keep_workdir); "" when removed
  Truth truth;
  std::vector<DiagnosisChange> changes;  // the primary diagnosis each time it changed
  std::vector<Diagnosis> final_diagnoses;
  std::optional<double> first_correct_s;  // first time the primary matched the truth
  bool final_correct_class = false;
  bool final_correct_component = false;
  // A hardware action (cordon, drain, RMA) recommended at any evaluation for a cause
  // that is not hardware, or an RMA of a part that is not the faulty one.
  std::vector<std::string> wrong_hardware_actions;
  DecisionScore decisions;  // the policy's decisions (dry runs included), from the store
  int flaps = 0;            // CountFlaps(changes)
  daemon::AgentStats agent;
  SimNodeStats node;
  double wall_s = 0;
  int64_t ticks_visited = 0;  // lockstep ticks that had a poll or evaluation due (the rest are skipped)
  // Real time the agent spent per lockstep tick that evaluated (its polls + evaluation):
  // what the simulated-clock latency does not include.
  double agent_tick_ms_mean = 0;
  double agent_tick_ms_max = 0;
};

// The agent configuration that points every source at the simulated node.
daemon::AgentConfig SimAgentConfig(const SimNode& node, const LockstepOptions& options, const std::string& store);

Result<ScenarioRun> RunScenarioLockstep(const NodeScenario& scenario, const LockstepOptions& options);

// Whether a diagnosis names the truth's fault class / one of its components. Truth
// components may be symbolic where the simulator chooses the address: "pcie/gpu3" (GPU
// 3's PCIe link, either end), "pcie/nic0", "ib/hca2", "nvswitch/1"; "gpu/3" also
// matches the GPU's bus address, UUID or serial.
bool ComponentMatches(const ComponentRef& c, const std::vector<std::string>& truth, const SimNode& node);
bool IsHardwareAction(Action a);
bool IsHardwareCause(FaultClass c);

// The default location of the fake NVML library next to the faultline binary.
std::string DefaultFakeNvmlPath();

}  // namespace faultline::sim
