// The API over a running agent (`[server] listen` in the agent's config): the agent's own
// store (read-write, so an operator's acknowledgement is stored), its clock for "now", and
// its live state where a stored run can only guess: per-source up/errors/last success, its
// blind state, the evaluation latency histogram and the remediation worker's counters.
//
// Reads go through `reader` when given: a second, read-only connection to the agent's store
// file (Store::Open with read_only), so an API query never holds the lock of the
// connection the agent's pipeline writes through (SQLite's WAL lets a reader and the writer
// run at once). Writes (acknowledgements, resolutions) go through the agent's own store.
#pragma once

#include <optional>
#include <vector>

#include "api/provider.h"
#include "daemon/agent.h"

namespace faultline::api {

class AgentProvider final : public StoreProvider {
 public:
  // `agent`, `clock` and `reader` (null: read through the agent's store) must outlive the
  // provider.
  AgentProvider(daemon::Agent& agent, const Clock& clock, Store* reader = nullptr);

  Result<std::vector<SourceHealth>> Sources(int64_t since_ns) override;
  // The agent's own (Agent::Sight), not the store's copy.
  Result<std::optional<AgentState>> Sight() override;
  std::optional<daemon::LatencyHistogram> EvaluationLatency() override;
  std::vector<std::pair<std::string, uint64_t>> AssistantCounters() override;
  std::optional<RemediationCounters> Remediation() override;
  // Through policy::ResolveIncident; on Slurm (the [policy] platform) the node is resumed
  // only when faultline drained it for this diagnosis.
  Result<Json> Resolve(int64_t diagnosis_id, const std::string& fixed_by) override;
  Status Reevaluate() override;

 private:
  daemon::Agent& agent_;
  const Clock& clock_;
};

}  // namespace faultline::api
