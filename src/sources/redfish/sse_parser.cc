#include "sources/redfish/sse_parser.h"

namespace faultline::redfish {

void SseParser::Line(std::string_view line, std::vector<SseEvent>& out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) {
    if (has_data_) {
      if (!current_.id.empty()) last_id_ = current_.id;
      out.push_back(std::move(current_));
    }
    current_ = SseEvent{};
    has_data_ = false;
    return;
  }
  if (line[0] == ':') return;  // comment / keep-alive
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) current_.data += '\n';
    current_.data += value;
    has_data_ = true;
  } else if (field == "id") {
    current_.id = std::string(value);
  } else if (field == "event") {
    current_.event = std::string(value);
  }
}

Result<std::vector<SseEvent>> SseParser::Feed(std::string_view chunk) {
  if (failed_) return Status(StatusCode::kCorrupt, "event stream already failed");
  std::vector<SseEvent> out;
  buffer_.append(chunk);
  size_t start = 0;
  while (true) {
    size_t nl = buffer_.find('\n', start);
    if (nl == std::string::npos) break;
    Line(std::string_view(buffer_).substr(start, nl - start), out);
    start = nl + 1;
  }
  buffer_.erase(0, start);
  if (buffer_.size() > max_event_bytes_ || current_.data.size() > max_event_bytes_) {
    failed_ = true;
    return Status(StatusCode::kCorrupt, "event stream line or event exceeds the size limit");
  }
  return out;
}

}  // namespace faultline::redfish
