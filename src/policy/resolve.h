// Closing an incident (`faultline resolve --diagnosis ID --fixed-by "..."`): the operator
// says the part is fixed. Resumes the Slurm node only when faultline drained it for this
// diagnosis and the drain is still faultline's (an operator's drain, or one made for another
// open diagnosis, is left alone), then stores a "resolved" row (ledger.h) so the policy and
// `check --slurm` stop acting on the incident and it can be found later.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actions/slurm.h"
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

// `slurm` may be null (no Slurm here: nothing to resume; the incident is still closed).
// `target_node` overrides the Slurm node recorded with the drain. Errors: kNotFound for an
// unknown diagnosis id; a failed resume is returned as the error and nothing is stored, so
// the operator can run it again.
Result<ResolveResult> ResolveIncident(Store& store, int64_t diagnosis_id, const std::string& fixed_by,
                                      actions::SlurmActuator* slurm, const std::string& target_node, int64_t now_ns);

}  // namespace faultline::policy
