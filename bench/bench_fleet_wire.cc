// Fleet ingest cost (docs/fleet.md "Wire format"): encoding and decoding observation
// batches of the kind agents publish (per GPU SM/memory clock, power, temperature and
// utilisation, plus the job's step time), and decode + analyzer ingest end to end, with
// the analyzer's Evaluate over a fleet. Items are observations.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "fleet/analyzer.h"
#include "fleet/wire.h"

namespace faultline::fleet {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'772'359'200LL * kSec;

Observation Gpu(const std::string& node, int gpu, ObsKind kind, double value, int64_t t, const char* sub) {
  Observation o;
  o.time_ns = t;
  o.node = node;
  o.layer = Layer::kGpu;
  o.component = GpuComponent(std::to_string(gpu));
  o.kind = kind;
  o.value = value;
  o.source = Source::kNvml;
  o.text = std::string("nvmlDevice ") + std::string(ToString(kind)) + "=" + std::to_string(static_cast<int>(value));
  if (sub[0] != '\0') o.attrs[kind == ObsKind::kClock ? "clock" : "metric"] = sub;
  return o;
}

// One node's batch: `ticks` sampling rounds of 8 GPUs x 5 readings + one step time.
Envelope NodeBatch(int node, int ticks, int64_t first_row) {
  Envelope e;
  e.kind = RecordKind::kObservations;
  const std::string name = "gpu-node-" + std::to_string(node);
  e.place = {.site = "dc1", .rack = "r" + std::to_string(node / 32), .node = name};
  for (int t = 0; t < ticks; ++t) {
    const int64_t at = kT0 + t * kSec;
    for (int g = 0; g < 8; ++g) {
      e.observations.push_back(Gpu(name, g, ObsKind::kClock, 1410 - (t + g) % 7, at, "sm"));
      e.observations.push_back(Gpu(name, g, ObsKind::kClock, 2619, at, "mem"));
      e.observations.push_back(Gpu(name, g, ObsKind::kPower, 650.5 + g, at, ""));
      e.observations.push_back(Gpu(name, g, ObsKind::kTemperature, 61 + g % 3, at, ""));
      e.observations.push_back(Gpu(name, g, ObsKind::kOther, 97, at, "utilization"));
    }
    Observation s;
    s.time_ns = at;
    s.node = name;
    s.layer = Layer::kWorkload;
    s.kind = ObsKind::kStepTime;
    s.source = Source::kWorkload;
    s.seq = static_cast<uint64_t>(t);
    s.value = 1.02 + 0.001 * (t % 5);
    s.attrs = {{"job", "train-1"}, {"rank", std::to_string(node)}, {"unit", "s"}};
    s.text = "train-1 step " + std::to_string(t) + " took 1.02 s";
    e.observations.push_back(s);
  }
  for (size_t i = 0; i < e.observations.size(); ++i) e.observation_ids.push_back(first_row + static_cast<int64_t>(i));
  e.msg_id = MakeMsgId(name, RecordKind::kObservations, first_row, first_row + e.observations.size() - 1);
  return e;
}

void BM_EncodeBatch(benchmark::State& state) {
  const Envelope e = NodeBatch(7, static_cast<int>(state.range(0)), 1);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string s = Encode(e);
    bytes = s.size();
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * e.observations.size()));
  state.counters["bytes_per_obs"] = static_cast<double>(bytes) / static_cast<double>(e.observations.size());
}
BENCHMARK(BM_EncodeBatch)->Arg(1)->Arg(24);

void BM_DecodeBatch(benchmark::State& state) {
  const Envelope e = NodeBatch(7, static_cast<int>(state.range(0)), 1);
  const std::string bytes = Encode(e);
  for (auto _ : state) {
    auto d = Decode(bytes);
    if (!d.ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * e.observations.size()));
}
BENCHMARK(BM_DecodeBatch)->Arg(1)->Arg(24);

