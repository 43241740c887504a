// libFuzzer target for the fake NVML state file parser: any bytes must yield a state or
// a kCorrupt status, never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/fake_nvml/fake_nvml_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto state = faultline::fake_nvml::ParseFakeNvmlState(std::string_view(reinterpret_cast<const char*>(data), size));
  if (state.ok()) {
    // Touch what the fake library reads, so a half-built state would show up here.
    for (const auto& gpu : state->gpus) {
      if (gpu.nvlinks.size() > faultline::fake_nvml::kMaxLinks) __builtin_trap();
    }
    if (state->gpus.size() > faultline::fake_nvml::kMaxGpus) __builtin_trap();
  } else if (state.status().message().empty()) {
    __builtin_trap();  // every refusal says why
  }
  return 0;
}
