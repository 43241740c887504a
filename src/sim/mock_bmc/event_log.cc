#include "sim/mock_bmc/event_log.h"

#include <nlohmann/json.hpp>

#include "sim/mock_bmc/resource_tree.h"

namespace faultline::sim {

std::string EventPayload(const BmcEvent& event, uint64_t id, const std::string& timestamp) {
  nlohmann::json record = {{"EventId", std::to_string(id)},
                           {"MessageId", event.message_id},
                           {"MessageArgs", event.message_args},
                           {"MessageSeverity", event.severity},
                           {"EventTimestamp", timestamp}};
  if (!event.message.empty()) record["Message"] = event.message;
  if (!event.origin.empty()) record["OriginOfCondition"] = {{"@odata.id", event.origin}};
  nlohmann::json payload = {{"@odata.type", "#Event.v1_7_0.Event"},
                            {"Id", std::to_string(id)},
                            {"Name", "Event Array"},
                            {"Context", "faultline-mock-bmc"},
                            {"Events", {record}}};
  return DumpJson(payload);
}

uint64_t EventLog::Push(const BmcEvent& event, const std::string& now_iso) {
  const uint64_t id = next_id_++;
  events_.emplace_back(id, EventPayload(event, id, event.timestamp.empty() ? now_iso : event.timestamp));
  while (events_.size() > capacity_) events_.pop_front();
  return id;
}

std::vector<std::pair<uint64_t, std::string>> EventLog::After(uint64_t after) const {
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const auto& e : events_) {
    if (e.first > after) out.push_back(e);
  }
  return out;
}

}  // namespace faultline::sim