// As a consumer decodes: every message into the same Envelope (DecodeInto), its storage
// reused. Two different batches alternate so no message finds its own shape waiting.
void BM_DecodeIntoReused(benchmark::State& state) {
  const auto ticks = static_cast<int>(state.range(0));
  const std::string a = Encode(NodeBatch(7, ticks, 1)), b = Encode(NodeBatch(8, ticks + 1, 1000));
  Envelope e;
  size_t items = 0;
  bool flip = false;
  for (auto _ : state) {
    if (!DecodeInto(flip ? a : b, e).ok()) state.SkipWithError("decode failed");
    items += e.observations.size();
    flip = !flip;
    benchmark::DoNotOptimize(e);
  }
  state.SetItemsProcessed(static_cast<int64_t>(items));
}
BENCHMARK(BM_DecodeIntoReused)->Arg(1)->Arg(24);

// One publish of an agent's change-only store (every 1-5 s): the job's step time and
// throughput (attrs job/rank/step/time_source/unit, text, raw), then per-GPU readings that
// changed (clock, power, temperature, throttle mask; GPUs named by index with uuid/bdf
// keys), `count` observations in all. Most fleet envelopes look like this: a handful of
// lines under one header, so the header's cost is a large share of each observation's.
Envelope AgentPublish(int node, int count, int64_t first_row) {
  Envelope e;
  e.kind = RecordKind::kObservations;
  const std::string name = "gpu-node-" + std::to_string(node);
  e.place = {.site = "dc1", .rack = "r" + std::to_string(node / 32), .node = name};
  e.sent_ns = kT0 + 2 * kSec + 12345;
  const int64_t at = kT0 + kSec;
  for (int i = 0; i < count; ++i) {
    Observation o;
    o.time_ns = at + i;
    o.node = name;
    if (i < 2) {
      const bool step = i == 0;
      o.layer = Layer::kWorkload;
      o.source = Source::kWorkload;
      o.kind = step ? ObsKind::kStepTime : ObsKind::kThroughput;
      o.component = HostComponent();
      o.seq = 4711;
      o.value = step ? 1.0213 : 3008.2;
      o.attrs = {{"job", "train-llm-7"},
                 {"rank", std::to_string(node)},
                 {"step", "4711"},
                 {"time_source", "reported"},
                 {"unit", step ? "s" : "samples/s"}};
      o.text = step ? "train-llm-7 step 4711 took 1.0213 s" : "train-llm-7 step 4711 at 3008.2 samples/s";
      if (step) o.raw = "job=train-llm-7 rank=" + std::to_string(node) + " step=4711 step_time_s=1.0213";
    } else {
      const int gpu = (i - 2) / 4 % 8;
      static constexpr ObsKind kKinds[] = {ObsKind::kClock, ObsKind::kPower, ObsKind::kTemperature,
                                           ObsKind::kClockThrottle};
      const ObsKind kind = kKinds[(i - 2) % 4];
      o.layer = Layer::kGpu;
      o.source = Source::kNvml;
      o.kind = kind;
      o.component = GpuComponent(std::to_string(gpu));
      o.component.keys = {{"bdf", "0000:" + std::to_string(17 + gpu) + ":00.0"},
                          {"uuid", "GPU-5a1c07e2-3f1b-4d2e-9c1a-00000000000" + std::to_string(gpu)}};
      o.value = kind == ObsKind::kClock ? 1410 : kind == ObsKind::kPower ? 651 + gpu : 61 + gpu % 3;
      if (kind == ObsKind::kClock) o.attrs["clock"] = "sm";
      if (kind == ObsKind::kTemperature) o.attrs["sensor"] = "gpu";
      if (kind == ObsKind::kClockThrottle) o.attrs["mask"] = "0x0000000000000000";
    }
    e.observations.push_back(std::move(o));
    e.observation_ids.push_back(first_row + i);
  }
  e.msg_id = MakeMsgId(name, RecordKind::kObservations, first_row, first_row + count - 1) + "@5f3c9a1e77b0d2c4";
  return e;
}

