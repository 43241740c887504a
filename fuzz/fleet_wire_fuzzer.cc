// libFuzzer target for the fleet wire format (src/fleet/wire.h): any bytes either decode
// or fail with kCorrupt / kInvalidArgument / kUnsupported, never crash or throw. What
// decodes must re-encode to bytes that decode to the same envelope (the round trip), and
// is then fed to a fleet analyzer, as the `faultline fleet` consumer does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fleet/analyzer.h"
#include "fleet/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  using namespace faultline::fleet;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  WireLimits limits;
  limits.max_observations = 512;
  limits.max_field_bytes = 4096;
  auto e = Decode(bytes, limits);
  if (!e.ok()) {
    const StatusCode c = e.status().code();
    if (c != StatusCode::kCorrupt && c != StatusCode::kInvalidArgument && c != StatusCode::kUnsupported) std::abort();
    return 0;
  }
  auto again = Decode(Encode(*e));
  if (!again.ok()) std::abort();
  // NaN values compare unequal to themselves; compare the re-encoding instead.
  if (Encode(*again) != Encode(*e)) std::abort();
  FleetAnalyzer analyzer(FleetTopology{});
  analyzer.Ingest(*e);
  analyzer.Ingest(*e);
  (void)analyzer.Evaluate(e->sent_ns);
  FleetAnalyzer restored(FleetTopology{});
  if (!restored.Restore(analyzer.Snapshot()).ok()) std::abort();
  return 0;
}
