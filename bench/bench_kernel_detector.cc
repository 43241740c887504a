// Kernel detector cost as the agent pays it: Findings() after a history of N kernel
// observations (Arg = N: XIDs from programs on 8 GPUs, unknown codes, corrected AER,
// contained XID 94), and Observe() per observation. Findings() must not grow with N: the
// detector folds each observation once into bounded state. Counters print the state
// size and the number of findings.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "engine/detect/kernel_detector.h"

namespace faultline {
namespace {

Observation Xid(int i) {
  Observation o;
  o.source = Source::kKmsg;
  o.time_ns = 1'772'359'200'000'000'000LL + static_cast<int64_t>(i) * 10'000'000;
  char bdf[32];
  std::snprintf(bdf, sizeof bdf, "0000:%02x:00.0", 0x1b + 0x20 * (i % 8));
  o.component = ComponentRef{ComponentType::kGpu, bdf, {{"bdf", bdf}}};
  o.raw = "NVRM: Xid (PCI:" + std::string(bdf) + "): line " + std::to_string(i);
  switch (i % 4) {
    case 0:
      o.kind = ObsKind::kXid, o.code = 13;
      o.attrs = {{"pid", std::to_string(i % 5000)},
                 {"process", "python3"},
                 {"gpc", std::to_string(i % 8)},
                 {"tpc", std::to_string(i % 9)}};
      break;
    case 1:
      o.kind = ObsKind::kXid, o.code = 31;
      o.attrs = {{"pid", std::to_string(i)}, {"process", "train.py"}};
      break;
    case 2:
      o.kind = ObsKind::kXid, o.code = 94;
      break;
    default:
      o.kind = ObsKind::kPcieAer;
      o.component = PcieComponent(bdf);
      o.attrs = {{"severity", "Corrected"}, {"type", "Physical Layer"}};
      break;
  }
  return o;
}

void BM_KernelFindingsAfterHistory(benchmark::State& state) {
  KernelDetector d;
  const int n = static_cast<int>(state.range(0));
  for (int i = 0; i < n; ++i) d.Observe(Xid(i));
  size_t findings = 0;
  for (auto _ : state) {
    auto fs = d.Findings();
    findings = fs.size();
    benchmark::DoNotOptimize(fs);
  }
  state.counters["history"] = n;
  state.counters["state_entries"] = static_cast<double>(d.StateSize());
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_KernelFindingsAfterHistory)
    ->Arg(1'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);

void BM_KernelObserve(benchmark::State& state) {
  KernelDetector d;
  int i = 0;
  for (auto _ : state) d.Observe(Xid(i++));
  state.SetItemsProcessed(state.iterations());
  state.counters["state_entries"] = static_cast<double>(d.StateSize());
}
BENCHMARK(BM_KernelObserve);

}  // namespace
}  // namespace faultline

BENCHMARK_MAIN();
