// The RoCE / Ethernet source's cost (docs/ethernet.md "Figures"): one full sample over a
// fake RoCE node (8 RoCE NICs with netdevs + 2 management RoCE ports), the hw_counters
// burst of one port alone, the interface part alone, and one SIOCETHTOOL round trip on
// the real kernel's `lo` (which answers "not supported": the syscall floor of the ioctl).
// On a real mlx5 a burst costs firmware commands on top of this (A3); the fake tree
// measures the source's own work.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "core/clock.h"
#include "engine/detect/fabric_roce.h"
#include "sim/fake_sysfs/fake_ethernet.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sources/ethernet/collector.h"

namespace faultline {
namespace {

struct Node {
  std::string dir = FakeSysfsScratchDir("bench_ethernet");
  std::unique_ptr<FakeSysfsTree> tree;
  std::unique_ptr<FakeEthernet> eth;
  Node() {
    std::filesystem::remove_all(dir);
    tree = std::make_unique<FakeSysfsTree>(std::move(*FakeSysfsTree::Create(dir)));
    std::vector<std::string> devs, netdevs;
    for (int i = 0; i < 8; ++i)
      devs.push_back("mlx5_" + std::to_string(i)), netdevs.push_back("eth" + std::to_string(i));
    eth = std::make_unique<FakeEthernet>(std::move(*FakeEthernet::Create(*tree, devs, netdevs)));
    std::map<std::string, uint64_t> stats;
    for (int p = 0; p < 8; ++p) {
      stats["rx_prio" + std::to_string(p) + "_pause"] = 100;
      stats["rx_prio" + std::to_string(p) + "_pause_duration"] = 100;
      stats["tx_prio" + std::to_string(p) + "_pause"] = 100;
    }
    for (int q = 0; q < 200; ++q) stats["rx" + std::to_string(q) + "_packets"] = 1;  // per-queue noise
    for (size_t i = 0; i < 8; ++i) (void)eth->SetEthtool(i, stats);
  }
  ~Node() { std::filesystem::remove_all(dir); }
};

Node& TheNode() {
  static Node node;
  return node;
}

void BM_EthernetSample(benchmark::State& state) {
  Node& n = TheNode();
  RootFs fs(n.dir);
  FileEthtoolStats stats(fs);
  FakeClock clock(1'700'000'000'000'000'000, 1'000'000'000'000);
  EthernetCollector c(fs, stats, clock, EthernetOptions{.rdma_interval_ns = 0, .rdma_max_ports_per_sample = 64});
  (void)c.Collect();  // discovery
  size_t obs = 0;
  for (auto _ : state) {
    EthernetSample s = c.Collect();
    obs = s.observations.size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["observations"] = static_cast<double>(obs);
  state.counters["roce_ports"] = static_cast<double>(c.roce_ports().size());
}
BENCHMARK(BM_EthernetSample)->Unit(benchmark::kMicrosecond);

void BM_EthernetSampleAndDetect(benchmark::State& state) {
  Node& n = TheNode();
  RootFs fs(n.dir);
  FileEthtoolStats stats(fs);
  FakeClock clock(1'700'000'000'000'000'000, 1'000'000'000'000);
  EthernetCollector c(fs, stats, clock, EthernetOptions{.rdma_interval_ns = 0, .rdma_max_ports_per_sample = 64});
  RoceFabricDetector d(RoceOptions{}, nullptr);
  for (auto _ : state) {
    clock.Advance(10'000'000'000);
    EthernetSample s = c.Collect();
    for (const Observation& o : s.observations) d.Observe(o);
    benchmark::DoNotOptimize(d.Findings());
  }
}
BENCHMARK(BM_EthernetSampleAndDetect)->Unit(benchmark::kMicrosecond);

// One port's hw_counters burst (what the bound limits), from the collector's own cost().
void BM_RoceHwCountersOnePort(benchmark::State& state) {
  Node& n = TheNode();
  RootFs fs(n.dir);
  FileEthtoolStats stats(fs);
  FakeClock clock(1'700'000'000'000'000'000, 1'000'000'000'000);
  EthernetCollector c(fs, stats, clock,
                      EthernetOptions{.rdma_interval_ns = 0, .rdma_max_ports_per_sample = 1, .ethtool = false});
  (void)c.Collect();
  const EthernetCost before = c.cost();
  int64_t samples = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(c.Collect());
    ++samples;
  }
  const EthernetCost& after = c.cost();
  const double bursts = static_cast<double>(after.port_reads - before.port_reads);
  state.counters["burst_us"] = bursts > 0 ? static_cast<double>(after.total_ns - before.total_ns) / bursts / 1e3 : 0;
  state.counters["files_per_burst"] =
      bursts > 0 ? static_cast<double>(after.file_reads - before.file_reads) / bursts : 0;
  (void)samples;
}
BENCHMARK(BM_RoceHwCountersOnePort)->Unit(benchmark::kMicrosecond);

void BM_EthtoolIoctlLoopback(benchmark::State& state) {
  IoctlEthtoolStats ioctl;
  for (auto _ : state) benchmark::DoNotOptimize(ioctl.Read("lo"));
}
BENCHMARK(BM_EthtoolIoctlLoopback)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace faultline

BENCHMARK_MAIN();
