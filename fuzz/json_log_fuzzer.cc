// libFuzzer target: arbitrary bytes as a journal or dmesg JSON log (parse/json_log.h),
// fed in two pieces split at a byte the input chooses; every line it emits must end in a
// newline and hold no control character but a tab.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "parse/json_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto form = (data[0] & 1) ? faultline::JsonLogForm::kDmesg : faultline::JsonLogForm::kJournal;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  faultline::SniffJsonLog(text);
  faultline::JsonLogToText conv(form, 512);
  std::string out;
  const size_t split = size > 2 ? data[1] % text.size() : 0;
  conv.Feed(text.substr(0, split), out);
  conv.Feed(text.substr(split), out);
  if (!out.empty() && out.back() != '\n') __builtin_trap();
  for (char c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\t') __builtin_trap();
  }
  const auto& s = conv.stats();
  if (s.records > size) __builtin_trap();
  return 0;
}
