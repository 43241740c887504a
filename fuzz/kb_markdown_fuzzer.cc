// libFuzzer target: one knowledge-base Markdown file through the section splitter
// (src/assistant/kb/markdown.h), with its invariants: bounded sections and headings, unique
// anchors, text that is already clean UTF-8, and query-side term extraction on the same bytes.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "assistant/kb/markdown.h"
#include "assistant/kb/terms.h"

namespace kb = faultline::assistant::kb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto file = kb::ParseKbMarkdown(bytes);
  if (!file.ok()) {
    if (size <= kb::kMaxFileBytes) __builtin_trap();  // only oversized input is refused
    return 0;
  }
  if (file->sections.size() > kb::kMaxSections) __builtin_trap();
  if (file->title.size() > kb::kMaxHeadingBytes) __builtin_trap();
  std::set<std::string> anchors;
  for (const kb::KbSection& s : file->sections) {
    if (s.text.size() > kb::kMaxIndexedSectionBytes || s.heading.size() > kb::kMaxHeadingBytes) __builtin_trap();
    if (kb::SanitizeText(s.text) != s.text || kb::SanitizeText(s.heading) != s.heading) __builtin_trap();
    if (!s.anchor.empty() && !anchors.insert(s.anchor).second) __builtin_trap();
    if (kb::CutUtf8(s.text, 4096).size() > 4096) __builtin_trap();
  }
  for (const auto* list : {&file->classes, &file->components, &file->codes}) {
    if (list->size() > kb::kMaxFieldValues) __builtin_trap();
    for (const std::string& v : *list) {
      if (v.empty() || v.size() > kb::kMaxFieldValueBytes) __builtin_trap();
    }
  }
  for (const std::string& w : kb::Words(bytes)) {
    if (w.empty() || w.size() > kb::kMaxWordBytes) __builtin_trap();
  }
  (void)kb::CodesInQuery(bytes);
  return 0;
}
