#include "sim/fleet/fleet_nats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <thread>

#include "core/clock.h"
#include "fleet/nats/client.h"
#include "fleet/nats/consumer_loop.h"
#include "fleet/wire.h"
#include "sim/fleet/fleet_sim.h"

namespace faultline::sim {
namespace {

namespace nats = fleet::nats;
using SteadyClock = std::chrono::steady_clock;

double Since(SteadyClock::time_point t0) { return std::chrono::duration<double>(SteadyClock::now() - t0).count(); }

double ThreadCpuS() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Result<std::unique_ptr<nats::Connection>> Connect(const std::string& urls, const std::string& credentials,
                                                  size_t max_pending_publishes = 4096) {
  nats::ConnectOptions c;
  c.urls = nats::SplitUrls(urls);
  if (c.urls.empty()) return Status(StatusCode::kInvalidArgument, "no NATS URL");
  c.name = "faultline-sim-fleet";
  c.credentials_file = credentials;
  c.max_pending_publishes = static_cast<int>(std::clamp<size_t>(max_pending_publishes, 1, 1 << 20));
  // A server that just took millions of messages (on a loaded machine) can take longer
  // than the default 5 s to make a consumer over them.
  c.request_timeout_ns = int64_t{60} * 1'000'000'000;
  return nats::Connection::Connect(c);
}

// The analyzer's clock in a replay: "now" is the newest envelope the loop ingested (the
// agents' clock), intervals run on the real monotonic clock.
class ReplayClock final : public Clock {
 public:
  explicit ReplayClock(int64_t start_ns) : start_ns_(start_ns) {}
  void Follow(const nats::FleetLoop* loop) { loop_ = loop; }
  int64_t NowNs() const override {
    return loop_ == nullptr ? start_ns_ : std::max(start_ns_, loop_->stats().newest_sent_ns);
  }
  int64_t MonotonicNs() const override { return real_.MonotonicNs(); }
  int64_t BootTimeNs() const override { return real_.BootTimeNs(); }

