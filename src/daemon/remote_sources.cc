// Sources behind a library or a network peer: NVML, dcgm-exporter, Redfish, and the
// workload HTTP endpoint. Each connects lazily at its first poll so an absent peer is
// "unavailable, retried" rather than a startup failure.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "daemon/sources.h"
#include "sources/dcgm_exporter/dcgm_exporter.h"
#include "sources/dcgm_exporter/http_fetcher.h"
#include "sources/nvml/nvml_collector.h"
#include "sources/nvml/nvml_events.h"
#include "sources/redfish/credentials.h"
#include "sources/redfish/curl_http_client.h"
#include "sources/redfish/event_stream.h"
#include "sources/redfish/redfish_client.h"
#include "sources/redfish/redfish_collector.h"
#include "sources/workload/http_server.h"

namespace faultline::daemon {
namespace {

class NvmlSource final : public AgentSource {
 public:
  NvmlSource(const NvmlSection& options, const std::string& node, const Clock& clock)
      : options_(options), node_(node), clock_(clock) {}

  std::string name() const override { return "nvml"; }
  Layer layer() const override { return Layer::kGpu; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    if (collector_ == nullptr) {
      nvml::NvmlOptions o;
      o.library_path = options_.library_path;
      o.node = node_;
      o.clock = &clock_;
      o.slow_every = static_cast<int>(options_.slow_every);
      auto opened = nvml::NvmlCollector::Open(std::move(o));
      if (!opened.ok()) return opened.status();
      collector_ = std::move(opened).value();
    }
    SourceBatch batch;
    if (watch_ == nullptr && !watch_tried_) WatchEvents(batch);
    nvml::NvmlSample sample = collector_->Sample();
    for (const nvml::NvmlError& e : sample.errors) {
      if (e.gpu < 0 && sample.observations.empty()) {
        DropLibrary();  // the library itself failed: reload at the next poll
        return Status(StatusCode::kUnavailable, "nvml: " + e.message);
      }
      batch.warnings.push_back(e.message);
    }
    for (std::string& n : sample.notes) batch.warnings.push_back(std::move(n));
    batch.observations = std::move(sample.observations);
    return batch;
  }

  // With NVML's event API: the poll after a critical XID, a DBE or a lost GPU runs at once
  // (nvml_events.h), at most one such early poll a second so a storm of events cannot turn
  // the poll into a loop. Without it: the poll interval.
  bool CanWaitForData() const override { return watch_ != nullptr; }
  void WaitForData(int64_t max_wait_ns) override {
    const int64_t start = SteadyNs();
    const int64_t since_early = start - last_early_ns_;
    if (last_early_ns_ != 0 && since_early < kMinEarlyGapNs) {
      SleepCancellable(std::min(kMinEarlyGapNs - since_early, max_wait_ns));
    }
    const int64_t left = max_wait_ns - (SteadyNs() - start);
    if (left <= 0 || cancelled_) return;
    if (!watch_->Wait(left).empty()) last_early_ns_ = SteadyNs();
  }
  void Cancel() override {
    cancelled_ = true;
    if (nvml::NvmlEventWatch* w = watch_published_.load()) w->Cancel();
  }

 private:
  static constexpr int64_t kMinEarlyGapNs = 1'000'000'000;

