#include "sim/mock_bmc/scenario.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <initializer_list>
#include <set>
#include <string>

#include "core/json.h"
#include "sim/mock_bmc/yaml_json.h"

namespace faultline::sim {
namespace {

using nlohmann::json;

Status Corrupt(const std::string& what) { return Status(StatusCode::kCorrupt, "scenario: " + what); }

// nlohmann's parser is iterative, but the values it builds are torn down and walked
// recursively; refusing deep nesting up front keeps hostile files from exhausting the stack.
Result<json> ParseDocument(std::string_view text, const ScenarioLimits& limits) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    if (JsonNestingDepth(text) > limits.max_depth) return Corrupt("JSON nested deeper than the limit");
    json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return Corrupt("not valid JSON");
    return doc;
  }
  return YamlToJson(text, limits.max_depth, limits.max_nodes);
}

Status OnlyKeys(const json& obj, std::initializer_list<const char*> allowed, const std::string& where) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
      return Corrupt(where + ": unknown key '" + key + "'");
    }
  }
  return Status::Ok();
}

Status GetString(const json& obj, const char* key, bool required, std::string& out, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return required ? Corrupt(where + ": missing '" + key + "'") : Status::Ok();
  if (!it->is_string()) return Corrupt(where + ": '" + key + "' must be a string");
  out = it->get<std::string>();
  return Status::Ok();
}

Status GetNumber(const json& obj, const char* key, bool required, double& out, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return required ? Corrupt(where + ": missing '" + key + "'") : Status::Ok();
  if (!it->is_number()) return Corrupt(where + ": '" + key + "' must be a number");
  out = it->get<double>();
  if (!std::isfinite(out)) return Corrupt(where + ": '" + key + "' is not finite");
  return Status::Ok();
}

Status CheckUri(const std::string& uri, const std::string& where) {
  if (uri.rfind("/redfish/v1", 0) != 0) return Corrupt(where + ": resource must start with /redfish/v1");
  return Status::Ok();
}

Status CheckPointer(const std::string& pointer, const std::string& where) {
  try {
    json::json_pointer p(pointer);
    if (p.empty()) return Corrupt(where + ": pointer must name a member, not the whole resource");
  } catch (const std::exception& e) {
    return Corrupt(where + ": bad JSON pointer: " + e.what());
  }
  return Status::Ok();
}

Status ParseSet(const json& body, ScenarioStep& step, const std::string& where) {
  if (Status s = OnlyKeys(body, {"resource", "pointer", "value"}, where); !s.ok()) return s;
  if (Status s = GetString(body, "resource", true, step.resource, where); !s.ok()) return s;
  if (Status s = GetString(body, "pointer", true, step.pointer, where); !s.ok()) return s;
  if (!body.contains("value")) return Corrupt(where + ": missing 'value'");
  step.value = body["value"];
  if (Status s = CheckUri(step.resource, where); !s.ok()) return s;
  return CheckPointer(step.pointer, where);
}

Status ParseRamp(const json& body, ScenarioStep& step, const std::string& where) {
  if (Status s = OnlyKeys(body, {"resource", "pointer", "from", "to", "until"}, where); !s.ok()) return s;
  if (Status s = GetString(body, "resource", true, step.resource, where); !s.ok()) return s;
  if (Status s = GetString(body, "pointer", true, step.pointer, where); !s.ok()) return s;
  if (Status s = GetNumber(body, "to", true, step.to, where); !s.ok()) return s;
  if (Status s = GetNumber(body, "until", true, step.until, where); !s.ok()) return s;
  step.has_from = body.contains("from");
  if (Status s = GetNumber(body, "from", false, step.from, where); !s.ok()) return s;
  if (step.until <= step.at) return Corrupt(where + ": ramp 'until' must be after 'at'");
  if (Status s = CheckUri(step.resource, where); !s.ok()) return s;
  return CheckPointer(step.pointer, where);
}

Status ParseAppend(const json& body, ScenarioStep& step, const std::string& where) {
  if (Status s = OnlyKeys(body, {"collection", "member"}, where); !s.ok()) return s;
  if (Status s = GetString(body, "collection", true, step.resource, where); !s.ok()) return s;
  auto it = body.find("member");
  if (it == body.end() || !it->is_object()) return Corrupt(where + ": 'member' must be an object");
  step.value = *it;
  return CheckUri(step.resource, where);
}

Status ParseEvent(const json& body, ScenarioStep& step, const std::string& where) {
  if (Status s = OnlyKeys(
          body, {"MessageId", "MessageArgs", "MessageSeverity", "Message", "OriginOfCondition", "EventTimestamp"},
          where);
      !s.ok()) {
    return s;
  }
  BmcEvent& ev = step.event;
  if (Status s = GetString(body, "MessageId", true, ev.message_id, where); !s.ok()) return s;
  if (Status s = GetString(body, "MessageSeverity", false, ev.severity, where); !s.ok()) return s;
  if (Status s = GetString(body, "Message", false, ev.message, where); !s.ok()) return s;
  if (Status s = GetString(body, "EventTimestamp", false, ev.timestamp, where); !s.ok()) return s;
  if (auto it = body.find("OriginOfCondition"); it != body.end()) {
    const json& o = it->is_object() && it->contains("@odata.id") ? (*it)["@odata.id"] : *it;
    if (!o.is_string()) return Corrupt(where + ": OriginOfCondition must be a URI or {\"@odata.id\": URI}");
    ev.origin = o.get<std::string>();
  }
  if (auto it = body.find("MessageArgs"); it != body.end()) {
    if (!it->is_array()) return Corrupt(where + ": MessageArgs must be an array");
    for (const json& a : *it) {
      if (a.is_string())
        ev.message_args.push_back(a.get<std::string>());
      else if (a.is_number())
        ev.message_args.push_back(a.dump());
      else
        return Corrupt(where + ": MessageArgs holds strings or numbers");
    }
  }
  return Status::Ok();
}

