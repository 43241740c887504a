// Cost of one full fabric sample on an HGX-sized node (8 GPUs, 4 NVSwitches, 8 IB HCAs,
// 2 Ethernet NICs and the PCIe switches/root ports above them): read every link, AER
// and IB counter file through the sysfs collector, feed the fabric detectors, ask for
// findings. The tree lives in /dev/shm (tmpfs, like sysfs: no disk I/O) when available.
// faultline_sim_fake_sysfs is linked in by src/sim/fake_sysfs/CMakeLists.txt.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "core/clock.h"
#include "engine/detect/fabric_detectors.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sources/sysfs/collector.h"

namespace faultline {
namespace {

struct Node {
  explicit Node(const std::string& tag) : dir(FakeSysfsScratchDir(tag)) {
    std::filesystem::remove_all(dir);
    auto t = FakeSysfsTree::Create(dir);
    if (!t.ok()) std::abort();
    tree = std::make_unique<FakeSysfsTree>(std::move(*t));
  }
  ~Node() { std::filesystem::remove_all(dir); }
  std::string dir;
  std::unique_ptr<FakeSysfsTree> tree;
};

void BM_FabricCollect(benchmark::State& state) {
  Node node("bench_collect");
  RootFs fs(node.dir);
  FakeClock clock(1'700'000'000'000'000'000);
  SysfsCollector collector(fs, clock, SysfsOptions{"bench"}, nullptr);
  (void)collector.Collect();  // discovery, cached afterwards
  size_t observations = 0;
  for (auto _ : state) {
    clock.Advance(1'000'000'000);
    SysfsSample s = collector.Collect();
    observations = s.observations.size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["observations"] = static_cast<double>(observations);
}
BENCHMARK(BM_FabricCollect)->Unit(benchmark::kMicrosecond);

void BM_FabricSampleAndDetect(benchmark::State& state) {
  Node node("bench_full");
  RootFs fs(node.dir);
  FakeClock clock(1'700'000'000'000'000'000);
  SysfsCollector collector(fs, clock, SysfsOptions{"bench"}, nullptr);
  auto detectors = MakeFabricDetectors(FabricOptions{}, nullptr);
  (void)collector.Collect();
  for (auto _ : state) {
    clock.Advance(1'000'000'000);
    SysfsSample s = collector.Collect();
    for (const Observation& o : s.observations) {
      for (auto& d : detectors) d->Observe(o);
    }
    for (auto& d : detectors) benchmark::DoNotOptimize(d->Findings());
  }
}
BENCHMARK(BM_FabricSampleAndDetect)->Unit(benchmark::kMicrosecond);

void BM_FabricDiscovery(benchmark::State& state) {
  Node node("bench_discovery");
  RootFs fs(node.dir);
  FakeClock clock(1'700'000'000'000'000'000);
  SysfsCollector collector(fs, clock, SysfsOptions{"bench"}, nullptr);
  for (auto _ : state) {
    collector.Rescan();
    benchmark::DoNotOptimize(collector.Collect());
  }
}
BENCHMARK(BM_FabricDiscovery)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace faultline
BENCHMARK_MAIN();
