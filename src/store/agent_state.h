// The agent's own health as it last recorded it in the store, for the readers that are not
// the agent: `faultline check --slurm` and `faultline serve` read the store, never the live
// agent, and must be able to tell "no fault" from "the agent sees nothing".
//
// Today this is one fact, whether the agent is blind (docs/agent.md "Blind"): every source
// it has is failing, so the absence of a fault means nothing. The agent writes it when the
// fact changes (blindness begins or ends), not at every evaluation.
//
// Where it lives: the store's key/value table of per-node state, `cursors` (the fleet
// publisher keeps its positions there too), under source "agent", key "state", as JSON. So
// no schema change: a store of any version holds it, and a read-only open reads it.
//
// Thread-safety: as Store's (the functions only call it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace faultline {

class Store;

// One source as the agent judged it when it recorded its state.
struct SourceSight {
  std::string source;  // the agent's name for it: "kmsg", "nvml", "dcgm_exporter", "redfish", ...
  bool failing = false;
  std::string error;                       // why it counts as failing; "" when it does not
  std::optional<int64_t> last_success_ns;  // its last successful poll (wall clock), if any
  bool operator==(const SourceSight&) const = default;
};

struct AgentState {
  bool blind = false;      // every source failing: no diagnosis, "none" included, can be trusted
  int64_t since_ns = 0;    // when the agent found itself so (blindness began, or sight came back)
  int64_t updated_ns = 0;  // when this record was written
  std::vector<SourceSight> sources;
  bool operator==(const AgentState&) const = default;
};

// The JSON text stored (and its reading back: kCorrupt when it is not such a record).
std::string EncodeAgentState(const AgentState& state);
Result<AgentState> DecodeAgentState(const std::string& text);

// Writes `state` as `node`'s (one small committed write; replaces the previous record).
Status PutAgentState(Store& store, const std::string& node, const AgentState& state);
// nullopt when the agent never recorded one (an older agent, or one that never judged yet);
// kCorrupt when the record cannot be read.
Result<std::optional<AgentState>> GetAgentState(Store& store, const std::string& node);

}  // namespace faultline
