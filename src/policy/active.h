// The diagnoses a node still answers for (`faultline check --slurm`): the isolator's current
// primary (the newest stored diagnosis, unless "none"), plus every diagnosis faultline drained
// the node for that no operator has resolved yet. Resolved incidents are left out.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/records.h"

namespace faultline {
class Store;
}

namespace faultline::policy {

Result<std::vector<Row<Diagnosis>>> ActiveDiagnoses(Store& store, const std::string& node);

}  // namespace faultline::policy
