// libFuzzer target for the fake AMD SMI state file parser: any bytes yield a state or a
// kCorrupt status with a message, never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/fake_amdsmi/fake_amdsmi_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace F = faultline::fake_amdsmi;
  auto state = F::ParseFakeAmdsmiState(std::string_view(reinterpret_cast<const char*>(data), size));
  if (state.ok()) {
    if (state->gpus.size() > F::kMaxGpus) __builtin_trap();
    for (const auto& g : state->gpus) {
      if (g.bad_reserved && *g.bad_reserved + *g.bad_pending + *g.bad_unreservable > F::kMaxBadPages) __builtin_trap();
    }
  } else if (state.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
