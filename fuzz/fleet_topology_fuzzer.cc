// libFuzzer target for the fleet topology file parser (src/fleet/fleet_topology.h) and its
// look-ups: any bytes parse or fail with kCorrupt / kInvalidArgument, never crash or throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fleet/fleet_topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = fleet::ParseFleetTopology(text);
  if (!t.ok()) {
    const StatusCode c = t.status().code();
    if (c != StatusCode::kCorrupt && c != StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  for (const auto& n : t->nodes) {
    if (t->FindNode(n.name) == nullptr) std::abort();
    (void)t->CablesOf(n.name);
  }
  for (const auto& c : t->cables) {
    for (const auto* e : {&c.a, &c.b}) {
      if (e->node.empty() == e->switch_name.empty()) std::abort();  // exactly one, as parsed
      if (!e->node.empty() && t->CablesOf(e->node, e->device, e->port).empty()) std::abort();
    }
  }
  return 0;
}
