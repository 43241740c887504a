// Fleet scenario files for `faultline sim fleet` and `faultline bench fleet` (format:
// docs/scenarios.md "Fleet scenarios"): a fleet's shape (racks, PDUs, power feeds, cooling
// loops, leaf switches, driver versions, cables) given as counts or as an explicit node
// list, the training jobs that span its nodes, a timeline of injected faults, and the
// ground truth a correct fleet analyzer must report (shared causes and stragglers).
//
// ParseFleetScenario is pure (no I/O): YAML or JSON text in, a checked scenario out.
// Unknown keys, unknown fault kinds, references to parts the fleet does not have,
// missing parameters and out-of-range values are errors (kCorrupt naming the place, e.g.
// `faults[2].pdu: no such PDU 'r09-pdu-a'`); sizes and counts are bounded
// (kInvalidArgument over the limits). The resolved topology (fleet/fleet_topology.h) and
// the jobs' node lists are part of the result, so the simulator never guesses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "fleet/fleet_topology.h"
#include "sim/node/node_scenario.h"

namespace faultline::sim {

inline constexpr size_t kMaxFleetScenarioBytes = 4 << 20;
inline constexpr size_t kMaxFleetNodes = 100'000;
inline constexpr size_t kMaxFleetJobs = 10'000;
inline constexpr size_t kMaxFleetFaults = 10'000;
inline constexpr size_t kMaxFleetCables = 200'000;
inline constexpr size_t kMaxFleetNameBytes = 128;

// A generated fleet's shape. Names: racks "r01".., nodes "r01-n01".., PDUs "r01-pdu-a"
// (the first half of a rack's nodes) and "r01-pdu-b", feeds "feed-a"/"feed-b" (PDU a/b),
// cooling loops "loop-01".. (`racks_per_loop` racks each), leaf switches "leaf-01"..
// (`racks_per_leaf` racks each), every node's HCA k cabled to its leaf
// ("C-<node>-<k>", leaf port "p<n>"). Explicit cables take the topology file's form.
struct FleetShape {
  int racks = 4;
  int nodes_per_rack = 16;
  int pdus_per_rack = 2;  // 1 or 2
  int racks_per_loop = 1;
  int racks_per_leaf = 1;
  int hcas = 1;  // InfiniBand HCAs per node cabled to the leaf (mlx5_0..)
  std::string driver = "550.54.15";
  bool leaf_cables = true;  // generate the node-to-leaf cables
};

// A job spanning nodes: synchronous data-parallel training. Each node reports its own
// compute time per step (what peers are compared on). Pauses the whole job shares slow
// every rank alike: a checkpoint every `checkpoint_every` steps (`checkpoint_steps` steps
// at `checkpoint_factor`), an evaluation pass every `eval_every` steps (`eval_steps` at
// `eval_factor`; a checkpoint step wins), and data stalls (the input pipeline starving
// every rank) on average every `stall_every_s` seconds (exponential gaps drawn from the
// scenario's seed), `stall_s` long at `stall_factor`.
struct FleetJob {
  std::string name;
  std::vector<std::string> nodes;
  double step_s = 2.0;
  double noise = 0.02;        // relative jitter of one report
  double node_spread = 0.01;  // persistent per-node speed differences (relative sd)
  int checkpoint_every = 0;   // steps; 0 = never
  int checkpoint_steps = 3;
  double checkpoint_factor = 4.0;
  int eval_every = 0;  // steps; 0 = never
  int eval_steps = 2;
  double eval_factor = 2.0;
  double stall_every_s = 0;  // mean seconds between data stalls; 0 = never
  double stall_s = 8;
  double stall_factor = 3.0;
  double samples_per_step = 512;  // per node (throughput = samples / step time)
  double start_s = 0;
  std::optional<double> end_s;
};

enum class FleetFaultKind {
  kStragglerGpu,   // node, gpu, value (C hotter: a blocked cold plate) -> thermal slowdown
  kNodeSlow,       // node, value (step factor): slow with no hardware cause
  kCableErrors,    // cable, value (symbol errors/min) at both ends
  kPduSag,         // pdu, value (V), ramp_s: every node on the PDU
  kFeedSag,        // feed, value (V), ramp_s: every node on the feed
  kLeafDegrade,    // switch, value (errors/min), fraction of its ports
  kDriverRollout,  // driver (new version), nodes or racks or fraction, every_s, slowdown
  kLoopDegrade,    // loop, value (coolant supply C), ramp_s: every node on the loop
};
std::string_view ToString(FleetFaultKind kind);
std::optional<FleetFaultKind> ParseFleetFaultKind(std::string_view name);

struct FleetFault {
  FleetFaultKind kind = FleetFaultKind::kNodeSlow;
  double at = 0;
  std::optional<double> until;
  double ramp_s = 0;
  double value = 0;
  std::string node;
  int gpu = -1;
  std::string target;              // the cable id, PDU, feed, switch, loop or driver version, per kind
  std::vector<std::string> nodes;  // kDriverRollout: the nodes upgraded (resolved), in rollout order
  double fraction = 1.0;           // kLeafDegrade: share of the switch's ports affected
  double every_s = 0;              // kDriverRollout: spacing between nodes
  double slowdown = 1.0;           // kDriverRollout: step factor on upgraded nodes
  // The class the node's own isolator reports; absent = the kind's default
  // (straggler_gpu: gpu_thermal, pdu/feed sag: voltage_out_of_range, loop:
  // cooling_degraded, cable/leaf: ib_link_errors, driver: driver_fault, node_slow: none).
  std::optional<FaultClass> node_class;
};

// The agents' publishing schedule (seconds) and the analyzer's evaluation period.
struct FleetAgentSpec {
  double step_report_s = 5;         // a job's step report per node
  double gpu_sample_s = 10;         // NVML sampling (change-only)
  double oob_sample_s = 10;         // Redfish sampling (change-only)
  double batch_s = 5;               // how often an agent publishes its new rows
  double node_eval_s = 1;           // the agent evaluates (its isolator runs) this often
  double detect_s = 5;              // symptom -> the node's own diagnosis
  double diagnosis_refresh_s = 60;  // a lasting diagnosis is stored (and published) again
  double evaluate_s = 1;            // the fleet analyzer's evaluation period
};

// A shared cause the analyzer must name: `cause` as in fleet::FleetDiagnosis ("pdu",
// "feed", "cooling_loop", "cable", "switch", "driver", "rack"), `components` the ids that
// name it (any matches; "pdu/r03-pdu-a"), `nodes` the nodes it affects.
struct FleetTruthCause {
  std::string cause;
  std::vector<std::string> components;
  std::vector<std::string> nodes;
  double start_s = 0;
};

// A slow node among its job's peers with a cause of its own (not a shared one).
struct FleetTruthStraggler {
  std::string node;
  int gpu = -1;  // -1: no particular GPU
  std::string job;
  double start_s = 0;
};

struct FleetTruth {
  std::vector<FleetTruthCause> causes;
  std::vector<FleetTruthStraggler> stragglers;
};

struct FleetScenario {
  std::string name;
  std::string description;
  double duration_s = 900;
  uint64_t seed = 1;
  int64_t start_ns = int64_t{1'796'083'200} * 1'000'000'000;  // 2026-12-01T00:00:00Z unless `start_utc_s`
  NodeSpec node;                                              // every node's hardware (the node simulator's model)
  double temp_wander_c = 1.0;
  double power_noise_w = 2.0;
  FleetAgentSpec agent;
  fleet::FleetTopology topology;            // resolved: generated or given, driver versions after roll-outs
  std::vector<std::string> initial_driver;  // per topology node: the version before any roll-out
  std::vector<FleetJob> jobs;
  std::vector<FleetFault> faults;  // sorted by `at` (stable)
  FleetTruth truth;
};

Result<FleetScenario> ParseFleetScenario(std::string_view text);
// The scenario's fleet as an operator's topology file (fleet/fleet_topology.h's format),
// for `faultline fleet --topology FILE`.
std::string FleetTopologyJson(const fleet::FleetTopology& topology);
// Reads and parses a file (kNotFound / errors prefixed with the path).
Result<FleetScenario> LoadFleetScenario(const std::string& path);

}  // namespace faultline::sim
