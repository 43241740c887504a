// libFuzzer target for the workload endpoint's listen address and its bind policy
// (sources/workload/http_server.h): any text gives an address or a Status, never a crash,
// and a parsed address that is not loopback is never accepted without a token.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sources/workload/http_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto address = faultline::ParseListenAddress(text);
  if (!address.ok()) return 0;
  if (address->port < 0 || address->port > 65535 || address->host.empty()) __builtin_trap();
  if (!address->loopback && faultline::CheckListenPolicy(*address, false).ok()) __builtin_trap();
  if (!faultline::CheckListenPolicy(*address, true).ok()) __builtin_trap();
  return 0;
}
