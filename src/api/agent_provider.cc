#include "api/agent_provider.h"

#include <algorithm>
#include <string>

#include "policy/actuators.h"
#include "policy/resolve.h"

namespace faultline::api {

AgentProvider::AgentProvider(daemon::Agent& agent, const Clock& clock, Store* reader)
    : StoreProvider(reader != nullptr ? *reader : agent.store(),
                    StoreProviderOptions{.node = agent.node(),
                                         .clock = &clock,
                                         .writable = true,
                                         .writer = &agent.store(),
                                         .retriever = agent.knowledge_base()}),
      agent_(agent),
      clock_(clock) {}

Result<std::vector<SourceHealth>> AgentProvider::Sources(int64_t /*since_ns*/) {
  std::vector<SourceHealth> out;
  for (const daemon::SourceStatus& s : agent_.SourceStatuses()) {
    // Agent source names use '_' where the Source enum's names use '-' (dcgm_exporter).
    std::string name = s.name;
    std::replace(name.begin(), name.end(), '_', '-');
    const std::optional<Source> source = ParseSource(name);
    if (!source) continue;
    out.push_back(SourceHealth{.source = *source,
                               .up = s.up,
                               .last_success_ns = s.last_success_ns,
                               .errors = s.errors,
                               .error = s.failing ? std::optional<std::string>(s.error) : std::nullopt});
  }
  return out;
}

Result<std::optional<AgentState>> AgentProvider::Sight() { return std::optional<AgentState>(agent_.Sight()); }

std::optional<RemediationCounters> AgentProvider::Remediation() {
  const daemon::RemediationStats s = agent_.stats().remediation;
  return RemediationCounters{.decisions_stored = s.decisions_stored,
                             .errors = s.errors,
                             .queued = s.queued,
                             .coalesced = s.coalesced,
                             .dropped = s.dropped,
                             .abandoned = s.abandoned,
                             .max_queued = s.max_queued};
}

std::optional<daemon::LatencyHistogram> AgentProvider::EvaluationLatency() { return agent_.stats().evaluation_latency; }

std::vector<std::pair<std::string, uint64_t>> AgentProvider::AssistantCounters() {
  if (agent_.investigator() == nullptr) return {};
  const daemon::InvestigatorStats s = agent_.stats().investigations;
  return {{"answered", s.answered},       {"failed", s.failures}, {"cancelled", s.cancelled},
          {"over_budget", s.over_budget}, {"dropped", s.dropped}, {"coalesced", s.coalesced},
          {"store_error", s.store_errors}};
}

Result<Json> AgentProvider::Resolve(int64_t diagnosis_id, const std::string& fixed_by) {
  const policy::PolicyConfig& policy = agent_.config().policy;
  // The platform the agent's own policy acts on (its own actuators: they are used by the
  // evaluating thread, and a resolve must not wait for a drain in progress).
  auto platform = policy::BuildActuators(policy);
  if (!platform.ok()) return platform.status();
  // Kubernetes names its node itself (kubernetes_node, else the one recorded with the cordon).
  const std::string target = policy.platform == "slurm" ? policy.slurm_node : "";
  auto r = policy::ResolveIncident(agent_.store(), diagnosis_id, fixed_by, (*platform)->reverter(), target,
                                   clock_.NowNs());
  if (!r.ok()) return r.status();
  agent_.RequestEvaluationNow();  // the policy sees the resolution at once
  return Json{{"resolved", diagnosis_id},
              {"already_resolved", r->already_resolved},
              {"resumed", r->resumed},
              {"target_node", r->target_node},
              {"notes", r->notes}};
}

Status AgentProvider::Reevaluate() {
  agent_.RequestEvaluationNow();
  return Status::Ok();
}

}  // namespace faultline::api
