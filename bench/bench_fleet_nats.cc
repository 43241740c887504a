// Fleet transport throughput: envelopes of agent observations published to a local
// nats-server (JetStream, file storage, loopback) in async batches, every ack awaited.
// Starts its own nats-server on a free 127.0.0.1 port with a temp store dir; skips when
// nats-server is not installed.
//   build/bench/bench_fleet_nats --benchmark_counters_tabular=true
// Counters: envelopes/s and observations/s (acked by the stream), MB/s of payload.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "fleet/nats/client.h"
#include "fleet/wire.h"
#include "sim/fleet/nats_server.h"

namespace faultline::fleet::nats {
namespace {

constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;

// One nats-server -js for the whole run; null when it could not be started (the error is
// printed once and every benchmark skips).
sim::LocalNatsServer* TheServer() {
  static std::unique_ptr<sim::LocalNatsServer> server = [] {
    auto s = sim::LocalNatsServer::Start(std::filesystem::temp_directory_path().string());
    if (!s.ok()) {
      std::fprintf(stderr, "bench_fleet_nats: %s\n", s.status().ToString().c_str());
      return std::unique_ptr<sim::LocalNatsServer>();
    }
    return std::move(s).value();
  }();
  return server.get();
}

std::unique_ptr<Connection> Connect() {
  ConnectOptions o;
  o.urls = {TheServer()->url()};
  for (int i = 0; i < 100; ++i) {
    auto c = Connection::Connect(o);
    if (c.ok()) return std::move(c).value();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return nullptr;
}

// An agent's batch of n readings (GPU power/clocks, like the NVML source stores them).
Envelope Batch(const std::string& node, int n) {
  Envelope e;
  e.kind = RecordKind::kObservations;
  e.place = {"site1", "r12", node};
  for (int i = 0; i < n; ++i) {
    Observation o;
    o.time_ns = kT0 + int64_t{i} * 1'000'000;
    o.node = node;
    o.layer = Layer::kGpu;
    o.component = GpuComponent(std::to_string(i % 8));
    o.kind = i % 2 ? ObsKind::kPower : ObsKind::kClock;
    o.source = Source::kNvml;
    o.value = 300.0 + i % 50;
    e.observations.push_back(o);
    e.observation_ids.push_back(i + 1);
  }
  return e;
}

// args: observations per envelope, envelopes per batch.
void BM_PublishBatch(benchmark::State& state) {
  if (TheServer() == nullptr) {
    state.SkipWithError("no local nats-server (not installed, or it did not start)");
    return;
  }
  auto conn = Connect();
  if (!conn) {
    state.SkipWithError("no connection to nats-server");
    return;
  }
  StreamConfig sc;
  sc.name = "BENCH";
  sc.max_bytes = int64_t{4} << 30;
  sc.max_age_ns = int64_t{600} * 1'000'000'000;
  if (!conn->EnsureStream(sc).ok()) {
    state.SkipWithError("cannot create the stream");
    return;
  }
  const int per_envelope = static_cast<int>(state.range(0));
  const int per_batch = static_cast<int>(state.range(1));
  Envelope e = Batch("gpu-node-0001", per_envelope);
  const std::string bytes = Encode(e);
  const std::string subject = Subject(e.place, e.kind);
  std::vector<OutMessage> batch(static_cast<size_t>(per_batch));
  uint64_t serial = 0;
  uint64_t envelopes = 0;
  uint64_t failures = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (auto& m : batch) {
      m.subject = subject;
      m.data = bytes;
      m.msg_id = "gpu-node-0001/obs/" + std::to_string(++serial) + "-" + std::to_string(state.range(0));
    }
    state.ResumeTiming();
    for (const auto& r : conn->PublishBatch(batch, int64_t{30} * 1'000'000'000)) {
      if (r.status.ok()) {
        ++envelopes;
      } else {
        ++failures;
      }
    }
  }
  (void)conn->DeleteStream("BENCH");
  state.counters["envelopes/s"] = benchmark::Counter(static_cast<double>(envelopes), benchmark::Counter::kIsRate);
  state.counters["observations/s"] =
      benchmark::Counter(static_cast<double>(envelopes) * per_envelope, benchmark::Counter::kIsRate);
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(envelopes) * static_cast<double>(bytes.size()) / 1e6,
                                              benchmark::Counter::kIsRate);
  state.counters["bytes/envelope"] = static_cast<double>(bytes.size());
  state.counters["failures"] = static_cast<double>(failures);
}
BENCHMARK(BM_PublishBatch)
    ->Args({100, 256})
    ->Args({1000, 64})
    ->Args({5000, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// The encode side an agent pays per envelope (wire.h), for comparison.
void BM_EncodeEnvelope(benchmark::State& state) {
  Envelope e = Batch("gpu-node-0001", static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Encode(e));
  state.counters["observations/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(state.range(0)), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EncodeEnvelope)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace faultline::fleet::nats

BENCHMARK_MAIN();
