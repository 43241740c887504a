// libFuzzer target for the amdgpu kernel-line forms: any bytes after the "amdgpu <bdf>:"
// prefix (and as a whole message) classify or not, never crash or read outside the input;
// every view the event holds lies inside the message (detail may be the static "umc").
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "parse/amdgpu_line.h"
#include "parse/kernel_line.h"

namespace {

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string prefixed = "amdgpu 0000:0c:00.0: " + std::string(in);
  for (std::string_view msg : {in, std::string_view(prefixed)}) {
    const faultline::KernelEvent ev = faultline::ClassifyKernelMessage(msg);
    if (ev.type != faultline::KernelEventType::kAmdgpu) continue;
    if (ev.event.empty()) __builtin_trap();
    for (std::string_view v : {ev.process, ev.pid, ev.device, ev.message}) {
      if (!Inside(v, msg)) __builtin_trap();
    }
    // detail is a view, or the static "umc" of the CPU-attached UMC form (amdgpu_line.h).
    if (!Inside(ev.detail, msg) && ev.detail != "umc") __builtin_trap();
  }
  return 0;
}
