// libFuzzer target for the sysfs attribute parsers (AER counter files, IB counters,
// state/rate, link speed/width, PCI ids, counter saturation). The first byte picks the parser so one
// corpus covers them all. Any input must give a value or a Status, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sources/sysfs/counter_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace faultline;  // NOLINT(build/namespaces)
  switch (data[0] % 7) {
    case 0: {
      auto r = ParseAerCounters(text);
      if (r.ok() && r->empty()) __builtin_trap();  // contract: ok means at least one line
      break;
    }
    case 1: {
      // Saturation is only ever claimed at a width's maximum.
      auto r = ParseCounter(text);
      for (const char* name : {"link_downed", "symbol_error", "local_link_integrity_errors", "port_xmit_data"}) {
        if (r.ok() && IbCounterSaturated(name, *r) && *r != IbCounterMax(name) && *r != UINT32_MAX &&
            *r != UINT64_MAX) {
          __builtin_trap();
        }
      }
      break;
    }
    case 2: {
      auto r = ParseLinkSpeed(text);
      if (r.ok()) (void)PcieGenFromSpeed(*r);
      break;
    }
    case 3: {
      auto r = ParseLinkWidth(text);
      if (r.ok() && (*r < 0 || *r > 32)) __builtin_trap();
      break;
    }
    case 4:
      (void)ParseIbState(text);
      break;
    case 5:
      (void)ParseIbRate(text);
      break;
    default:
      (void)ParsePciId(text);
      break;
  }
  return 0;
}
