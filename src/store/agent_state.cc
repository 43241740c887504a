#include "store/agent_state.h"

#include "core/json.h"
#include "store/store.h"

namespace faultline {
namespace {

constexpr char kSource[] = "agent";
constexpr char kKey[] = "state";

Json SourceJson(const SourceSight& s) {
  Json j{{"source", s.source}, {"failing", s.failing}};
  if (!s.error.empty()) j["error"] = s.error;
  if (s.last_success_ns) j["last_success_ns"] = *s.last_success_ns;
  return j;
}

SourceSight SourceFrom(const Json& j) {
  SourceSight s;
  s.source = j.at("source").get<std::string>();
  s.failing = j.at("failing").get<bool>();
  s.error = j.value("error", std::string());
  if (auto it = j.find("last_success_ns"); it != j.end()) s.last_success_ns = JsonInt<int64_t>(*it);
  return s;
}

}  // namespace

std::string EncodeAgentState(const AgentState& state) {
  Json sources = Json::array();
  for (const SourceSight& s : state.sources) sources.push_back(SourceJson(s));
  const Json j{{"blind", state.blind},
               {"since_ns", state.since_ns},
               {"updated_ns", state.updated_ns},
               {"sources", std::move(sources)}};
  // Errors quote what a source said (a device's bytes): never let one fail the write.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<AgentState> DecodeAgentState(const std::string& text) {
  try {
    const Json j = Json::parse(text);
    AgentState state;
    state.blind = j.at("blind").get<bool>();
    state.since_ns = JsonInt<int64_t>(j.at("since_ns"));
    state.updated_ns = JsonInt<int64_t>(j.at("updated_ns"));
    for (const Json& s : j.at("sources")) state.sources.push_back(SourceFrom(s));
    return state;
  } catch (const std::exception& e) {
    return Status(StatusCode::kCorrupt, std::string("agent state: ") + e.what());
  }
}

Status PutAgentState(Store& store, const std::string& node, const AgentState& state) {
  return store.PutCursors({Cursor{node, kSource, kKey, EncodeAgentState(state)}});
}

Result<std::optional<AgentState>> GetAgentState(Store& store, const std::string& node) {
  auto text = store.GetCursor(node, kSource, kKey);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::optional<AgentState>();
  auto state = DecodeAgentState(**text);
  if (!state.ok()) return state.status();
  return std::optional<AgentState>(std::move(state).value());
}

}  // namespace faultline
