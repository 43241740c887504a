// The node isolator's answer for a window, from what the fleet analyzer holds about the
// node (node_state.h): the why-slow logic (daemon/why_slow.cc) without the node's store.
// The held readings and workload samples go through the same IsolateContext, the held
// findings (workload ones left out, as why-slow does) plus the workload detector's own
// verdict over the held samples go to BuildIsolateInput with slowdown_reported, and
// Isolate answers. Less context than the node's store (the latest reading of each held
// series, max_samples per workload series), the same rules.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"
#include "fleet/node_state.h"

namespace faultline::fleet {

std::vector<Diagnosis> IsolateHeldNode(const NodeState& node, int64_t since_ns, int64_t until_ns);

}  // namespace faultline::fleet
