#include "core/json.h"

#include <algorithm>
#include <stdexcept>

#include "core/time.h"

namespace faultline {
namespace {

template <typename E, typename ParseFn>
E EnumFrom(const Json& j, const char* key, ParseFn parse) {
  const std::string s = j.at(key).get<std::string>();
  auto v = parse(s);
  if (!v) throw std::invalid_argument(std::string("unknown ") + key + " '" + s + "'");
  return *v;
}

// Integers through JsonInt: a hostile float must not reach get<T>()'s static_cast.
template <typename T>
T Get(const Json& v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return JsonInt<T>(v);
  } else {
    return v.get<T>();
  }
}

template <typename T>
void Optional(const Json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) out = Get<T>(*it);
}

template <typename T>
void OptionalField(const Json& j, const char* key, std::optional<T>& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) out = Get<T>(*it);
}

}  // namespace

int JsonNestingDepth(std::string_view text) {
  int depth = 0, max_depth = 0;
  JsonStructureScanner scan;
  for (char c : text) {
    if (!scan.Structural(c)) continue;
    if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

void to_json(Json& j, const ComponentRef& v) {
  j = Json{{"id", v.Id()}, {"type", ToString(v.type)}, {"name", v.name}};
  if (!v.keys.empty()) j["keys"] = v.keys;
}

void from_json(const Json& j, ComponentRef& v) {
  v.type = EnumFrom<ComponentType>(j, "type", ParseComponentType);
  Optional(j, "name", v.name);
  Optional(j, "keys", v.keys);
}

void to_json(Json& j, const Observation& v) {
  j = Json{{"time_ns", v.time_ns},     {"node", v.node},           {"layer", ToString(v.layer)},
           {"component", v.component}, {"kind", ToString(v.kind)}, {"source", ToString(v.source)},
           {"count", v.count}};
  if (v.mono_us) j["mono_us"] = *v.mono_us;
  if (v.seq) j["seq"] = *v.seq;
  if (v.value) j["value"] = *v.value;
  if (v.code) j["code"] = *v.code;
  if (!v.text.empty()) j["text"] = v.text;
  if (!v.raw.empty()) j["raw"] = v.raw;
  if (!v.attrs.empty()) j["attrs"] = v.attrs;
}

void from_json(const Json& j, Observation& v) {
  v.layer = EnumFrom<Layer>(j, "layer", ParseLayer);
  v.kind = EnumFrom<ObsKind>(j, "kind", ParseObsKind);
  v.source = EnumFrom<Source>(j, "source", ParseSource);
  v.component = j.at("component").get<ComponentRef>();
  Optional(j, "time_ns", v.time_ns);
  Optional(j, "node", v.node);
  OptionalField(j, "mono_us", v.mono_us);
  OptionalField(j, "seq", v.seq);
  OptionalField(j, "value", v.value);
  OptionalField(j, "code", v.code);
  Optional(j, "text", v.text);
  Optional(j, "raw", v.raw);
  Optional(j, "attrs", v.attrs);
  Optional(j, "count", v.count);
}

void to_json(Json& j, const Evidence& v) {
  j = Json{{"time_ns", v.time_ns},
           {"time", FormatIso8601(v.time_ns)},
           {"source", ToString(v.source)},
           {"component", v.component},
           {"text", v.text},
           {"count", v.count}};
  if (v.mono_us) j["mono_us"] = *v.mono_us;
}

void from_json(const Json& j, Evidence& v) {
  v.source = EnumFrom<Source>(j, "source", ParseSource);
  Optional(j, "time_ns", v.time_ns);
  OptionalField(j, "mono_us", v.mono_us);
  Optional(j, "component", v.component);
  Optional(j, "text", v.text);
  Optional(j, "count", v.count);
}

void to_json(Json& j, const Finding& v) {
  j = Json{{"layer", ToString(v.layer)},
           {"component", v.component},
           {"fault_class", ToString(v.fault_class)},
           {"severity", ToString(v.severity)},
           {"action", ToString(v.action)},
           {"confidence", v.confidence},
           {"first_ns", v.first_ns},
           {"last_ns", v.last_ns},
           {"count", v.count},
           {"summary", v.summary},
           {"evidence", v.evidence}};
  if (!v.attrs.empty()) j["attrs"] = v.attrs;
  if (!v.key.empty()) j["key"] = v.key;
}

void from_json(const Json& j, Finding& v) {
  v.layer = EnumFrom<Layer>(j, "layer", ParseLayer);
  v.fault_class = EnumFrom<FaultClass>(j, "fault_class", ParseFaultClass);
  v.severity = EnumFrom<Severity>(j, "severity", ParseSeverity);
  v.action = EnumFrom<Action>(j, "action", ParseAction);
  v.component = j.at("component").get<ComponentRef>();
  Optional(j, "confidence", v.confidence);
  Optional(j, "first_ns", v.first_ns);
  Optional(j, "last_ns", v.last_ns);
  Optional(j, "count", v.count);
  Optional(j, "summary", v.summary);
  Optional(j, "evidence", v.evidence);
  Optional(j, "attrs", v.attrs);
  Optional(j, "key", v.key);
}

void to_json(Json& j, const RuledOut& v) {
  j = Json{{"layer", ToString(v.layer)}, {"reason", v.reason}, {"evidence", v.evidence}};
}

void from_json(const Json& j, RuledOut& v) {
  v.layer = EnumFrom<Layer>(j, "layer", ParseLayer);
  Optional(j, "reason", v.reason);
  Optional(j, "evidence", v.evidence);
}

void to_json(Json& j, const Diagnosis& v) {
  j = Json{{"fault_class", ToString(v.fault_class)},
           {"layer", ToString(v.layer)},
           {"component", v.component},
           {"action", ToString(v.action)},
           {"confidence", v.confidence},
           {"severity", ToString(v.severity)},
           {"first_ns", v.first_ns},
           {"last_ns", v.last_ns},
           {"summary", v.summary},
           {"evidence", v.evidence},
           {"ruled_out", v.ruled_out},
           {"explains", v.explains}};
  if (v.slowdown_ratio > 0) j["slowdown_ratio"] = v.slowdown_ratio;
}

void from_json(const Json& j, Diagnosis& v) {
  v.fault_class = EnumFrom<FaultClass>(j, "fault_class", ParseFaultClass);
  v.layer = EnumFrom<Layer>(j, "layer", ParseLayer);
  v.action = EnumFrom<Action>(j, "action", ParseAction);
  v.component = j.at("component").get<ComponentRef>();
  if (j.contains("severity")) v.severity = EnumFrom<Severity>(j, "severity", ParseSeverity);
  Optional(j, "confidence", v.confidence);
  Optional(j, "first_ns", v.first_ns);
  Optional(j, "last_ns", v.last_ns);
  Optional(j, "summary", v.summary);
  Optional(j, "evidence", v.evidence);
  Optional(j, "ruled_out", v.ruled_out);
  Optional(j, "explains", v.explains);
  Optional(j, "slowdown_ratio", v.slowdown_ratio);
}

}  // namespace faultline
