// libFuzzer target for the operator topology file parser and its look-ups.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parse/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = faultline::ParseTopology(text);
  if (!t.ok()) return 0;
  // Exercise every look-up on whatever parsed.
  for (const auto& g : t->gpus) {
    for (const auto& l : g.nvlinks) {
      (void)t->FindNvlink(g.index, l.link);
      (void)t->GpuLinksOnSwitchPort(l.nvswitch, l.port);
    }
  }
  for (const auto& p : t->ib_ports) {
    (void)t->FindIbBySwitchPort(p.switch_name, p.switch_port);
    (void)t->ExpectedIbRate(p.device, p.port);
  }
  for (const auto& s : t->pcie_slots) (void)t->RiserFor(s.slot, s.bdf);
  for (const auto& s : t->nvswitches) (void)t->NvswitchName(s.bdf);
  return 0;
}
