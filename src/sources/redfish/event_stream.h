// EventService Server-Sent Events subscription: turns pushed Redfish events into
// observations as they happen, between sweeps. Reconnects with Last-Event-ID after a
// break; after `max_failures` consecutive breaks Run() returns so the caller goes back
// to polling (the sweep reads the logs anyway, so nothing is lost, only later).
// A connection that ends without delivering an event before `healthy_stream_ms` counts
// as a break too (a BMC that accepts and closes at once must not be hammered): the wait
// before the next attempt doubles from reconnect_backoff_ms up to max_reconnect_backoff_ms,
// and is kept across Run() calls until a healthy connection resets it.
// An SSE URI on another host than the BMC's is refused at once (kPermissionDenied): the
// stream carries the session token.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/types.h"
#include "parse/redfish_map.h"
#include "sources/redfish/redfish_client.h"

namespace faultline::redfish {

struct EventStreamOptions {
  std::string sse_uri;                         // EventService.ServerSentEventUri
  std::vector<std::string> filter_properties;  // SSEFilterPropertiesSupported (true ones)
  int max_failures = 3;                        // consecutive breaks before giving up
  int64_t reconnect_backoff_ms = 1'000;        // doubles per consecutive failure...
  int64_t max_reconnect_backoff_ms = 300'000;  // ...up to this
  int64_t healthy_stream_ms = 5'000;           // shorter, with no event: a failure
  int64_t stream_timeout_ms = 3'600'000;       // reconnect at least this often
  // Waits `ms` before a reconnect, returning early once `stop` is set. Null: sleeps in
  // small steps. Tests pass a recorder (no wall-clock waits).
  std::function<void(int64_t ms, const std::atomic<bool>& stop)> wait;
};

// The registries the OOB detectors act on; sent as $filter when RegistryPrefix is a
// supported filter property, so the BMC does not stream everything.
std::string SseFilter(const std::vector<std::string>& filter_properties);

class EventStream {
 public:
  using Sink = std::function<void(std::vector<Observation>)>;
  EventStream(RedfishClient& client, EventStreamOptions options, MapContext ctx, Sink sink);

  // Blocks until Stop() (Ok) or until the stream failed max_failures times in a row
  // (kUnavailable). Call from a dedicated thread.
  Status Run();
  void Stop();
  std::string last_event_id() const;
  uint64_t events() const { return events_.load(); }
  uint64_t connects() const { return connects_.load(); }
  // The wait before the next reconnect after a failure (what the back-off reached).
  int64_t next_backoff_ms() const { return backoff_ms_.load(); }

 private:
  Result<int> Connect();
  void Wait(int64_t ms);
  int64_t TakeBackoff();  // the current wait; doubles the next one (capped)

  RedfishClient& client_;
  EventStreamOptions options_;
  MapContext ctx_;
  Sink sink_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> events_{0};
  std::atomic<uint64_t> connects_{0};
  std::atomic<int64_t> backoff_ms_;
  std::atomic<bool> gave_up_{false};
  mutable std::mutex mu_;
  std::string last_id_;
};

}  // namespace faultline::redfish
