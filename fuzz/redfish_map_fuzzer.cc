// libFuzzer target: arbitrary bytes -> JSON (through the BMC parser's depth check) ->
// every Redfish mapping, the plausibility marking, then the OOB detectors. Must never
// crash or throw past the mapping (which promises not to throw).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/detect/oob_detectors.h"
#include "parse/redfish_map.h"
#include "parse/redfish_registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = redfish::ParseBmcJson(text);
  if (!parsed.ok()) return 0;
  const redfish::Json& j = *parsed;
  redfish::MapContext ctx;
  ctx.node = "fuzz";
  ctx.chassis = "c";
  ctx.offset_known = true;
  ctx.bmc_offset_ns = 1;
  redfish::MapResult r = redfish::MapResource(j, ctx);
  r.Append(redfish::MapLogEntry(j, ctx, "log"));
  r.Append(redfish::MapEvent(j, ctx));
  r.Append(redfish::MapPowerSupplyMetrics(j, ctx, "psu"));
  (void)redfish::EstimateClockOffset(j, 0);
  if (j.is_object() && j.contains("MessageId") && j["MessageId"].is_string()) {
    if (auto key = redfish::ParseMessageId(j["MessageId"].get<std::string>())) (void)redfish::LookupMessage(*key);
  }
  redfish::MarkImplausibleReadings(r.observations, r.warnings);
  auto detectors = MakeOobDetectors();
  for (const auto& o : r.observations) {
    for (auto& d : detectors) d->Observe(o);
  }
  for (auto& d : detectors) (void)d->Findings();
  return 0;
}
