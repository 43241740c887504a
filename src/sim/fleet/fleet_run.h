// Running a fleet scenario against the fleet analyzer and scoring it against its truth
// (`faultline sim fleet`, `faultline bench fleet`, tests/sim_fleet).
//
// In process: the simulator's envelopes go through the wire format (Encode, then Decode
// as a consumer would) into one fleet::FleetAnalyzer on the scenario's virtual clock,
// which is evaluated every `agent.evaluate_s`. Timings separate what the analyzer costs
// (decode + ingest, evaluate: wall and thread CPU) from what the simulation costs.
//
// Scoring: a straggler diagnosis (cause "straggler") names a node (its `nodes`, or the
// "node/<name>/..." component); it is a true positive when the truth lists that node as a
// straggler, else a false positive (including a node slowed by a shared cause: a shared
// cause must not be reported as N stragglers). Any other fleet diagnosis matches a truth
// cause with the same cause whose component it names (compared on the part's name after
// the first '/', so "loop/loop-02" and "cooling_loop/loop-02" agree; a "rack" diagnosis
// matches when its component names the truth's part); unmatched ones are false. Detection time: the scenario time of
// the first evaluation that returned the diagnosis, minus the truth's start.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "fleet/analyzer.h"
#include "fleet/wire.h"
#include "sim/fleet/fleet_scenario.h"
#include "sim/fleet/fleet_score.h"

namespace faultline::sim {

struct FleetTimings {
  double generate_s = 0;            // the simulation (wall)
  double encode_s = 0;              // agents' side: Encode (wall)
  double decode_s = 0;              // consumer: Decode (wall)
  double ingest_s = 0;              // FleetAnalyzer::Ingest (wall)
  double analyzer_cpu_s = 0;        // thread CPU in Decode + Ingest + Evaluate
  std::vector<double> evaluate_ms;  // wall per Evaluate
  uint64_t bytes = 0;
  uint64_t envelopes = 0;
  uint64_t observations = 0;
};

struct FleetRunResult {
  std::vector<TimedFleetDiagnosis> timeline;  // in order of first appearance, latest version
  // Every return of Evaluate (new or changed), in time order, with id, cause, component,
  // class and nodes only (what scoring reads).
  std::vector<TimedFleetDiagnosis> returns;
  std::vector<fleet::FleetDiagnosis> open;  // Open() at the end
  fleet::IngestStats ingest;
  FleetScore score;
  FleetTimings timings;
};

struct FleetRunOptions {
  fleet::AnalyzerOptions analyzer;
  std::optional<double> duration_s;  // override the scenario's
  // Each evaluated batch of encoded messages, before the in-process analyzer takes them
  // (the NATS path publishes them instead). Optional.
  std::function<void(double t, const std::vector<std::string>& subjects, const std::vector<std::string>& payloads)>
      on_batch;
  bool in_process = true;  // false: only generate and hand out (on_batch); no analyzer
};

// Runs the scenario; kInvalidArgument when it cannot (e.g. an empty fleet).
Result<FleetRunResult> RunFleetScenario(const FleetScenario& scenario, const FleetRunOptions& options = {});

}  // namespace faultline::sim
