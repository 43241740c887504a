// Isolator cost on node-sized finding sets: a PSU -> power brake -> slow steps chain on
// 8 GPUs plus background findings (user XIDs, SBE aging, NVLink/IB errors on many links)
// spread over an hour. Arg = number of findings.
#include <benchmark/benchmark.h>

#include <string>

#include "engine/isolate/isolator.h"

namespace faultline {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'772'359'200LL * kSec;

Finding MakeFinding(Layer layer, FaultClass cls, ComponentRef component, int64_t at) {
  Finding f;
  f.layer = layer;
  f.fault_class = cls;
  f.component = std::move(component);
  f.first_ns = f.last_ns = at;
  f.severity = Severity::kWarning;
  f.confidence = 0.8;
  f.summary = std::string(ToString(cls));
  Evidence e;
  e.time_ns = at;
  e.component = f.component.Id();
  e.text = f.summary;
  f.evidence.push_back(e);
  return f;
}

ComponentRef Gpu(int i) {
  ComponentRef ref{ComponentType::kGpu, std::to_string(i), {}};
  ref.keys["index"] = std::to_string(i);
  ref.keys["bdf"] = "0000:" + std::string(1, "1234589a"[i % 8]) + "b:00.0";
  ref.keys["serial"] = "16509230" + std::to_string(1000 + i);
  return ref;
}

// `distinct`: every background finding on its own component (the worst case for grouping).
IsolateInput NodeInput(int n, bool distinct) {
  IsolateInput in;
  in.layers_with_data = {Layer::kOob, Layer::kGpu, Layer::kOs, Layer::kFabric, Layer::kWorkload};
  in.slowdown_reported = true;
  in.findings.push_back(MakeFinding(Layer::kOob, FaultClass::kPowerSupply, {ComponentType::kPsu, "1", {}}, kT0));
  for (int g = 0; g < 8; ++g) {
    in.findings.push_back(MakeFinding(Layer::kGpu, FaultClass::kGpuPowerBrake, Gpu(g), kT0 + (10 + g) * kSec));
  }
  in.findings.push_back(
      MakeFinding(Layer::kWorkload, FaultClass::kWorkloadImbalance, HostComponent("job"), kT0 + 60 * kSec));
  constexpr FaultClass kNoise[] = {FaultClass::kUserApplication, FaultClass::kHbmSbeAging, FaultClass::kNvlinkErrors,
                                   FaultClass::kIbLinkErrors};
  for (int i = static_cast<int>(in.findings.size()); i < n; ++i) {
    const FaultClass cls = kNoise[i % 4];
    ComponentRef ref = Gpu(i % 8);
    if (cls == FaultClass::kNvlinkErrors)
      ref = {ComponentType::kNvlink, std::to_string(i % 8) + "/" + std::to_string(i % 18), {}};
    if (cls == FaultClass::kIbLinkErrors) ref = {ComponentType::kIb, "mlx5_" + std::to_string(i % 8) + "/1", {}};
    if (distinct) ref = {ComponentType::kIb, "mlx5_" + std::to_string(i) + "/1", {}};
    const Layer layer = cls == FaultClass::kUserApplication ? Layer::kOs
                        : cls == FaultClass::kHbmSbeAging   ? Layer::kGpu
                                                            : Layer::kFabric;
    in.findings.push_back(MakeFinding(layer, cls, ref, kT0 + static_cast<int64_t>(i) * 3600 * kSec / n));
  }
  return in;
}

void BM_IsolateNode(benchmark::State& state) {
  const IsolateInput in = NodeInput(static_cast<int>(state.range(0)), false);
  for (auto _ : state) benchmark::DoNotOptimize(Isolate(in));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_IsolateNode)->Arg(16)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);

void BM_IsolateDistinctComponents(benchmark::State& state) {
  const IsolateInput in = NodeInput(static_cast<int>(state.range(0)), true);
  for (auto _ : state) benchmark::DoNotOptimize(Isolate(in));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_IsolateDistinctComponents)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace faultline

BENCHMARK_MAIN();
