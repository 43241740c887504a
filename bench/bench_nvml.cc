// Cost of the NVML collector: one full Sample() of an 8-GPU HGX node through the fake
// libnvidia-ml.so.1 (real dlopen path), and the CPU share that costs at a 1 s interval.
//
// The fake answers from memory, so this measures the collector (and the C ABI call
// overhead); on a real node each NVML call also pays the driver round trip, which
// scripts/gpu-smoke.sh measures there.
//
// The fake library is found at $FAULTLINE_NVML_LIB, else next to this binary's build
// tree (<build>/src/sim/fake_nvml/libnvidia-ml.so.1).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sources/nvml/nvml_collector.h"

namespace faultline::nvml {
namespace {

using Json = nlohmann::json;

std::string FakeLibraryPath() {
  if (const char* env = getenv("FAULTLINE_NVML_LIB")) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path().parent_path() / "src/sim/fake_nvml/libnvidia-ml.so.1").string();
}

Json Gpu(int i) {
  Json links = Json::array();
  for (int l = 0; l < 18; ++l) links.push_back({{"active", true}, {"crc_flit", l}, {"replay", 0}});
  return Json{
      {"name", "NVIDIA H100 80GB HBM3"},
      {"uuid", "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i)},
      {"serial", "16542230010" + std::to_string(i)},
      {"pci_bus_id", "00000000:" + std::to_string(10 + i) + ":00.0"},
      {"ecc",
       {{"volatile", {{"corrected", 3}, {"uncorrected", 0}}}, {"aggregate", {{"corrected", 9}, {"uncorrected", 0}}}}},
      {"ecc_locations",
       {{"volatile", {{"corrected", {{"dram", 3}, {"sram", 0}}}}},
        {"aggregate", {{"corrected", {{"dram", 9}, {"sram", 0}}}}}}},
      {"retired_pages", {{"sbe", 0}, {"dbe", 0}, {"pending", false}}},
      {"remapped_rows", {{"correctable", 0}, {"uncorrectable", 0}}},
      {"temperature", {{"gpu", 41}, {"memory", 38}, {"slowdown", 87}, {"shutdown", 92}}},
      {"power", {{"usage_mw", 312000}, {"limit_mw", 700000}}},
      {"clocks", {{"sm", 1980}, {"mem", 2619}}},
      {"clock_event_reasons", 0},
      {"pcie", {{"replay", 0}, {"gen", 5}, {"max_gen", 5}, {"width", 16}, {"max_width", 16}}},
      {"nvlink", links}};
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

void BM_NvmlSample8Gpus(benchmark::State& state) {
  char tmpl[] = "/tmp/bench_nvml_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  Json gpus = Json::array();
  for (int i = 0; i < 8; ++i) gpus.push_back(Gpu(i));
  std::ofstream(dir + "/state.json") << Json{{"gpus", gpus}}.dump();
  setenv("FAKE_NVML_STATE", (dir + "/state.json").c_str(), 1);

  NvmlOptions options;
  options.library_path = FakeLibraryPath();
  options.node = "bench";
  options.per_location_ecc = state.range(0) != 0;
  auto collector = NvmlCollector::Open(options);
  if (!collector.ok()) {
    state.SkipWithError(collector.status().ToString().c_str());
    return;
  }
  size_t observations = 0;
  const double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    NvmlSample s = (*collector)->Sample();
    observations = s.observations.size();
    benchmark::DoNotOptimize(s);
  }
  const double cpu_per_sample = (ProcessCpuSeconds() - cpu_start) / static_cast<double>(state.iterations());
  state.counters["observations"] = static_cast<double>(observations);
  state.counters["us_cpu_per_sample"] = cpu_per_sample * 1e6;
  // One sample per second: CPU seconds per second, as a percentage of one core.
  state.counters["pct_core_at_1s"] = cpu_per_sample / 1.0 * 100.0;
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_NvmlSample8Gpus)->Arg(1)->Arg(0)->ArgName("per_location_ecc")->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace faultline::nvml

BENCHMARK_MAIN();
