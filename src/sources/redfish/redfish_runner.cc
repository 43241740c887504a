#include "sources/redfish/redfish_runner.h"

#include "core/time.h"

namespace faultline::redfish {

RedfishRunner::RedfishRunner(RedfishClient& client, RedfishCollector& collector, RunnerOptions options, Sink sink)
    : client_(client), collector_(collector), options_(std::move(options)), sink_(std::move(sink)) {}

RedfishRunner::~RedfishRunner() { Stop(); }

void RedfishRunner::Start() {
  sweeper_ = std::thread([this] { SweepLoop(); });
}

void RedfishRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !sweeper_.joinable()) return;
    stop_ = true;
  }
  wake_.notify_all();
  client_.Cancel();
  if (sweeper_.joinable()) sweeper_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_) stream_->Stop();
  }
  if (streamer_.joinable()) streamer_.join();
  client_.Logout();
}

void RedfishRunner::StartStream(const SweepResult& first) {
  if (!options_.use_sse || first.sse_uri.empty()) return;
  EventStreamOptions so = options_.stream;
  so.sse_uri = first.sse_uri;
  so.filter_properties = first.sse_filter_properties;
  MapContext ctx;
  ctx.node = collector_.node();
  if (first.bmc_offset_ns) {
    ctx.bmc_offset_ns = *first.bmc_offset_ns;
    ctx.offset_known = true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return;
  stream_ = std::make_unique<EventStream>(client_, so, ctx, [this](std::vector<Observation> obs) {
    SweepResult pushed;
    pushed.observations = std::move(obs);
    sink_(std::move(pushed));
  });
  streaming_.store(true);
  streamer_ = std::thread([this] {
    Status st = stream_->Run();
    streaming_.store(false);
    if (!st.ok()) {
      SweepResult note;
      note.warnings.push_back(st.message());
      sink_(std::move(note));
    }
  });
}

void RedfishRunner::SweepLoop() {
  const Clock& clock = client_.clock();
  if (Status st = client_.Login(clock.MonotonicNs() + options_.sweep_deadline_ms * kNsPerMs); !st.ok()) {
    SweepResult failed;
    failed.errors.push_back("login: " + st.message());
    sink_(std::move(failed));
  }
  bool first = true;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    const int64_t start = clock.MonotonicNs();
    SweepResult r = collector_.Sweep(start + options_.sweep_deadline_ms * kNsPerMs);
    sweeps_.fetch_add(1);
    if (first) StartStream(r);
    first = false;
    sink_(std::move(r));
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms), [this] { return stop_; });
    if (stop_) return;
  }
}

}  // namespace faultline::redfish