  // Real time: NVML waits in real time whatever clock the agent's timestamps come from.
  static int64_t SteadyNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  void WatchEvents(SourceBatch& batch) {
    watch_tried_ = true;
    auto watch = nvml::NvmlEventWatch::Create(collector_->api());
    if (!watch.ok()) {
      batch.warnings.push_back(watch.status().message() + "; GPU faults are seen at the poll interval");
      return;
    }
    watch_ = std::move(watch).value();
    watch_published_ = watch_.get();
  }
  void DropLibrary() {
    watch_published_ = nullptr;
    watch_.reset();  // before the library it calls into
    watch_tried_ = false;
    collector_.reset();
  }
  void SleepCancellable(int64_t ns) {
    const int64_t end = SteadyNs() + ns;
    while (!cancelled_ && SteadyNs() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  NvmlSection options_;
  std::string node_;
  const Clock& clock_;
  std::unique_ptr<nvml::NvmlCollector> collector_;
  std::unique_ptr<nvml::NvmlEventWatch> watch_;                  // the polling thread's
  std::atomic<nvml::NvmlEventWatch*> watch_published_{nullptr};  // for Cancel from another thread
  bool watch_tried_ = false;
  int64_t last_early_ns_ = 0;
  std::atomic<bool> cancelled_{false};
};

class DcgmSource final : public AgentSource {
 public:
  DcgmSource(const DcgmExporterSection& options, const std::string& node, const Clock& clock)
      : source_(DcgmExporterOptions{.url = options.url, .node = node}, clock, &fetcher_) {}

  std::string name() const override { return "dcgm_exporter"; }
  Layer layer() const override { return Layer::kGpu; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    auto scrape = source_.Collect();
    if (!scrape.ok()) return scrape.status();
    SourceBatch batch;
    batch.observations = std::move(scrape->observations);
    batch.warnings = std::move(scrape->errors);
    return batch;
  }

 private:
  CurlHttpFetcher fetcher_;
  DcgmExporterSource source_;
};

constexpr const char* kRedfishSource = "redfish";

Result<redfish::Credentials> LoadCredentials(const RedfishSection& o) {
  if (!o.password_file.empty()) {
    auto password = redfish::ReadPasswordFile(o.password_file);
    if (!password.ok()) return password.status();
    return redfish::Credentials{o.user, *password};
  }
  auto env = redfish::CredentialsFromEnv();
  if (env.ok()) return env;
  return redfish::Credentials{o.user, ""};
}

// Follows the BMC's EventService SSE stream on its own thread and keeps what it maps
// until the next Poll drains it; WaitForEvents lets the polling thread block until one
// arrives (the source's WaitForData), so an event is handed over at once instead of at
// the next sweep. Its observation carries the event's own time.
// Follow/Stop/WaitForEvents run on the polling thread; Cancel may come from any thread.
class RedfishEventFollower {
 public:
  explicit RedfishEventFollower(redfish::RedfishClient& client) : client_(client) {}
  ~RedfishEventFollower() { Stop(); }
  RedfishEventFollower(const RedfishEventFollower&) = delete;
  RedfishEventFollower& operator=(const RedfishEventFollower&) = delete;

  // Starts following the stream a sweep found, or restarts it after it gave up (the
  // same EventStream, so the reconnect sends its Last-Event-ID). A no-op while
  // following, without a stream URI, or once cancelled.
  void Follow(const redfish::SweepResult& sweep, const std::string& node) {
    if (sweep.sse_uri.empty() || running_.load()) return;
    if (thread_.joinable()) thread_.join();  // the stream gave up: its thread has ended
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    if (stream_ == nullptr) {
      stream_ = std::make_unique<redfish::EventStream>(client_, StreamOptions(sweep), Context(sweep, node),
                                                       [this](std::vector<Observation> o) { Push(std::move(o)); });
    }
    running_.store(true);
    thread_ = std::thread([this] { Run(); });
  }

  // Moves the events received since the last call (and the stream's warnings) into `batch`.
  void Drain(SourceBatch& batch) {
    std::lock_guard<std::mutex> lock(mu_);
    for (Observation& o : pending_) batch.observations.push_back(std::move(o));
    pending_.clear();
    for (std::string& w : warnings_) batch.warnings.push_back(std::move(w));
    warnings_.clear();
    if (dropped_ > 0) {
      batch.warnings.push_back("redfish events: " + std::to_string(dropped_) +
                               " observations dropped (queue full); the log sweep still reads them");
      dropped_ = 0;
    }
  }

  void Cancel() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      if (stream_ != nullptr) stream_->Stop();  // its request polls this flag: ends within ~1 s
    }
    arrived_.notify_all();
  }

  // Blocks until an event is queued (true), `until` passes or Cancel (false).
  bool WaitForEvents(std::chrono::steady_clock::time_point until) {
    std::unique_lock<std::mutex> lock(mu_);
    arrived_.wait_until(lock, until, [this] { return cancelled_ || !pending_.empty(); });
    return !cancelled_ && !pending_.empty();
  }

  void Stop() {
    Cancel();
    if (thread_.joinable()) thread_.join();
  }

 private:
  // Between two polls a BMC sends a handful of events; this only bounds a flood.
  static constexpr size_t kMaxPending = 10'000;

  static redfish::EventStreamOptions StreamOptions(const redfish::SweepResult& sweep) {
    redfish::EventStreamOptions o;
    o.sse_uri = sweep.sse_uri;
    o.filter_properties = sweep.sse_filter_properties;
    return o;
  }
  static redfish::MapContext Context(const redfish::SweepResult& sweep, const std::string& node) {
    redfish::MapContext ctx;
    ctx.node = node;
    if (sweep.bmc_offset_ns) {
      ctx.bmc_offset_ns = *sweep.bmc_offset_ns;
      ctx.offset_known = true;
    }
    return ctx;
  }

