// The SSE event history of the mock BMC: each pushed event gets the next id and a Redfish
// Event payload (one line of JSON, ready for an SSE `data:` field). The last `capacity`
// events are kept so a reconnecting client's Last-Event-ID can be honoured. Not
// thread-safe: the MockBmc serialises access.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "sim/mock_bmc/mock_bmc.h"

namespace faultline::sim {

class EventLog {
 public:
  explicit EventLog(size_t capacity = 1000) : capacity_(capacity) {}

  // `now_iso` stands in for an empty event.timestamp.
  uint64_t Push(const BmcEvent& event, const std::string& now_iso);
  // Events with id > after, oldest first, as (id, payload) pairs.
  std::vector<std::pair<uint64_t, std::string>> After(uint64_t after) const;
  uint64_t last_id() const { return next_id_ - 1; }

 private:
  size_t capacity_;
  uint64_t next_id_ = 1;
  std::deque<std::pair<uint64_t, std::string>> events_;
};

// The Redfish Event resource for one event (Events[] with one record).
std::string EventPayload(const BmcEvent& event, uint64_t id, const std::string& timestamp);

}  // namespace faultline::sim
