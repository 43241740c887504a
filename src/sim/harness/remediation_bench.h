// `faultline bench remediation`: what the automated part of remediation does over the
// scenario corpus, measured on the simulated clock (docs/remediation.md "Measured").
//
// Per scenario: the lockstep run of bench accuracy (the real agent over the simulated node)
// with [policy] enable = every class and the platform double (sim_platform.h) as every
// actuator and the fleet view, so the agent's own remediation step (daemon/remediation.h,
// policy::Engine) decides and the double records what it was asked to do. Scored against
// the scenario's ground truth (ExpectedRemediation):
//   - fault onset -> first CORRECT action requested: the first Apply of a class the truth's
//     action maps to, for a diagnosis naming the truth's part (and class, when the truth
//     names no part), at or after the onset; and -> complete (every class of that mapping
//     requested). A request made for a neighbouring class on the right part is counted and
//     noted (an uncorrectable HBM error that turns out a remap failure drains the same node);
//   - wrong disruptive actions: cordon / drain / reset_gpu / reboot_node the policy decided
//     to carry out (done, failed, held, in flight) on a scenario whose truth does not warrant
//     one, or a GPU reset of a part that is not the faulty one (must be 0);
//   - duplicates: the same class requested twice of the platform for one fault (same fault
//     key, or both for the truth's fault) (must be 0).
//
// Storm: a fleet of N nodes sharing ONE platform double, a fraction of them faulting at
// about the same time: each faulting node runs the agent's remediation step (its own
// policy::Engine over its own store, a real store file) fed with the diagnosis rows the
// real pipeline stored for a drain-warranting scenario, re-stored under that node's name,
// in an interleaved order; between them each node's step runs at every evaluation as the
// agent's does. Counted: nodes taken out (never above the breaker's limit within a
// window), decisions stored held_by_breaker, and whether held ones are carried out once the
// window has passed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "core/status.h"
#include "core/types.h"
#include "policy/config.h"
#include "sim/harness/lockstep.h"
#include "sim/harness/sim_platform.h"
#include "sim/node/node_scenario.h"

