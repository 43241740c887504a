// Scoring a fleet analyzer's diagnoses against a fleet scenario's truth (fleet_run.h
// explains the rules). Pure functions.
#pragma once

#include <string>
#include <vector>

#include "fleet/wire.h"
#include "sim/fleet/fleet_scenario.h"

namespace faultline::sim {

// A fleet diagnosis (its latest version) and when the analyzer first returned it
// (scenario seconds).
struct TimedFleetDiagnosis {
  double t = 0;
  fleet::FleetDiagnosis diagnosis;
};

struct StragglerVerdict {
  FleetTruthStraggler truth;
  bool found = false;
  bool gpu_right = false;   // the named GPU is the truth's (or the truth names none)
  double named_s = 0;       // first named (at or after the start)
  double evidence_s = 0;    // the first slowed step report reached the analyzer
  double evidence_k_s = 0;  // the k-th (k: the reports the analyzer's persistence needs, fleet_run.cc) did
  FaultClass fault_class = FaultClass::kNone;  // the class of the latest return naming it
  size_t reports = 0;  // distinct diagnosis ids naming it: more than 1 means it closed and opened again
};

struct CauseVerdict {
  FleetTruthCause truth;
  bool found = false;
  double named_s = 0;
  std::string component;    // what the analyzer named
  double node_jaccard = 0;  // its nodes against the truth's (1 when the truth lists none)
};

struct FleetScore {
  std::vector<StragglerVerdict> stragglers;
  std::vector<CauseVerdict> causes;
  std::vector<std::string> false_stragglers;  // nodes named slow that the truth does not list
  size_t false_stragglers_shared = 0;         // ... of them, nodes a truth cause slows (or touches)
  std::vector<std::string> false_causes;      // "<cause> <component>"
  size_t straggler_tp = 0, straggler_fp = 0, straggler_fn = 0;
  double precision = 1, recall = 1, f1 = 1;
  double correlation_accuracy = 1;  // truth causes found / truth causes
  bool pass = false;                // everything found, nothing false
};

// Scores every return of a diagnosis (Evaluate's new or changed ones, in time order)
// against a truth. A diagnosis matching a truth item only counts from the item's start
// (less `early_s`); a return before that is false ("... (before its start)"). `evidence_s`
// and `evidence_k_s` per truth straggler may be empty.
FleetScore ScoreFleet(const FleetTruth& truth, const std::vector<TimedFleetDiagnosis>& returns,
                      const std::vector<double>& evidence_s = {}, const std::vector<double>& evidence_k_s = {},
                      double early_s = 1.0);

// The node a straggler diagnosis names ("" when none).
std::string StragglerNode(const fleet::FleetDiagnosis& d);
// The GPU it names (-1 when none): "node/<n>/gpu/<g>".
int StragglerGpu(const fleet::FleetDiagnosis& d);

}  // namespace faultline::sim
