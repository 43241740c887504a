// Scores scenario runs against their ground truth (`faultline bench accuracy`): a
// confusion matrix over the final primary diagnosis, per-class precision / recall / F1,
// macro-F1, component accuracy, time from fault start to the first correct diagnosis,
// and wrong hardware actions. Pure: runs in, numbers out.
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
};

AccuracyReport ScoreRuns(const std::vector<ScenarioRun>& runs);

}  // namespace faultline::sim
