// libFuzzer target: arbitrary bytes as a kernel log stream (split into chunks at the
// first byte's choice) through reader, assembler, dedup and the kernel detector; and the
// same bytes as a /dev/kmsg record.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/detect/kernel_detector.h"
#include "sources/kmsg/devkmsg.h"
#include "sources/kmsg/log_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  faultline::KernelLogOptions options;
  options.reference_ns = 1'700'000'000'000'000'000;
  options.max_line_bytes = 512;
  auto reader = faultline::KernelLogReader::Create(options);
  if (!reader.ok()) __builtin_trap();
  for (size_t i = 0; i < text.size(); i += chunk) (*reader)->Feed(text.substr(i, chunk));
  (*reader)->Finish();
  faultline::KernelDetector detector;
  for (const auto& o : (*reader)->TakeObservations()) detector.Observe(o);
  for (const auto& f : detector.Findings()) {
    if (f.count == 0 || f.last_ns < f.first_ns) __builtin_trap();
  }
  (void)faultline::ParseKmsgRecord(text);
  return 0;
}