  void Run() {
    // Returns on Cancel, or after repeated breaks: the next sweep restarts it.
    Status st = stream_->Run();
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      warnings_.push_back("redfish events: " + st.message());
    }
    running_.store(false);
  }

  void Push(std::vector<Observation> observations) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.size() + observations.size() > kMaxPending) {
        dropped_ += observations.size();
        return;
      }
      for (Observation& o : observations) pending_.push_back(std::move(o));
    }
    arrived_.notify_all();
  }

  redfish::RedfishClient& client_;
  std::mutex mu_;
  std::condition_variable arrived_;               // an event queued, or Cancel
  bool cancelled_ = false;                        // guarded by mu_
  std::unique_ptr<redfish::EventStream> stream_;  // guarded by mu_; never replaced once made
  std::vector<Observation> pending_;              // guarded by mu_
  std::vector<std::string> warnings_;             // guarded by mu_
  uint64_t dropped_ = 0;                          // guarded by mu_
  std::atomic<bool> running_{false};
  std::thread thread_;  // polling thread only
};

class RedfishSource final : public AgentSource {
 public:
  RedfishSource(const RedfishSection& options, const std::string& node, const Clock& clock,
                const std::vector<Cursor>& cursors)
      : node_(node),
        events_(options.events),
        wait_for_events_(options.wait_for_events),
        interval_(std::chrono::nanoseconds(options.interval_ns)),
        http_(redfish::CurlOptions{.ca_file = options.ca_file, .insecure = options.insecure}),
        client_(http_, clock, ClientOptions(options)),
        collector_(client_, redfish::CollectorOptions{.node = node}) {
    std::map<std::string, redfish::LogCursor> restored;
    for (const Cursor& c : cursors) {
      if (c.source != kRedfishSource || c.key.rfind("log:", 0) != 0) continue;
      uint64_t id = 0;
      if (std::from_chars(c.value.data(), c.value.data() + c.value.size(), id).ec == std::errc()) {
        restored[c.key.substr(4)].last_numeric_id = id;
      }
    }
    collector_.set_cursors(std::move(restored));
    auto creds = LoadCredentials(options);
    if (!creds.ok()) credentials_error_ = creds.status();
  }

  std::string name() const override { return kRedfishSource; }
  Layer layer() const override { return Layer::kOob; }

  Result<SourceBatch> Poll(int64_t deadline_mono_ns) override {
    if (!credentials_error_.ok()) return credentials_error_;
    if (events_only_) {
      // Woken by the stream before the next sweep is due: hand over its events alone
      // (a sweep costs dozens of requests; the schedule of sweeps stays as it was).
      events_only_ = false;
      SourceBatch batch;
      events_follower_.Drain(batch);
      return batch;
    }
    last_sweep_ = std::chrono::steady_clock::now();
    if (!logged_in_) {
      if (Status s = client_.Login(deadline_mono_ns); !s.ok()) return s;
      logged_in_ = true;
    }
    redfish::SweepResult sweep = collector_.Sweep(deadline_mono_ns);
    if (sweep.resources == 0 && !sweep.errors.empty()) {
      logged_in_ = false;  // the session may have expired; log in again next time
      return Status(StatusCode::kUnavailable, "redfish: " + sweep.errors.front());
    }
    if (events_) events_follower_.Follow(sweep, node_);
    SourceBatch batch;
    batch.observations = std::move(sweep.observations);
    batch.warnings = std::move(sweep.errors);
    // After the sweep, so events that came in while it ran are not left for later.
    events_follower_.Drain(batch);
    for (const auto& [path, cursor] : collector_.cursors()) {
      if (cursor.last_numeric_id) {
        batch.cursors.push_back({node_, kRedfishSource, "log:" + path, std::to_string(*cursor.last_numeric_id)});
      }
    }
    return batch;
  }

  void Shutdown() override {
    // The stream first: it must not reconnect with the token the logout deletes.
    events_follower_.Stop();
    // Whatever logged_in_ says: a sweep the stop cancelled reads like an expired session
    // (no resource, errors) and cleared it, leaving the BMC's session slot taken. Logout
    // is a no-op without a session and best effort against one the BMC already expired.
    client_.Logout();
    logged_in_ = false;
  }
  void Cancel() override {
    client_.Cancel();
    events_follower_.Cancel();
  }

