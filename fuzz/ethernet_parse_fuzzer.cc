// libFuzzer target for the RoCE / Ethernet source's parsers (sources/ethernet/eth_parse.h):
// ethtool statistics files, operstate, speed, carrier, interface/RDMA names and the counter
// name tables. The first byte picks the parser so one corpus covers them all. Any input must
// give a value or a Status, never a crash; contracts are checked with __builtin_trap.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sources/ethernet/eth_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace faultline;  // NOLINT(build/namespaces)
  switch (data[0] % 6) {
    case 0: {
      auto r = ParseEthtoolStatsText(text);
      if (r.ok()) {
        if (r->empty() || r->size() > kMaxEthtoolStats) __builtin_trap();
        for (const EthtoolStat& s : *r) {
          if (!IsPlausibleStatName(s.name)) __builtin_trap();
        }
      }
      break;
    }
    case 1: {
      auto r = ParseSpeedMbps(text);
      if (r.ok() && (*r < 0 || *r > 10'000'000)) __builtin_trap();
      break;
    }
    case 2:
      (void)ParseOperstate(text);
      (void)ParseCarrier(text);
      break;
    case 3:
      // A name accepted as an interface never contains a path separator or "..".
      if (IsSafeInterfaceName(text) && (text.find('/') != std::string_view::npos || text == "..")) __builtin_trap();
      if (IsSafeRdmaName(text) && text.find('/') != std::string_view::npos) __builtin_trap();
      break;
    case 4: {
      auto e = LookupEthCounter(text);
      if (e && (e->priority < -1 || e->priority > 7 || e->canonical.empty())) __builtin_trap();
      break;
    }
    default: {
      auto r = LookupRoceCounter(text);
      if (r && r->canonical.empty()) __builtin_trap();
      break;
    }
  }
  return 0;
}
