// Scores scenario runs against their ground truth (`faultline bench accuracy`): a
// confusion matrix over the final primary diagnosis, per-class precision / recall / F1,
// macro-F1, component accuracy, time from fault start to the first correct diagnosis,
// wrong hardware actions, and the decision timeline (decisions taken for a wrong
// diagnosis, flaps of the primary, time to the first correct decision). Pure: runs in,
// numbers out. Every run counts once: with phases, a scenario counts once per phase.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/harness/lockstep.h"

namespace faultline::sim {

struct ClassScore {
  int support = 0;    // scenarios whose truth is this class
  int predicted = 0;  // scenarios whose final primary is this class
  int correct = 0;
  double precision = 0, recall = 0, f1 = 0;
};

struct AccuracyReport {
  int scenarios = 0;
  // truth class -> predicted class -> count (final primary diagnosis).
  std::map<std::string, std::map<std::string, int>> confusion;
  std::map<std::string, ClassScore> classes;  // every class seen as truth or prediction
  double macro_f1 = 0;                        // mean F1 over classes with support > 0
  double primary_accuracy = 0;                // final primary class == truth class
  double component_accuracy = 0;              // final primary class and component both right
  int diagnosed = 0;                          // scenarios with a first correct diagnosis (time known)
  double ttd_median_s = 0;                    // fault start -> first correct primary (diagnosed ones)
  double ttd_max_s = 0;
  double agent_tick_ms_mean = 0;  // real time per evaluating tick, mean over runs
  double agent_tick_ms_max = 0;
  int wrong_hardware_actions = 0;  // scenarios with at least one
  std::vector<std::string> wrong_action_details;
  std::vector<std::string> misses;  // "scenario: truth X, got Y on Z"
  int final_misses = 0;             // runs whose final primary is wrong (class or part)
  // The decision timeline (ScenarioRun::decisions, ::flaps): taken decisions for a
  // diagnosis of the wrong class over all runs, and the runs that had any.
  int wrong_decisions = 0;
  std::vector<std::string> wrong_decision_details;  // "scenario#phase: t=...s drain for ..."
  double flaps_mean = 0;                            // primary changes after the first non-none primary, per run
  int flaps_max = 0;
  int decided = 0;                     // runs with a correct decision taken (time known)
  double first_decision_median_s = 0;  // fault start -> first correct decision (decided runs)
  double first_decision_max_s = 0;
};

// "name" for the aligned run, "name#k" for phase k.
std::string RunLabel(const ScenarioRun& run);

AccuracyReport ScoreRuns(const std::vector<ScenarioRun>& runs);

}  // namespace faultline::sim
