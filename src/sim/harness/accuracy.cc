#include "sim/harness/accuracy.h"

#include <algorithm>

namespace faultline::sim {
namespace {

std::string Predicted(const ScenarioRun& r) {
  return r.final_diagnoses.empty() ? "(none)" : std::string(ToString(r.final_diagnoses.front().fault_class));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string RunLabel(const ScenarioRun& run) {
  return run.phase > 0 ? run.name + "#" + std::to_string(run.phase) : run.name;
}

AccuracyReport ScoreRuns(const std::vector<ScenarioRun>& runs) {
  AccuracyReport rep;
  rep.scenarios = static_cast<int>(runs.size());
  int class_ok = 0, component_ok = 0;
  std::vector<double> ttd;
  std::vector<double> first_decision;
  for (const ScenarioRun& r : runs) {
    const std::string truth(ToString(r.truth.fault_class));
    const std::string got = Predicted(r);
    ++rep.confusion[truth][got];
    ++rep.classes[truth].support;
    ++rep.classes[got].predicted;
    if (truth == got) {
      ++rep.classes[truth].correct;
      ++class_ok;
    }
    if (r.final_correct_class && r.final_correct_component) {
      ++component_ok;
    } else {
      std::string miss = RunLabel(r) + ": truth " + truth + ", got " + got;
      if (!r.final_diagnoses.empty()) miss += " on " + r.final_diagnoses.front().component.Id();
      rep.misses.push_back(std::move(miss));
    }
    if (r.first_correct_s) {
      ttd.push_back(std::max(0.0, *r.first_correct_s - r.truth.start_s));
      ++rep.diagnosed;
    }
    rep.wrong_decisions += r.decisions.wrong;
    for (const std::string& w : r.decisions.wrong_details) rep.wrong_decision_details.push_back(RunLabel(r) + ": " + w);
    rep.flaps_mean += static_cast<double>(r.flaps) / static_cast<double>(runs.size());
    rep.flaps_max = std::max(rep.flaps_max, r.flaps);
    if (r.decisions.first_correct_s) {
      first_decision.push_back(std::max(0.0, *r.decisions.first_correct_s - r.truth.start_s));
      ++rep.decided;
    }
    rep.agent_tick_ms_mean += r.agent_tick_ms_mean / static_cast<double>(runs.size());
    rep.agent_tick_ms_max = std::max(rep.agent_tick_ms_max, r.agent_tick_ms_max);
    if (!r.wrong_hardware_actions.empty()) {
      ++rep.wrong_hardware_actions;
      for (const std::string& w : r.wrong_hardware_actions) rep.wrong_action_details.push_back(RunLabel(r) + ": " + w);
    }
  }
  double f1_sum = 0;
  int f1_classes = 0;
  for (auto& [name, c] : rep.classes) {
    c.precision = c.predicted ? static_cast<double>(c.correct) / c.predicted : 0;
    c.recall = c.support ? static_cast<double>(c.correct) / c.support : 0;
    c.f1 = c.precision + c.recall > 0 ? 2 * c.precision * c.recall / (c.precision + c.recall) : 0;
    if (c.support > 0) {
      f1_sum += c.f1;
      ++f1_classes;
    }
  }
  rep.macro_f1 = f1_classes ? f1_sum / f1_classes : 0;
  rep.primary_accuracy = runs.empty() ? 0 : static_cast<double>(class_ok) / static_cast<double>(runs.size());
  rep.component_accuracy = runs.empty() ? 0 : static_cast<double>(component_ok) / static_cast<double>(runs.size());
  rep.ttd_median_s = Median(ttd);
  rep.ttd_max_s = ttd.empty() ? 0 : *std::max_element(ttd.begin(), ttd.end());
  rep.final_misses = static_cast<int>(rep.misses.size());
  rep.first_decision_median_s = Median(first_decision);
  rep.first_decision_max_s =
      first_decision.empty() ? 0 : *std::max_element(first_decision.begin(), first_decision.end());
  return rep;
}

}  // namespace faultline::sim
