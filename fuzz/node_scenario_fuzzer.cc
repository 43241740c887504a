// libFuzzer target for simulator scenario files: any input must yield a checked scenario
// or a clear error, and a scenario that parses must run through the node model (and its
// Redfish rendering) without crashing or breaking the model's invariants.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/node/bmc_tree.h"
#include "sim/node/node_model.h"
#include "sim/node/node_scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline::sim;
  auto sc = ParseNodeScenario(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!sc.ok()) {
    if (sc.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  for (size_t i = 1; i < sc->faults.size(); ++i) {
    if (sc->faults[i].at < sc->faults[i - 1].at) std::abort();  // sorted
  }
  for (const NodeFault& f : sc->faults) {
    if (f.gpu >= sc->node.gpus || f.psu > sc->node.psus || f.fan > sc->node.fans) std::abort();
    if (f.until && *f.until <= f.at) std::abort();
  }
  // Bound the work per input: a short stretch of the scenario.
  NodeModel model(*sc, DefaultNodeLayout(sc->node.gpus));
  model.AdvanceTo(std::min(sc->duration_s, 20.0), 1.0);
  const NodeState& s = model.state();
  if (s.gpus.size() != static_cast<size_t>(sc->node.gpus) || s.psus.size() != static_cast<size_t>(sc->node.psus)) {
    std::abort();
  }
  (void)RenderBmcResources(s, sc->node.psu_capacity_w);
  (void)model.TakeKmsg();
  (void)model.TakeSel();
  (void)model.TakeSteps();
  return 0;
}
