// Closing an incident (`faultline resolve --diagnosis ID --fixed-by "..."`): the operator
// says the part is fixed. Returns the node to service (Slurm resume, Kubernetes uncordon:
// actions::Reverter) only when faultline drained or cordoned it for this diagnosis of this
// store's node (ids are per store: the platform's mark names node and id) and the drain is
// still faultline's (an operator's drain, one made for another diagnosis or another node's
// diagnosis with the same id, or a Slurm reason from before tags named the node, is left
// alone with a note saying why), then stores a "resolved" row (ledger.h) so the policy and
// `check --slurm` stop acting on the incident and it can be found later.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "core/status.h"
#include "store/records.h"

namespace faultline {
class Store;
}

namespace faultline::policy {

struct ResolveResult {
  Row<Diagnosis> diagnosis;
  bool already_resolved = false;
  bool resumed = false;
  std::string target_node;
  std::vector<std::string> notes;  // what was done or left alone, and why
};

// `platform` may be null (no platform here: nothing to return to service; the incident is
// still closed). `target_node` overrides the platform node recorded with the drain. Errors:
// kNotFound for an unknown diagnosis id; a failed resume is returned as the error and
// nothing is stored, so the operator can run it again.
Result<ResolveResult> ResolveIncident(Store& store, int64_t diagnosis_id, const std::string& fixed_by,
                                      actions::Reverter* platform, const std::string& target_node, int64_t now_ns);

}  // namespace faultline::policy
