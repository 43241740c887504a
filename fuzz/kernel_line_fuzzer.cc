// libFuzzer target: one kernel-log line through the line-form parser and the classifier.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parse/kernel_line.h"
#include "parse/log_line.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  faultline::LogLine parsed = faultline::ParseLogLine(line, 1'700'000'000'000'000'000);
  faultline::KernelEvent ev = faultline::ClassifyKernelMessage(parsed.message);
  auto inside = [&](std::string_view v) {
    return v.empty() || (v.data() >= line.data() && v.data() + v.size() <= line.data() + line.size());
  };
  // Every view the classifier returns must point into the input, or be one of the
  // classifier's own derived constants (parse/kernel_line.h kernel_derived).
  auto derived = [](std::string_view v) {
    for (std::string_view c : faultline::kernel_derived::kAll) {
      if (v == c) return true;
    }
    return false;
  };
  for (std::string_view v : {ev.driver, ev.device, ev.ifname, ev.pid, ev.process, ev.message, ev.detail, ev.source,
                             ev.unit, ev.severity, faultline::MemoryErrorLocation(parsed.message)}) {
    if (!inside(v) && !derived(v)) __builtin_trap();
  }
  const std::string_view mca = faultline::McaSeverity(parsed.message);
  if (!mca.empty() && mca != faultline::kernel_derived::kMcaUncorrected &&
      mca != faultline::kernel_derived::kMcaCorrected) {
    __builtin_trap();
  }
  return 0;
}