// Decode of many nodes' small publishes in turn (as the consumer sees them: each message
// once, caches not warmed by the same bytes). range(0) = observations per envelope.
void BM_DecodeSmall(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  std::vector<std::string> messages;
  for (int n = 0; n < 256; ++n) messages.push_back(Encode(AgentPublish(n, count, 1000 + n)));
  size_t i = 0;
  for (auto _ : state) {
    auto d = Decode(messages[i]);
    if (!d.ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(d);
    i = (i + 1) % messages.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * count);
  state.counters["bytes"] = static_cast<double>(messages[0].size());
}
BENCHMARK(BM_DecodeSmall)->Arg(0)->Arg(1)->Arg(5)->Arg(10)->Arg(40);

// Decode + Ingest of one batch from each of `nodes` nodes into a fresh analyzer.
void BM_DecodeAndIngest(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  std::vector<std::string> messages;
  size_t observations = 0;
  for (int n = 0; n < nodes; ++n) {
    const Envelope e = NodeBatch(n, 4, 1);
    observations += e.observations.size();
    messages.push_back(Encode(e));
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto analyzer = std::make_unique<FleetAnalyzer>(FleetTopology{});
    state.ResumeTiming();
    for (const std::string& m : messages) {
      if (!analyzer->IngestMessage(m).ok()) state.SkipWithError("ingest failed");
    }
    state.PauseTiming();
    analyzer.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * observations));
}
BENCHMARK(BM_DecodeAndIngest)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// Decode + Ingest of one small publish (range(1) observations) from each of range(0)
// nodes into a fresh analyzer: the consumer's steady state.
void BM_DecodeAndIngestSmall(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int count = static_cast<int>(state.range(1));
  std::vector<std::string> messages;
  for (int n = 0; n < nodes; ++n) messages.push_back(Encode(AgentPublish(n, count, 1000)));
  for (auto _ : state) {
    state.PauseTiming();
    auto analyzer = std::make_unique<FleetAnalyzer>(FleetTopology{});
    state.ResumeTiming();
    for (const std::string& m : messages) {
      if (!analyzer->IngestMessage(m).ok()) state.SkipWithError("ingest failed");
    }
    state.PauseTiming();
    analyzer.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * nodes * count);
}
BENCHMARK(BM_DecodeAndIngestSmall)->Args({10000, 10})->Unit(benchmark::kMillisecond);

// One Evaluate over `nodes` nodes of one job, each with a window of samples and readings;
// with range(1) = 1, every 100th node is 30% slower (stragglers to name, GPU medians and
// node isolators to run on the first evaluation; the later ones find them unchanged).
void BM_Evaluate(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  FleetAnalyzer analyzer(FleetTopology{});
  for (int n = 0; n < nodes; ++n) {
    Envelope e = NodeBatch(n, 32, 1);
    if (state.range(1) != 0 && n % 100 == 0) {
      for (Observation& o : e.observations) {
        if (o.kind == ObsKind::kStepTime) *o.value *= 1.3;
      }
    }
    analyzer.Ingest(e);
  }
  const int64_t now = kT0 + 32 * kSec;
  size_t named = 0;
  for (auto _ : state) {
    auto out = analyzer.Evaluate(now);
    named += out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["state_bytes_per_node"] = static_cast<double>(analyzer.ApproxStateBytes()) / nodes;
  state.counters["open"] = static_cast<double>(analyzer.Open().size());
}
BENCHMARK(BM_Evaluate)->Args({1000, 0})->Args({10000, 0})->Args({10000, 1})->Unit(benchmark::kMillisecond);

// Snapshot, and Restore into a fresh analyzer, of `nodes` nodes' state (what the consumer
// saves to its KV bucket and reads back after a restart), timed apart.
void BM_Snapshot(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  FleetAnalyzer analyzer(FleetTopology{});
  for (int n = 0; n < nodes; ++n) analyzer.Ingest(NodeBatch(n, 32, 1));
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string snap = analyzer.Snapshot();
    bytes = snap.size();
    benchmark::DoNotOptimize(snap);
  }
  state.counters["snapshot_bytes_per_node"] = static_cast<double>(bytes) / nodes;
}
BENCHMARK(BM_Snapshot)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_Restore(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  FleetAnalyzer analyzer(FleetTopology{});
  for (int n = 0; n < nodes; ++n) analyzer.Ingest(NodeBatch(n, 32, 1));
  const std::string snap = analyzer.Snapshot();
  for (auto _ : state) {
    FleetAnalyzer restored(FleetTopology{});
    if (!restored.Restore(snap).ok()) state.SkipWithError("restore failed");
  }
}
BENCHMARK(BM_Restore)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace faultline::fleet

BENCHMARK_MAIN();
