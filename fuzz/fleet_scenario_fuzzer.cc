// libFuzzer target for fleet scenario files: any input must yield a checked scenario or a
// clear error, and a scenario that parses must run through the fleet simulator (a short
// stretch, bounded in nodes) with every envelope surviving the wire format.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fleet/wire.h"
#include "sim/fleet/fleet_scenario.h"
#include "sim/fleet/fleet_sim.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline::sim;
  auto sc = ParseFleetScenario(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!sc.ok()) {
    if (sc.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  for (size_t i = 1; i < sc->faults.size(); ++i) {
    if (sc->faults[i].at < sc->faults[i - 1].at) std::abort();  // sorted
  }
  for (const FleetFault& f : sc->faults) {
    if (f.until && *f.until <= f.at) std::abort();
    if (f.kind == FleetFaultKind::kStragglerGpu && (f.gpu < 0 || f.gpu >= sc->node.gpus)) std::abort();
  }
  if (sc->initial_driver.size() != sc->topology.nodes.size()) std::abort();
  // Bound the work per input: small fleets only, a short stretch of the timeline.
  if (sc->topology.nodes.size() > 256) return 0;
  FleetSim sim(*sc);
  std::vector<faultline::fleet::Envelope> out;
  sim.AdvanceTo(std::min(sc->duration_s, 30.0), out);
  sim.Flush(out);
  for (const auto& e : out) {
    auto back = faultline::fleet::Decode(faultline::fleet::Encode(e));
    if (!back.ok() || !(*back == e)) std::abort();
  }
  return 0;
}
