// JSON round trip for the core types (nlohmann-json ADL hooks). Field names are the
// public wire format used by `--json` output, saved snapshots and the store; keep them
// stable. from_json throws std::invalid_argument on unknown enum names; callers at a
// module boundary should use DecodeJson, which turns that into a Status.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/types.h"

namespace faultline {

using Json = nlohmann::json;

// An integer read from untrusted JSON. nlohmann's get<T>() turns a floating value into T
// with a static_cast, which is undefined behaviour when the value is out of T's range
// (1e30 as a time); this throws Json::out_of_range instead, which callers already catch
// with the library's other exceptions. Integral values convert as get<T>() does.
template <typename T>
T JsonInt(const Json& v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);  // max + 1, exact
    if (!(d >= lo && d < hi)) throw Json::out_of_range::create(406, "number out of range for an integer field", &v);
    return static_cast<T>(d);
  }
  return v.get<T>();
}

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
