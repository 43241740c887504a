// libFuzzer target: arbitrary text through the ipmitool / ipmi-sel parser and the OOB
// event detector. Bad rows must become errors, never crashes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/detect/oob_detectors.h"
#include "sources/ipmi/sel_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ipmi::SelParseOptions options;
  options.max_line_bytes = 1024;
  ipmi::SelParseResult r = ipmi::ParseSelText(text, options);
  auto detector = MakeOobEventDetector({});
  for (const auto& o : r.observations) detector->Observe(o);
  (void)detector->Findings();
  (void)ipmi::SplitSensorField(text.substr(0, 256));
  return 0;
}