namespace faultline::sim {

// What the ground truth says the policy should request. Written from the truth's fault
// class and action, independently of the policy's rule code (src/policy/rules.cc), so a rule
// that drifts shows up here as a miss or a wrong action:
//   fault class none                       -> nothing; nothing disruptive
//   user_application                       -> notify_user; nothing disruptive
//   physical cause (power, voltage, inlet,
//     cooling, leak)                       -> facility_ticket; disruptive only when the
//                                             truth's action is drain or cordon
//   workload_imbalance, driver_fault       -> the action's classes; nothing disruptive
//   hardware, action rma                   -> drain + rma_bundle
//                reset_gpu / reboot_node   -> drain + reset_gpu / reboot_node
//                drain / cordon            -> drain / cordon
//                reseat_or_replace_link,
//                driver_upgrade, restart_job -> webhook (the on-call channel); nothing disruptive
//                notify_user / facility_ticket -> that class
//                monitor, none             -> nothing; nothing disruptive
// A truth that states no action for a fault class that has one (hardware, physical,
// driver) is not scored on time (`scored` false) and its disruptive actions are reported
// but not judged (`disruptive_judged` false), except where the class alone decides (a user
// program, a driver fault: never disruptive). Physical causes keep facility_ticket.
struct RemediationExpectation {
  std::set<actions::ActionClass> correct;  // empty: nothing should be requested
  // Requested without being wrong or extra: the on-call webhook for an actionable fault, a
  // PSU's or fan's own RMA bundle next to the facility ticket.
  std::set<actions::ActionClass> also_ok;
  bool scored = true;
  bool disruptive_allowed = false;
  bool disruptive_judged = true;
  std::string basis;  // one line: why
};
RemediationExpectation ExpectedRemediation(const Truth& truth);

// One request of the platform, judged.
struct JudgedApply {
  double t = 0;  // scenario seconds
  PlatformApply apply;
  bool right_part = false;   // its diagnosis names one of the truth's parts (or the truth names none)
  bool right_fault = false;  // ... and the truth's fault class
};

// A primary diagnosis the agent stored, with the scenario second it was stored at.
struct StoredDiagnosis {
  int64_t id = 0;
  double t = 0;
  Diagnosis diagnosis;
};

struct ScenarioRemediation {
  std::string name;
  Truth truth;
  double duration_s = 0;
  RemediationExpectation expect;
  std::vector<JudgedApply> applies;         // every Apply the platform received, in order
  std::optional<double> first_diagnosis_s;  // first correct primary diagnosis (lockstep)
  std::optional<double> first_correct_s;    // first correct action requested
  std::optional<double> complete_s;         // every expected class requested
  std::vector<std::string> wrong_disruptive;
  std::vector<std::string> duplicates;
  std::vector<std::string> extra;       // non-disruptive requests nothing in the truth asked for
  std::vector<std::string> notes;       // decisions left held/failed at the end, class mismatches
  std::map<std::string, int> states;    // latest state of each decision key -> count
  std::vector<std::string> refused;     // "class: rule" of refused decisions
  std::vector<StoredDiagnosis> stored;  // the pipeline's stored primaries (storm replay)
  std::string workdir;                  // kept run files ("" when removed)
  double wall_s = 0;
};

struct RemediationBenchOptions {
  LockstepOptions lockstep;  // workdir, nvml library, keep (the rest as bench accuracy)
  size_t fleet = 100;        // nodes the platform double knows (the simulated node is one)
};

// The [policy] section the bench runs with: every class enabled, the defaults for the rest
// (cool-down, breaker 3 nodes / 2 % / 1 h, retries), no platform of its own: the double is
// handed to the agent with Agent::UseActuators before the first poll. The webhook URL is a
// placeholder the agent's own (replaced) webhook actuator needs to be built; never contacted.
policy::PolicyConfig BenchPolicyConfig();

// One scenario through the lockstep with the platform double.
Result<ScenarioRemediation> RunScenarioRemediation(const NodeScenario& scenario,
                                                   const RemediationBenchOptions& options);

struct RemediationSummary {
  int scenarios = 0;
  int scored = 0;                                              // scenarios whose truth asks for at least one class
  int correct = 0;                                             // of those, a correct action was requested
  double first_correct_median_s = 0, first_correct_max_s = 0;  // onset -> first correct action
  int complete = 0;
  double complete_median_s = 0, complete_max_s = 0;  // onset -> every expected class
  double policy_lag_max_s = 0;                       // first correct diagnosis -> first correct action, worst case
  int wrong_disruptive = 0;                          // decisions (must be 0)
  int duplicates = 0;                                // (must be 0)
  int expect_nothing = 0;                            // scenarios where nothing should be done
  int expect_nothing_quiet = 0;                      // ... and nothing was requested
  std::vector<std::string> misses;                   // scored scenarios without a correct action
  std::vector<std::string> not_scored;
};
RemediationSummary SummarizeRemediation(const std::vector<ScenarioRemediation>& runs);

struct StormOptions {
  size_t fleet = 100;
  double fraction = 0.3;
  double spread_s = 30;  // onsets spread over this (0: every node at the same instant)
  double hours = 2;      // simulated time from the first onset: two breaker windows by default
  double tick_s = 1;     // the agents' evaluation interval
  uint64_t seed = 1;     // which nodes fault, onset offsets, interleaving
  std::string workdir;   // existing parent: the stores go in <workdir>/storm-XXXXXX
  bool keep = false;
  policy::PolicyConfig policy = BenchPolicyConfig();
};

struct StormReport {
  std::string source;  // the scenario whose stored diagnoses were replayed
  size_t fleet = 0;
  size_t faulting = 0;
  int64_t limit = 0;  // the breaker's node limit for this fleet
  double window_s = 0;
  double hours = 0;                           // simulated time the storm ran after the onset
  double spread_s = 0;                        // the onsets' spread
  size_t replayed_rows = 0;                   // diagnosis rows stored into the faulting nodes' stores
  int taken_out = 0;                          // nodes cordoned or drained by faultline at the end
  int taken_out_first_window = 0;             // within one window of the first onset
  int max_in_window = 0;                      // most nodes taken out within any window (<= limit)
  int drain_requests = 0;                     // Apply calls of cordon/drain
  int held_by_breaker = 0;                    // faulting nodes not out whose take-out decision is held_by_breaker
  int not_out_other = 0;                      // faulting nodes not out for another reason (listed in states)
  std::map<std::string, int> states;          // latest state of the faulting nodes' cordon/drain decisions
  std::map<std::string, int> other_requests;  // non-disruptive classes requested (bundles, webhook)
  std::vector<double> take_out_s;             // when each node was taken out (seconds after the first onset)
  std::string sample_hold;                    // one stored hold reason
  std::string workdir;
  double wall_s = 0;
};

// `rows`: the source run's stored primaries (scenario seconds), `onset_s` its fault onset.
Result<StormReport> RunStorm(const std::string& source, double onset_s, const std::vector<StoredDiagnosis>& rows,
                             const StormOptions& options);

// Whether a truth warrants a drain (the storm's source must).
bool WarrantsDrain(const RemediationExpectation& e);

}  // namespace faultline::sim
