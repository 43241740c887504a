// Store throughput and latency: appends (observations/s) by batch size and
// synchronous level, re-appends of duplicates, and indexed window queries.
//   build/bench/bench_store --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "core/time.h"
#include "store/store.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1764410400LL * kNsPerSec;

Observation Sample(uint64_t i) {
  Observation o;
  o.time_ns = kT0 + static_cast<int64_t>(i) * kNsPerMs;
  o.seq = i;
  o.node = "gpu-node-07";
  o.layer = i % 2 ? Layer::kGpu : Layer::kOs;
  o.kind = i % 2 ? ObsKind::kTemperature : ObsKind::kXid;
  o.source = i % 2 ? Source::kNvml : Source::kKmsg;
  o.component = GpuComponent(std::to_string(i % 8));
  o.value = 60.0 + static_cast<double>(i % 20);
  o.raw = "NVRM: Xid (PCI:0000:b5:00): 79, pid=<unknown>, GPU has fallen off the bus. #" + std::to_string(i);
  o.attrs["pid"] = "1234";
  return o;
}

std::string TempDb(const char* name) {
  auto p = std::filesystem::temp_directory_path() /
           (std::string("faultline-bench-") + name + "-" + std::to_string(getpid()) + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
  return p.string();
}

void RemoveDb(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

// Args: batch size, synchronous (1 = FULL, 0 = NORMAL).
void BM_StoreAppend(benchmark::State& state) {
  const std::string path = TempDb("append");
  StoreOptions options;
  options.synchronous = state.range(1) ? StoreOptions::Synchronous::kFull : StoreOptions::Synchronous::kNormal;
  auto store = std::move(Store::Open(path, options).value());
  const auto batch_size = static_cast<uint64_t>(state.range(0));
  uint64_t next = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Observation> batch;
    for (uint64_t i = 0; i < batch_size; ++i) batch.push_back(Sample(next++));
    state.ResumeTiming();
    auto r = store->Append(batch, {{"gpu-node-07", "kmsg", "last_seq", std::to_string(next)}});
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.SetItemsProcessed(static_cast<int64_t>(next));
  store.reset();
  RemoveDb(path);
}
BENCHMARK(BM_StoreAppend)->ArgsProduct({{1, 100, 1000}, {0, 1}})->Unit(benchmark::kMicrosecond);

// Replays of already stored batches (restart re-reading what was stored).
void BM_StoreAppendDuplicates(benchmark::State& state) {
  const std::string path = TempDb("dup");
  auto store = std::move(Store::Open(path).value());
  std::vector<Observation> batch;
  for (uint64_t i = 0; i < 1000; ++i) batch.push_back(Sample(i));
  (void)store->Append(batch);
  for (auto _ : state) {
    auto r = store->Append(batch);
    if (!r.ok() || r->inserted != 0) state.SkipWithError("replay inserted rows");
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  store.reset();
  RemoveDb(path);
}
BENCHMARK(BM_StoreAppendDuplicates)->Unit(benchmark::kMicrosecond);

// A why-slow style query: one node, one component, a 60 s window, in a 200k-row store.
void BM_StoreQueryWindow(benchmark::State& state) {
  const std::string path = TempDb("query");
  StoreOptions options;
  options.synchronous = StoreOptions::Synchronous::kNormal;
  auto store = std::move(Store::Open(path, options).value());
  constexpr uint64_t kRows = 200000;
  for (uint64_t start = 0; start < kRows; start += 10000) {
    std::vector<Observation> batch;
    for (uint64_t i = start; i < start + 10000; ++i) batch.push_back(Sample(i));
    (void)store->Append(batch);
  }
  ObservationQuery q;
  q.node = "gpu-node-07";
  q.component = "gpu/3";
  size_t rows = 0;
  int64_t offset = 0;
  for (auto _ : state) {
    q.since_ns = kT0 + (offset % 140) * kNsPerSec;
    q.until_ns = q.since_ns + 60 * kNsPerSec;
    ++offset;
    auto r = store->QueryObservations(q);
    if (!r.ok())
      state.SkipWithError(r.status().ToString().c_str());
    else
      rows = r->rows.size();
  }
  state.counters["rows_per_query"] = static_cast<double>(rows);
  store.reset();
  RemoveDb(path);
}
BENCHMARK(BM_StoreQueryWindow)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace faultline

BENCHMARK_MAIN();
