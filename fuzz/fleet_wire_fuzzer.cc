// libFuzzer target for the fleet wire format (src/fleet/wire.h): any bytes either decode
// or fail with kCorrupt / kInvalidArgument / kUnsupported, never crash or throw. What
// decodes must re-encode to bytes that decode to the same envelope (the round trip), and
// is then fed to a fleet analyzer, as the `faultline fleet` consumer does. DecodeInto an
// envelope that held another message gives the same answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
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
  // Into an envelope that held another message (the consumer loop reuses one): the same
  // answer, whatever that message left behind.
  static const std::string kEarlier = [] {
    Envelope p;
    p.place.node = "earlier";
    p.msg_id = "earlier/obs/1-2";
    for (int i = 0; i < 2; ++i) {
      Observation o;
      o.node = "a node name past the small-string buffer";
      o.mono_us = o.code = 7;
      o.value = 1.5;
      o.seq = 9;
      o.text = o.raw = std::string(40, 'x');
      o.component.keys = {{"uuid", "GPU-1"}, {"bdf", "0000:1b:00.0"}};
      o.attrs = {{"a", "1"}, {"b", "2"}, {"c", std::string(30, 'y')}};
      p.observations.push_back(o);
      p.observation_ids.push_back(i + 1);
    }
    return Encode(p);
  }();
  Envelope reused;
  if (!DecodeInto(kEarlier, reused).ok()) std::abort();
  const Status into = DecodeInto(bytes, reused, limits);
  if (into.code() != (e.ok() ? StatusCode::kOk : e.status().code())) std::abort();
  if (e.ok() && Encode(reused) != Encode(*e)) std::abort();
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
