#include "daemon/remediation.h"

#include <utility>

namespace faultline::daemon {

Result<std::unique_ptr<Remediation>> Remediation::Create(const policy::PolicyConfig& config, Store& store,
                                                         std::string node, Logger& logger) {
  auto set = policy::BuildActuators(config, {.store = &store});
  if (!set.ok()) return set.status();
  auto r = std::make_unique<Remediation>(config, store, std::move(node), (*set)->actuators(), (*set)->fleet(), logger);
  r->owned_ = std::move(set).value();
  return r;
}

Remediation::Remediation(const policy::PolicyConfig& config, Store& store, std::string node,
                         std::vector<actions::Actuator*> actuators, actions::FleetView* fleet, Logger& logger)
    : config_(config),
      node_(node),
      engine_(config, store, std::move(node), std::move(actuators), fleet),
      logger_(logger) {}

void Remediation::AfterEvaluation(const EvaluateResult& result, int64_t now_ns) {
  if (!started_) {
    // The first call finishes what a crash left "decided" (Engine::Start) before anything new.
    started_ = true;
    auto out = engine_.Start(now_ns);
    if (!out.ok()) {
      ++stats_.errors;
      logger_.Error("policy: start: " + out.status().ToString());
    } else {
      for (const policy::Outcome& o : *out) Report(o);
    }
  }
  std::vector<Row<Diagnosis>> rows;
  if (result.diagnosis_stored && !result.diagnoses.empty()) {
    rows.push_back(Row<Diagnosis>{.id = result.diagnosis_id, .node = node_, .value = result.diagnoses.front()});
  }
  // Nothing new: held and failed decisions still deserve a look, but not at every
  // evaluation (a held drain reads the fleet each time it is looked at).
  if (rows.empty() && last_run_ns_ && now_ns - *last_run_ns_ < config_.retry_initial_ns) return;
  Run(rows, now_ns);
}

void Remediation::Run(const std::vector<Row<Diagnosis>>& rows, int64_t now_ns) {
  last_run_ns_ = now_ns;
  auto out = engine_.OnDiagnoses(rows, now_ns);
  if (!out.ok()) {
    ++stats_.errors;
    logger_.Error("policy: " + out.status().ToString() + " (the agent keeps diagnosing)");
    return;
  }
  for (const policy::Outcome& o : *out) Report(o);
}

void Remediation::Report(const policy::Outcome& o) {
  if (!o.changed) return;
  ++stats_.decisions_stored;
  const auto& d = o.decision;
  std::string line = "policy: " + std::string(actions::ToString(d.action_class)) + " for diagnosis " +
                     std::to_string(d.diagnosis_id) + " (" + std::string(ToString(d.diagnosis.fault_class)) + " " +
                     d.diagnosis.component.Id() + "): " + std::string(policy::ToString(o.state));
  if (!o.detail.empty()) line += ": " + o.detail;
  if (o.state == policy::State::kFailed) {
    logger_.Warn(line);
  } else {
    logger_.Info(line);
  }
}

}  // namespace faultline::daemon