  // Between sweeps the source waits for the SSE stream: an event pushed by the BMC
  // (a PSU lost, a leak, a critical temperature) reaches the pipeline at once, where a
  // critical one wakes the evaluation (engine/detect/critical.h), instead of waiting up
  // to one `interval` for the next sweep. Without a stream (events off, or none
  // advertised) this is the interval's sleep, ended early only by Cancel.
  // On by default ([redfish] wait_for_events); with it off a pushed event is handed over at
  // the next sweep.
  bool CanWaitForData() const override { return wait_for_events_; }
  void WaitForData(int64_t max_wait_ns) override {
    const auto now = std::chrono::steady_clock::now();
    auto until = now + std::chrono::nanoseconds(std::max<int64_t>(max_wait_ns, 0));
    if (last_sweep_) until = std::min(until, *last_sweep_ + interval_);  // the next sweep is due then
    if (until <= now || !events_follower_.WaitForEvents(until)) return;  // sweep due (or cancelled)
    // The events of one incident come together: take them in one batch.
    std::this_thread::sleep_for(kSettle);
    events_only_ = true;
  }

 private:
  static constexpr std::chrono::milliseconds kSettle{10};

  static redfish::RedfishClientOptions ClientOptions(const RedfishSection& o) {
    redfish::RedfishClientOptions co;
    co.base_url = o.url;
    co.allow_http = o.allow_http;  // refused unless set; the client warns when it is
    auto creds = LoadCredentials(o);
    if (creds.ok()) co.credentials = *creds;
    return co;
  }

  std::string node_;
  bool events_;
  bool wait_for_events_;
  std::chrono::nanoseconds interval_;                                // between sweep starts ([redfish] interval)
  std::optional<std::chrono::steady_clock::time_point> last_sweep_;  // polling thread only
  bool events_only_ = false;  // WaitForData returned for events before a sweep was due
  redfish::CurlHttpClient http_;
  redfish::RedfishClient client_;
  redfish::RedfishCollector collector_;
  RedfishEventFollower events_follower_{client_};  // declared after client_: stopped before it goes
  Status credentials_error_;
  bool logged_in_ = false;
};

// The hardening (loopback default, bearer token, read timeouts, body cap, own node
// only) lives in WorkloadHttpServer; this adapter starts it at the first poll.
class WorkloadHttpSource final : public AgentSource {
 public:
  WorkloadHttpSource(const WorkloadSection& section, const std::string& node, const Clock& clock)
      : section_(section), node_(node), clock_(clock) {}
  ~WorkloadHttpSource() override { Shutdown(); }

  std::string name() const override { return "workload_http"; }
  Layer layer() const override { return Layer::kWorkload; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    SourceBatch batch;
    if (server_ == nullptr) {
      auto token = LoadBearerToken(section_.token_file, section_.token_env);
      if (!token.ok()) return token.status();
      WorkloadServerOptions o;
      o.listen = section_.listen;
      o.http.node = node_;
      o.token = std::move(*token);
      auto server = std::make_unique<WorkloadHttpServer>(std::move(o), clock_);
      auto warnings = server->Start();
      if (!warnings.ok()) return warnings.status();  // retried with a fresh server
      batch.warnings = std::move(*warnings);
      server_ = std::move(server);
    }
    batch.observations = server_->Drain();
    return batch;
  }

  void Shutdown() override {
    if (server_ != nullptr) server_->Stop();
  }

 private:
  WorkloadSection section_;
  std::string node_;
  const Clock& clock_;
  std::unique_ptr<WorkloadHttpServer> server_;
};

}  // namespace

std::unique_ptr<AgentSource> MakeNvmlSource(const NvmlSection& options, const std::string& node, const Clock& clock) {
  return std::make_unique<NvmlSource>(options, node, clock);
}

std::unique_ptr<AgentSource> MakeDcgmExporterSource(const DcgmExporterSection& options, const std::string& node,
                                                    const Clock& clock) {
  return std::make_unique<DcgmSource>(options, node, clock);
}

std::unique_ptr<AgentSource> MakeRedfishSource(const RedfishSection& options, const std::string& node,
                                               const Clock& clock, const std::vector<Cursor>& cursors) {
  return std::make_unique<RedfishSource>(options, node, clock, cursors);
}

std::unique_ptr<AgentSource> MakeWorkloadHttpSource(const WorkloadSection& section, const std::string& node,
                                                    const Clock& clock) {
  return std::make_unique<WorkloadHttpSource>(section, node, clock);
}

}  // namespace faultline::daemon
