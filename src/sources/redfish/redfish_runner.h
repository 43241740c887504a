// The Redfish source on its own threads, so a slow or broken BMC never blocks the
// other layers: one thread sweeps every `interval_ms` (each sweep bounded by
// `sweep_deadline_ms`), another follows the SSE stream when the BMC offers one and
// stops following it (polling only) when it keeps breaking.
// The sink is called from those threads (make it thread-safe). Stop() cancels
// in-flight requests, joins both threads and deletes the BMC session.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "sources/redfish/event_stream.h"
#include "sources/redfish/redfish_collector.h"

namespace faultline::redfish {

struct RunnerOptions {
  int64_t interval_ms = 60'000;         // between sweep starts
  int64_t sweep_deadline_ms = 120'000;  // one sweep's budget (real BMCs take minutes)
  bool use_sse = true;
  EventStreamOptions stream;  // sse_uri is filled from the first sweep
};

class RedfishRunner {
 public:
  using Sink = std::function<void(SweepResult)>;
  RedfishRunner(RedfishClient& client, RedfishCollector& collector, RunnerOptions options, Sink sink);
  ~RedfishRunner();
  void Start();
  void Stop();
  bool streaming() const { return streaming_.load(); }
  uint64_t sweeps() const { return sweeps_.load(); }

 private:
  void SweepLoop();
  void StartStream(const SweepResult& first);

  RedfishClient& client_;
  RedfishCollector& collector_;
  RunnerOptions options_;
  Sink sink_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::atomic<bool> streaming_{false};
  std::atomic<uint64_t> sweeps_{0};
  std::thread sweeper_;
  std::thread streamer_;
  std::unique_ptr<EventStream> stream_;
};

}  // namespace faultline::redfish
