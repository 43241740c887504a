// EventService Server-Sent Events subscription: turns pushed Redfish events into
// observations as they happen, between sweeps. Reconnects with Last-Event-ID after a
// break; after `max_failures` consecutive breaks Run() returns so the caller goes back
// to polling (the sweep reads the logs anyway, so nothing is lost, only later).
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
  int64_t reconnect_backoff_ms = 1'000;        // doubles per consecutive failure
  int64_t stream_timeout_ms = 3'600'000;       // reconnect at least this often
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

 private:
  Result<int> Connect();

  RedfishClient& client_;
  EventStreamOptions options_;
  MapContext ctx_;
  Sink sink_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> events_{0};
  mutable std::mutex mu_;
  std::string last_id_;
};

}  // namespace faultline::redfish
