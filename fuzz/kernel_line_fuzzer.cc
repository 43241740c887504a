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
  // Every view the classifier returns must point into the input.
  for (std::string_view v :
       {ev.driver, ev.device, ev.pid, ev.process, ev.message, ev.severity, ev.detail, ev.source, ev.unit}) {
    if (!v.empty() && (v.data() < line.data() || v.data() + v.size() > line.data() + line.size())) __builtin_trap();
  }
  return 0;
}
