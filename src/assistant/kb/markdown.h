// The knowledge base's Markdown reader (docs/assistant.md "Knowledge base"): one kb/*.md file
// -> its metadata (front matter) and its sections, the unit the index stores and the
// assistant quotes. Pure, bounded and safe on any bytes: files are written by people and may
// be damaged or hostile, and their text ends up in a model's prompt as quoted data.
//
// Format (everything optional):
//   ---                       front matter: the first line is exactly "---", then at most
//   kind: runbook             kMaxFrontMatterLines "key: value" lines, closed by "---".
//   class: gpu_fell_off_bus   Keys read: kind, class, component, codes, title; others ignored.
//   component: gpu, pcie      Lists are separated by commas or spaces.
//   codes: xid:79, sxid:20034
//   ---
//   # Title                   the first level-1 heading (when front matter gives no title)
//   intro text                section "" (before the first level-2 heading)
//   ## Symptoms               each level-2 heading starts a section; deeper headings stay
//   ...                       inside it; headings inside ``` / ~~~ fences are text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::assistant::kb {

inline constexpr size_t kMaxFileBytes = 1 << 20;              // larger files are refused
inline constexpr size_t kMaxSections = 256;                   // per file; the rest is dropped (counted)
inline constexpr size_t kMaxIndexedSectionBytes = 64 * 1024;  // terms come from at most this much
inline constexpr size_t kMaxHeadingBytes = 200;               // a longer heading is cut
inline constexpr size_t kMaxFrontMatterLines = 32;            // past this the block is not front matter
inline constexpr size_t kMaxFieldValues = 32;                 // values per list field
inline constexpr size_t kMaxFieldValueBytes = 64;             // a longer value is dropped

struct KbSection {
  std::string heading;  // "" for the text before the first level-2 heading
  std::string anchor;   // lower-case slug of the heading, unique within the file ("" for the intro)
  std::string text;     // the section's text (heading line excluded), at most kMaxIndexedSectionBytes
  bool truncated = false;
};

struct KbFile {
  std::string kind;  // front matter `kind` ("" when absent)
  std::string title;
  std::vector<std::string> classes;     // fault class names
  std::vector<std::string> components;  // component types / words ("gpu", "psu", "nvlink")
  std::vector<std::string> codes;       // "xid:79", "sxid:20034" (lower case)
  std::vector<KbSection> sections;
  size_t sections_dropped = 0;  // past kMaxSections
};

// Makes `text` safe to store and quote: invalid UTF-8 bytes become '?', NUL and control
// characters other than newline and tab become spaces, CR is dropped.
std::string SanitizeText(std::string_view text);

// Cuts `text` to at most `max_bytes` without splitting a UTF-8 sequence.
std::string_view CutUtf8(std::string_view text, size_t max_bytes);

// "What confirms it" -> "what-confirms-it"; at most 64 bytes; "" when nothing is left.
std::string Slugify(std::string_view heading);

// Parses one file's bytes. kInvalidArgument when it exceeds kMaxFileBytes; anything else
// (binary junk, no headings, unterminated fences or front matter) parses to something.
Result<KbFile> ParseKbMarkdown(std::string_view bytes);

}  // namespace faultline::assistant::kb
