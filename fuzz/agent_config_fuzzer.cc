// libFuzzer target for the agent's TOML config parser: any bytes must parse or fail
// with kInvalidArgument, never crash; an accepted config must hold its invariants.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "daemon/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // configs are small; deep inputs only slow the fuzzer
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = faultline::daemon::ParseAgentConfig(text);
  if (!config.ok()) {
    if (config.status().code() != faultline::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  const auto& c = *config;
  if (c.agent.store_path.empty() || c.agent.evaluate_interval_ns <= 0 || c.nvml.interval_ns <= 0 ||
      c.kmsg.interval_ns <= 0 || c.redfish.sweep_deadline_ns <= 0 || c.isolate.window_ns <= 0 ||
      c.agent.store_unchanged_heartbeat_ns <= 0) {
    std::abort();
  }
  return 0;
}
