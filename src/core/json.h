// JSON round trip for the core types (nlohmann-json ADL hooks). Field names are the
// public wire format used by `--json` output, saved snapshots and the store; keep them
// stable. from_json throws std::invalid_argument on unknown enum names; callers at a
// module boundary should use DecodeJson, which turns that into a Status.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/types.h"

namespace faultline {

using Json = nlohmann::json;

void to_json(Json& j, const ComponentRef& v);
void from_json(const Json& j, ComponentRef& v);
void to_json(Json& j, const Observation& v);
void from_json(const Json& j, Observation& v);
void to_json(Json& j, const Evidence& v);
void from_json(const Json& j, Evidence& v);
void to_json(Json& j, const Finding& v);
void from_json(const Json& j, Finding& v);
void to_json(Json& j, const RuledOut& v);
void from_json(const Json& j, RuledOut& v);
void to_json(Json& j, const Diagnosis& v);
void from_json(const Json& j, Diagnosis& v);

// Deepest nesting of objects/arrays in `text`, ignoring brackets inside strings. JSON
// parsers recurse per level, so callers that read untrusted text check this first to keep
// hostile input from exhausting the stack.
int JsonNestingDepth(std::string_view text);

// Feeds JSON text one character at a time and says which characters are structural
// (outside strings, escapes respected), so bracket scanners need no parser.
class JsonStructureScanner {
 public:
  // True when `c` is outside any string and is not itself a quote.
  bool Structural(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return false;
    }
    if (c == '"') {
      in_string_ = true;
      return false;
    }
    return true;
  }

 private:
  bool in_string_ = false;
  bool escaped_ = false;
};

// Parses text into T; any syntax error, missing required field or unknown enum name
// becomes kCorrupt with the reason.
template <typename T>
Result<T> DecodeJson(std::string_view text) {
  try {
    return Json::parse(text).get<T>();
  } catch (const std::exception& e) {
    return Status(StatusCode::kCorrupt, e.what());
  }
}

}  // namespace faultline
