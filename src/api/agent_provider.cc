#include "api/agent_provider.h"

#include <algorithm>
#include <string>

namespace faultline::api {

AgentProvider::AgentProvider(daemon::Agent& agent, const Clock& clock)
    : StoreProvider(agent.store(), StoreProviderOptions{.node = agent.node(), .clock = &clock, .writable = true}),
      agent_(agent) {}

Result<std::vector<SourceHealth>> AgentProvider::Sources(int64_t /*since_ns*/) {
  std::vector<SourceHealth> out;
  for (const daemon::SourceStatus& s : agent_.SourceStatuses()) {
    // Agent source names use '_' where the Source enum's names use '-' (dcgm_exporter).
    std::string name = s.name;
    std::replace(name.begin(), name.end(), '_', '-');
    const std::optional<Source> source = ParseSource(name);
    if (!source) continue;
    out.push_back(SourceHealth{.source = *source, .up = s.up, .last_success_ns = s.last_success_ns, .errors = s.errors});
  }
  return out;
}

std::optional<daemon::LatencyHistogram> AgentProvider::EvaluationLatency() { return agent_.stats().evaluation_latency; }

}  // namespace faultline::api
