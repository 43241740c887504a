// Server-Sent Events framing (WHATWG "event stream" format), as Redfish EventService
// streams use it: "id:", "event:", "data:" lines, a blank line ends an event, lines
// starting with ':' are comments (keep-alives). Pure and incremental: feed chunks as
// they arrive, in any split. Not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::redfish {

struct SseEvent {
  std::string id;     // empty when the event had no id line
  std::string event;  // event type, empty = "message"
  std::string data;   // data lines joined by '\n'
};

class SseParser {
 public:
  explicit SseParser(size_t max_event_bytes = 1 << 20) : max_event_bytes_(max_event_bytes) {}
  // Appends a chunk and returns the events it completed. kCorrupt once an event or a
  // line grows past max_event_bytes (a hostile stream); the parser then stays failed.
  Result<std::vector<SseEvent>> Feed(std::string_view chunk);
  const std::string& last_event_id() const { return last_id_; }

 private:
  void Line(std::string_view line, std::vector<SseEvent>& out);

  size_t max_event_bytes_;
  std::string buffer_;
  SseEvent current_;
  bool has_data_ = false;
  bool failed_ = false;
  std::string last_id_;
};

}  // namespace faultline::redfish
