// libFuzzer target for the amdgpu RAS sysfs parsers (err_count, gpu_vram_bad_pages,
// features, integers): any bytes yield a value or a status with a message, never a crash,
// a hang or a sanitizer report; counts stay within their documented bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sources/amdsmi/amdgpu_sysfs_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace A = faultline::amdsmi;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = A::ParseRasErrCount(text);
  if (!c.ok() && c.status().message().empty()) __builtin_trap();
  auto p = A::ParseBadPages(text);
  if (p.ok() && p->total() > A::kMaxBadPageLines) __builtin_trap();
  if (!p.ok() && p.status().message().empty()) __builtin_trap();
  (void)A::ParseRasFeatures(text);
  (void)A::ParseSysfsInt(text);
  return 0;
}
