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
    : client_(client),
      options_(std::move(options)),
      ctx_(std::move(ctx)),
      sink_(std::move(sink)),
      backoff_ms_(std::max<int64_t>(1, options_.reconnect_backoff_ms)) {}

std::string EventStream::last_event_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_id_;
}

void EventStream::Stop() { stop_.store(true); }

Result<int> EventStream::Connect() {
  auto resolved = client_.ResolveUrl(options_.sse_uri);
  if (!resolved.ok()) return resolved.status();
  connects_.fetch_add(1);
  HttpRequest req;
  std::string url = *resolved;
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
      auto json = ParseBmcJson(e.data);
      if (!json.ok()) continue;  // a malformed or absurdly nested event is dropped; the sweep reads the log
      try {
        mapped = MapResource(*json, ctx);
      } catch (const std::exception&) {
        continue;
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

void EventStream::Wait(int64_t ms) {
  if (options_.wait) return options_.wait(ms, stop_);
  for (int64_t waited = 0; waited < ms && !stop_.load(); waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int64_t EventStream::TakeBackoff() {
  const int64_t wait_ms = backoff_ms_.load();
  backoff_ms_.store(std::min(wait_ms * 2, std::max(wait_ms, options_.max_reconnect_backoff_ms)));
  return wait_ms;
}

Status EventStream::Run() {
  int failures = 0;
  // Restarted after giving up (the agent does so every sweep): keep backing off.
  if (gave_up_.exchange(false)) Wait(TakeBackoff());
  while (!stop_.load()) {
    const uint64_t events_before = events_.load();
    const int64_t started = client_.clock().MonotonicNs();
    Result<int> r = Connect();
    if (stop_.load()) break;
    if (!r.ok() && r.status().code() == StatusCode::kPermissionDenied) return r.status();  // never retried
    const bool delivered = events_.load() > events_before;
    const bool lasted = client_.clock().MonotonicNs() - started >= options_.healthy_stream_ms * kNsPerMs;
    const bool good = r.ok() && *r == 200 && (delivered || lasted);
    failures = good ? 0 : failures + 1;
    if (good) {
      backoff_ms_.store(std::max<int64_t>(1, options_.reconnect_backoff_ms));
      continue;
    }
    if (failures >= options_.max_failures) gave_up_.store(true);
    if (failures >= options_.max_failures) {
      const std::string why = !r.ok()     ? " (" + r.status().message() + ")"
                              : *r != 200 ? " (HTTP " + std::to_string(*r) + ")"
                                          : " (closed at once without an event)";
      return Status(StatusCode::kUnavailable,
                    "event stream failed " + std::to_string(failures) + " times; back to polling" + why);
    }
    Wait(TakeBackoff());
  }
  return Status::Ok();
}

}  // namespace faultline::redfish
