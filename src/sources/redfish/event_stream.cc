#include "sources/redfish/event_stream.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/time.h"
#include "sources/redfish/sse_parser.h"

namespace faultline::redfish {
namespace {

std::string UrlEncode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string SseFilter(const std::vector<std::string>& props) {
  if (std::find(props.begin(), props.end(), "RegistryPrefix") == props.end()) return "";
  std::string f;
  for (const char* prefix : {"Power", "Environmental", "SensorEvent", "Platform", "ResourceEvent"}) {
    if (!f.empty()) f += " or ";
    f += std::string("RegistryPrefix eq '") + prefix + "'";
  }
  return f;
}

EventStream::EventStream(RedfishClient& client, EventStreamOptions options, MapContext ctx, Sink sink)
    : client_(client), options_(std::move(options)), ctx_(std::move(ctx)), sink_(std::move(sink)) {}

std::string EventStream::last_event_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_id_;
}

void EventStream::Stop() { stop_.store(true); }

Result<int> EventStream::Connect() {
  HttpRequest req;
  std::string url = client_.Url(options_.sse_uri);
  const std::string filter = SseFilter(options_.filter_properties);
  if (!filter.empty())
    url += (url.find('?') == std::string::npos ? "?" : "&") + std::string("$filter=") + UrlEncode(filter);
  req.url = url;
  req.headers = client_.AuthHeaders();
  req.headers.emplace_back("Accept", "text/event-stream");
  if (std::string id = last_event_id(); !id.empty()) req.headers.emplace_back("Last-Event-ID", id);
  req.timeout_ms = options_.stream_timeout_ms;
  req.cancel = &stop_;
  SseParser parser;
  Status parse_error;
  Result<int> r = client_.http().Stream(req, [&](std::string_view chunk) {
    auto events = parser.Feed(chunk);
    if (!events.ok()) {
      parse_error = events.status();
      return false;
    }
    for (const SseEvent& e : *events) {
      MapContext ctx = ctx_;
      ctx.read_time_ns = client_.clock().NowNs();
      MapResult mapped;
      try {
        mapped = MapResource(nlohmann::json::parse(e.data), ctx);
      } catch (const std::exception&) {
        continue;  // a malformed event is dropped; the sweep still reads the log
      }
      events_.fetch_add(1);
      if (!e.id.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        last_id_ = e.id;
      }
      if (!mapped.observations.empty()) sink_(std::move(mapped.observations));
    }
    return !stop_.load();
  });
  if (!parse_error.ok()) return parse_error;
  return r;
}

Status EventStream::Run() {
  int failures = 0;
  int64_t backoff = options_.reconnect_backoff_ms;
  while (!stop_.load()) {
    Result<int> r = Connect();
    if (stop_.load()) break;
    const bool good = r.ok() && *r == 200;
    failures = good ? 0 : failures + 1;
    if (failures >= options_.max_failures) {
      return Status(StatusCode::kUnavailable,
                    "event stream failed " + std::to_string(failures) + " times; back to polling" +
                        (r.ok() ? " (HTTP " + std::to_string(*r) + ")" : " (" + r.status().message() + ")"));
    }
    // Wait before reconnecting, in small steps so Stop() is prompt.
    const int64_t wait_ms = good ? 0 : backoff;
    backoff = good ? options_.reconnect_backoff_ms : backoff * 2;
    for (int64_t waited = 0; waited < wait_ms && !stop_.load(); waited += 20) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return Status::Ok();
}

}  // namespace faultline::redfish