Status ParseStep(const json& item, size_t index, ScenarioStep& step) {
  const std::string where = "step " + std::to_string(index);
  if (!item.is_object()) return Corrupt(where + ": must be an object");
  if (Status s = OnlyKeys(item, {"at", "set", "ramp", "append", "event"}, where); !s.ok()) return s;
  if (Status s = GetNumber(item, "at", true, step.at, where); !s.ok()) return s;
  if (step.at < 0) return Corrupt(where + ": 'at' must be >= 0");
  if (item.size() != 2) return Corrupt(where + ": needs exactly one of set, ramp, append, event");
  for (const auto& [key, body] : item.items()) {
    if (key == "at") continue;
    if (!body.is_object()) return Corrupt(where + ": '" + key + "' must be an object");
    if (key == "set") return step.kind = StepKind::kSet, ParseSet(body, step, where);
    if (key == "ramp") return step.kind = StepKind::kRamp, ParseRamp(body, step, where);
    if (key == "append") return step.kind = StepKind::kAppend, ParseAppend(body, step, where);
    return step.kind = StepKind::kEvent, ParseEvent(body, step, where);
  }
  return Corrupt(where + ": empty");
}

}  // namespace

Result<Scenario> ParseScenario(std::string_view text, const ScenarioLimits& limits) {
  if (text.size() > limits.max_text_bytes) {
    return Status(StatusCode::kInvalidArgument,
                  "scenario: file larger than " + std::to_string(limits.max_text_bytes) + " bytes");
  }
  Result<json> doc = ParseDocument(text, limits);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return Corrupt("top level must be a map/object");
  if (Status s = OnlyKeys(*doc, {"name", "description", "steps"}, "top level"); !s.ok()) return s;
  Scenario scenario;
  if (Status s = GetString(*doc, "name", false, scenario.name, "top level"); !s.ok()) return s;
  auto steps = doc->find("steps");
  if (steps == doc->end() || !steps->is_array()) return Corrupt("'steps' must be a list");
  if (steps->size() > limits.max_steps) return Corrupt("more steps than the limit");
  for (size_t i = 0; i < steps->size(); ++i) {
    ScenarioStep step;
    if (Status s = ParseStep((*steps)[i], i, step); !s.ok()) return s;
    scenario.steps.push_back(std::move(step));
  }
  std::stable_sort(scenario.steps.begin(), scenario.steps.end(),
                   [](const ScenarioStep& a, const ScenarioStep& b) { return a.at < b.at; });
  return scenario;
}

Status ScenarioPlayer::Begin(const ScenarioStep& step, ScenarioTarget& target) {
  switch (step.kind) {
    case StepKind::kSet:
      return target.Set(step.resource, step.pointer, step.value);
    case StepKind::kAppend:
      return target.Append(step.resource, step.value);
    case StepKind::kEvent:
      target.Emit(step.event);
      return Status::Ok();
    case StepKind::kRamp: {
      double from = step.from;
      if (!step.has_from) {
        Result<json> current = target.Get(step.resource, step.pointer);
        if (!current.ok()) return current.status();
        if (!current->is_number()) {
          return Status(StatusCode::kInvalidArgument,
                        "ramp on a non-numeric value at " + step.resource + step.pointer + " and no 'from' given");
        }
        from = current->get<double>();
      }
      ramps_.push_back({next_, from});
      return Status::Ok();
    }
  }
  return Status(StatusCode::kInternal, "unknown step kind");
}

std::vector<Status> ScenarioPlayer::AdvanceTo(double t, ScenarioTarget& target) {
  std::vector<Status> errors;
  if (started_ && t < now_) return errors;
  started_ = true;
  now_ = t;
  while (next_ < scenario_.steps.size() && scenario_.steps[next_].at <= t) {
    if (Status s = Begin(scenario_.steps[next_], target); !s.ok()) errors.push_back(s);
    ++next_;
  }
  for (const ActiveRamp& r : ramps_) {
    const ScenarioStep& s = scenario_.steps[r.step];
    double f = std::clamp((t - s.at) / (s.until - s.at), 0.0, 1.0);
    if (Status st = target.Set(s.resource, s.pointer, json(r.from + (s.to - r.from) * f)); !st.ok()) {
      errors.push_back(st);
    }
  }
  std::erase_if(ramps_, [&](const ActiveRamp& r) { return t >= scenario_.steps[r.step].until; });
  return errors;
}

}  // namespace faultline::sim
