#include "actions/fleet_actor.h"

#include <algorithm>

namespace faultline::actions {

Decision FleetDecision(const fleet::FleetDiagnosis& f, int64_t now_ns) {
  Decision d;
  d.key = "fleet|" + f.id;
  d.node = "fleet";
  d.target_node = f.component;
  d.action_class = ActionClass::kWebhook;
  d.rule = "fleet_shared_cause";
  d.time_ns = now_ns;
  d.evidence = f.linked;
  Diagnosis& g = d.diagnosis;
  g.fault_class = f.fault_class;
  g.action = f.action;
  g.severity = f.severity;
  g.confidence = f.confidence;
  g.first_ns = f.first_ns;
  g.last_ns = f.last_ns;
  // The fleet's part ("pdu/r12-a") is no node component: carried whole as the name.
  g.component = ComponentRef{ComponentType::kHost, f.component, {{"fleet_cause", f.cause}, {"fleet_id", f.id}}};
  g.summary = f.summary.empty()
                  ? f.cause + " " + f.component + " shared by " + std::to_string(f.nodes.size()) + " node(s)"
                  : f.summary;
  g.evidence = f.evidence;
  return d;
}

namespace {
constexpr int64_t kRetryInitialNs = int64_t{30} * 1'000'000'000;
constexpr int64_t kRetryMaxNs = int64_t{900} * 1'000'000'000;
constexpr size_t kMaxFailed = 10'000;  // a receiver down for days does not grow this without end
}  // namespace

FleetActOutcome FleetActor::Post(const Decision& d, const std::string& what, int attempt, int64_t now_ns) {
  FleetActOutcome out;
  out.key = d.key;
  out.dry_run = false;
  out.status = webhook_->Apply(d);
  if (out.status.ok()) {
    out.detail = "posted " + what;
    done_.insert(d.key);
    failed_.erase(d.key);
    return out;
  }
  out.detail = "attempt " + std::to_string(attempt) + ": " + out.status.message();
  int64_t backoff = kRetryInitialNs;
  for (int i = 1; i < attempt && backoff < kRetryMaxNs; ++i) backoff *= 2;
  if (failed_.count(d.key) || failed_.size() < kMaxFailed) {
    failed_[d.key] = Failed{d, what, attempt, now_ns + std::min(backoff, kRetryMaxNs)};
  }
  return out;
}

std::optional<FleetActOutcome> FleetActor::OnDiagnosis(const fleet::FleetDiagnosis& f, int64_t now_ns) {
  if (f.cause == "straggler" || f.cause.empty() || f.action <= Action::kMonitor) return std::nullopt;
  const Decision d = FleetDecision(f, now_ns);
  if (done_.count(d.key) || failed_.count(d.key)) return std::nullopt;  // a failed one waits for RetryDue
  const std::string what = "webhook for " + f.cause + " " + f.component + " (" + std::to_string(f.nodes.size()) +
                           " node(s), " + std::to_string(f.linked.size()) + " linked diagnosis(es))";
  if (!act_ || webhook_ == nullptr) {
    done_.insert(d.key);
    return FleetActOutcome{d.key, true, Status::Ok(), "would post " + what};
  }
  return Post(d, what, 1, now_ns);
}

std::vector<FleetActOutcome> FleetActor::RetryDue(int64_t now_ns) {
  std::vector<Failed> due;
  for (const auto& [key, f] : failed_) {
    if (now_ns >= f.next_ns) due.push_back(f);
  }
  std::vector<FleetActOutcome> out;
  for (const Failed& f : due) out.push_back(Post(f.decision, f.what, f.attempt + 1, now_ns));
  return out;
}

}  // namespace faultline::actions