 private:
  int64_t start_ns_;
  const nats::FleetLoop* loop_ = nullptr;
  SystemClock real_;
};

int64_t Ns(double s) { return static_cast<int64_t>(s * 1e9); }

// Publishes the batch; what fails (a server lost mid-batch, a cluster electing a new
// leader) is sent again, the same message under the same msg id, so the stream stores each
// once whatever reached it before the failure. Gives up on a message only after
// `retry_for` of wall time without its ack.
Status SendBatch(nats::Connection& conn, std::vector<nats::OutMessage>& batch, FleetNatsPublishStats& st,
                 double retry_for_s) {
  if (batch.empty()) return Status::Ok();
  const auto t0 = SteadyClock::now();
  std::vector<nats::OutMessage> pending = std::move(batch);
  batch.clear();
  auto wait = std::chrono::milliseconds(100);
  for (int attempt = 1;; ++attempt) {
    const std::vector<nats::PublishResult> results = conn.PublishBatch(pending, int64_t{30} * 1'000'000'000);
    std::vector<nats::OutMessage> failed;
    Status last;
    for (size_t i = 0; i < results.size(); ++i) {
      const nats::PublishResult& r = results[i];
      if (r.status.ok()) {
        st.duplicates += r.ack.duplicate ? 1 : 0;
        continue;
      }
      // Too large or refused: sending it again cannot help.
      const StatusCode code = r.status.code();
      if (code == StatusCode::kInvalidArgument || code == StatusCode::kPermissionDenied) {
        ++st.failed;
        if (st.first_error.empty()) st.first_error = r.status.ToString();
        continue;
      }
      last = r.status;
      failed.push_back(std::move(pending[i]));
    }
    if (failed.empty()) break;
    if (Since(t0) + std::chrono::duration<double>(wait).count() > retry_for_s) {
      st.failed += failed.size();
      if (st.first_error.empty()) st.first_error = last.ToString();
      break;
    }
    st.retried += failed.size();
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(2000));
    pending = std::move(failed);
  }
  st.publish_s += Since(t0);
  return Status::Ok();
}

}  // namespace

Result<FleetNatsPublishStats> PublishFleetScenario(const FleetScenario& sc, const FleetNatsPublishOptions& o) {
  auto conn = Connect(o.urls, o.credentials_file, o.batch);
  if (!conn.ok()) return conn.status();
  FleetNatsPublishStats stats;
  if (o.ensure_stream) {
    nats::StreamConfig cfg;
    cfg.name = o.stream;
    cfg.subjects = o.subjects;
    cfg.memory_storage = o.memory_storage;
    // No overrides: a stream an operator set up (3 replicas, a longer max age) is kept as it is.
    auto st = (*conn)->EnsureStream(cfg);
    if (!st.ok()) return st.status();
    stats.notes = st->notes;
  }
  FleetSim sim(sc);
  const double duration = o.duration_s.value_or(sc.duration_s);
  const double step = sc.agent.evaluate_s;
  std::vector<fleet::Envelope> envs, packed;
  EnvelopePacker packer(o.pack);
  std::vector<nats::OutMessage> batch;
  const auto wall0 = SteadyClock::now();
  const auto steps = static_cast<int64_t>(std::ceil(duration / step - 1e-9));
  for (int64_t k = 1; k <= steps; ++k) {
    const double t = std::min(duration, static_cast<double>(k) * step);
    envs.clear();
    packed.clear();
    sim.AdvanceTo(t, envs);
    if (k == steps) sim.Flush(envs);
    stats.agent_envelopes += envs.size();
    for (fleet::Envelope& e : envs) packer.Add(std::move(e), packed);
    if (k == steps) {
      packer.Flush(packed);
    } else {
      packer.FlushDue(sim.TimeNs(t), packed);
    }
    if (o.speed > 0) {  // the agents publish as their clock runs
      const double due = t / o.speed - Since(wall0);
      if (due > 0) std::this_thread::sleep_for(std::chrono::duration<double>(due));
    }
    for (const fleet::Envelope& e : packed) {
      batch.push_back({fleet::Subject(e.place, e.kind), fleet::Encode(e), e.msg_id});
      stats.bytes += batch.back().data.size();
      stats.observations += e.observations.size();
      ++stats.messages;
      if (batch.size() >= o.batch) {
        if (Status s = SendBatch(**conn, batch, stats, o.retry_for_s); !s.ok()) return s;
      }
    }
    if (o.speed > 0) {
      if (Status s = SendBatch(**conn, batch, stats, o.retry_for_s); !s.ok()) return s;
    }
  }
  if (Status s = SendBatch(**conn, batch, stats, o.retry_for_s); !s.ok()) return s;
  return stats;
}

Result<FleetNatsConsumeStats> ConsumeFleetScenario(const FleetScenario& sc, const FleetNatsConsumeOptions& o) {
  auto conn = Connect(o.urls, o.credentials_file);
  if (!conn.ok()) return conn.status();
  nats::FleetLoopOptions lo;
  lo.ensure_stream = false;  // the publisher made it
  lo.consumer.stream = o.stream;
  lo.consumer.durable = o.durable;
  lo.consumer.filter_subject = o.filter_subject;
  lo.kv_bucket = o.kv_bucket;
  lo.instance = "bench";
  lo.site = sc.topology.site;
  lo.fetch_batch = o.fetch_batch;
  lo.fetch_timeout_ns = 500'000'000;
  lo.evaluate_interval_ns = Ns(o.evaluate_interval_s);
  lo.snapshot_interval_ns = Ns(o.snapshot_interval_s);
  // A previous run's snapshot would make this one drop everything as already seen.
  const std::string kv_stream = "KV_" + o.kv_bucket;
  if (!o.kv_bucket.empty()) (void)(*conn)->DeleteStream(kv_stream);
  fleet::FleetAnalyzer analyzer(sc.topology, o.analyzer);
  ReplayClock clock(sc.start_ns);
  nats::FleetLoop loop(**conn, analyzer, lo, clock);
  clock.Follow(&loop);
  if (Status s = loop.Start(); !s.ok()) return s;
  const nats::FleetLoopStats& ls = loop.stats();
  auto taken = [&] { return ls.ingested + ls.malformed + ls.oversized; };
  FleetNatsConsumeStats st;
  SteadyClock::time_point first{};
  double cpu0 = 0;
  auto idle_since = SteadyClock::now();
  Status failed;
  while (o.expect_messages == 0 || taken() < o.expect_messages) {
    const auto f0 = SteadyClock::now();
    const double cpu_f0 = ThreadCpuS();
    const uint64_t before = ls.messages;
    auto step = loop.Step();
    if (!step.ok()) {
      failed = step.status();
      break;
    }
    if (ls.messages == before) {
      if (Since(idle_since) * 1e9 > static_cast<double>(o.idle_timeout_ns)) break;
      continue;
    }
    if (first == SteadyClock::time_point{}) {
      first = f0;
      cpu0 = cpu_f0;
    }
    idle_since = SteadyClock::now();
  }
  // What the loop does on its way out: a last evaluation, then the checkpoint that acks.
  (void)loop.EvaluateNow();
  Status saved = loop.Checkpoint();
  if (first != SteadyClock::time_point{}) {
    st.wall_s = Since(first);
    st.cpu_s = ThreadCpuS() - cpu0;
  }
  st.messages = taken();
  st.observations = ls.observations;
  st.malformed = ls.malformed + ls.oversized;
  st.fetch_s = ls.fetch_s;
  st.decode_s = ls.decode_s;
  st.ingest_s = ls.ingest_s;
  st.ack_s = ls.ack_s;
  st.evaluate_s = ls.evaluate_s;
  st.snapshot_s = ls.snapshot_s;
  st.evaluations = ls.evaluations;
  st.snapshots = ls.snapshots;
  st.open_diagnoses = analyzer.Open().size();
  st.analyzer = analyzer.stats();
  (void)(*conn)->DeleteConsumer(o.stream, o.durable);
  if (!o.kv_bucket.empty()) (void)(*conn)->DeleteStream(kv_stream);
  if (!failed.ok()) return failed;
  if (!saved.ok()) return saved;
  return st;
}

}  // namespace faultline::sim
