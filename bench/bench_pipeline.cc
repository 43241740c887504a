// Store volume of the agent's pipeline: rows stored per day for an 8-GPU node sampled by
// NVML every second, with and without change-only storage (daemon/change_filter.h).
//
// The readings come through the real collector and the fake libnvidia-ml.so.1, whose
// state file is rewritten every simulated second with realistic wander: board power
// changes every sample, GPU/HBM temperatures drift a degree now and then, the SM clock
// dips under the power cap about one sample in ten (with SW_POWER_CAP set), ECC, NVLink
// CRC and PCIe replay counters creep up rarely, and the rest (identity, limits, link
// states, most counters) is flat. Every sample goes through Pipeline::Ingest into a real
// SQLite store and the detectors; rows/day extrapolates the simulated span.
//   build/bench/bench_pipeline --benchmark_counters_tabular=true
// Args: filter (0 = store every sample, 1 = change-only, 5 min heartbeat), simulated seconds.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/clock.h"
#include "core/time.h"
#include "daemon/pipeline.h"
#include "sources/nvml/nvml_collector.h"
#include "store/store.h"

namespace faultline {
namespace {

using Json = nlohmann::json;
constexpr int64_t kT0 = 1764410400LL * kNsPerSec;
constexpr int kGpus = 8;
constexpr int kLinks = 18;

std::string FakeLibraryPath() {
  if (const char* env = getenv("FAULTLINE_NVML_LIB")) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path().parent_path() / "src/sim/fake_nvml/libnvidia-ml.so.1").string();
}

// One GPU's changing readings; everything else in its state is constant.
struct GpuWander {
  int temp = 41, mem_temp = 38, sm_clock = 1980, ecc_sbe = 3, replay = 0;
  int power_mw = 312000;
  uint64_t reasons = 0;
  int crc_flit[kLinks] = {};
};

class Wander {
 public:
  explicit Wander(uint32_t seed) : rng_(seed) {}

  void Step(GpuWander& g) {
    if (Chance(0.2)) g.temp = std::clamp(g.temp + (Chance(0.5) ? 1 : -1), 38, 75);
    if (Chance(0.1)) g.mem_temp = std::clamp(g.mem_temp + (Chance(0.5) ? 1 : -1), 35, 70);
    g.power_mw = 312000 + static_cast<int>(power_noise_(rng_));
    const bool capped = Chance(0.1);
    g.sm_clock = capped ? 1980 - 15 * static_cast<int>(1 + rng_() % 10) : 1980;
    g.reasons = capped ? 0x4 : 0;
    if (Chance(1.0 / 3600)) ++g.ecc_sbe;
    if (Chance(1.0 / 7200)) ++g.replay;
    for (int& c : g.crc_flit) c += Chance(1.0 / 1800) ? 1 : 0;
  }

 private:
  bool Chance(double p) { return uniform_(rng_) < p; }
  std::mt19937 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  std::normal_distribution<double> power_noise_{0.0, 15000.0};
};

Json GpuState(int i, const GpuWander& g) {
  Json links = Json::array();
  for (int l = 0; l < kLinks; ++l) links.push_back({{"active", true}, {"crc_flit", g.crc_flit[l]}, {"replay", 0}});
  return Json{{"name", "NVIDIA H100 80GB HBM3"},
              {"uuid", "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i)},
              {"serial", "16542230010" + std::to_string(i)},
              {"pci_bus_id", "00000000:" + std::to_string(10 + i) + ":00.0"},
              {"ecc",
               {{"volatile", {{"corrected", g.ecc_sbe}, {"uncorrected", 0}}},
                {"aggregate", {{"corrected", g.ecc_sbe + 6}, {"uncorrected", 0}}}}},
              {"ecc_locations",
               {{"volatile", {{"corrected", {{"dram", g.ecc_sbe}, {"sram", 0}}}}},
                {"aggregate", {{"corrected", {{"dram", g.ecc_sbe + 6}, {"sram", 0}}}}}}},
              {"retired_pages", {{"sbe", 0}, {"dbe", 0}, {"pending", false}}},
              {"remapped_rows", {{"correctable", 0}, {"uncorrectable", 0}}},
              {"temperature", {{"gpu", g.temp}, {"memory", g.mem_temp}, {"slowdown", 87}, {"shutdown", 92}}},
              {"power", {{"usage_mw", g.power_mw}, {"limit_mw", 700000}}},
              {"clocks", {{"sm", g.sm_clock}, {"mem", 2619}}},
              {"clock_event_reasons", g.reasons},
              {"pcie", {{"replay", g.replay}, {"gen", 5}, {"max_gen", 5}, {"width", 16}, {"max_width", 16}}},
              {"nvlink", links}};
}

void WriteState(const std::string& path, const std::vector<GpuWander>& gpus) {
  Json all = Json::array();
  for (int i = 0; i < kGpus; ++i) all.push_back(GpuState(i, gpus[static_cast<size_t>(i)]));
  // Written aside and renamed: the fake re-reads the file when its inode changes.
  std::ofstream(path + ".tmp") << Json{{"gpus", all}}.dump();
  std::filesystem::rename(path + ".tmp", path);
}

void BM_PipelineRowsPerDay(benchmark::State& state) {
  const bool filter = state.range(0) != 0;
  const int64_t seconds = state.range(1);
  const std::string dir = std::filesystem::temp_directory_path() / ("bench_pipeline_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string state_file = dir + "/state.json";
  std::vector<GpuWander> gpus(kGpus);
  WriteState(state_file, gpus);
  setenv("FAKE_NVML_STATE", state_file.c_str(), 1);

  FakeClock clock(kT0, 3600 * kNsPerSec);
  nvml::NvmlOptions options;
  options.library_path = FakeLibraryPath();
  options.node = "bench";
  options.clock = &clock;
  auto collector = nvml::NvmlCollector::Open(options);
  auto store = Store::Open(dir + "/store.db");
  if (!collector.ok() || !store.ok()) {
    state.SkipWithError((collector.ok() ? store.status() : collector.status()).ToString().c_str());
    return;
  }
  daemon::PipelineOptions po;
  po.store_unchanged_heartbeat_ns = filter ? 300 * kNsPerSec : 0;
  uint64_t observations = 0, stored = 0;
  for (auto _ : state) {
    daemon::Pipeline pipeline(**store, "bench", po, nullptr);
    Wander wander(42);
    for (int64_t s = 0; s < seconds; ++s) {
      for (GpuWander& g : gpus) wander.Step(g);
      WriteState(state_file, gpus);
      daemon::SourceBatch batch;
      batch.observations = (*collector)->Sample().observations;
      observations += batch.observations.size();
      auto r = pipeline.Ingest(Layer::kGpu, std::move(batch));
      if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
      stored += r->inserted;
      clock.Advance(kNsPerSec);
    }
  }
  const double days = static_cast<double>(seconds * static_cast<int64_t>(state.iterations())) / 86400.0;
  state.counters["obs_per_sample"] =
      static_cast<double>(observations) / static_cast<double>(seconds) / static_cast<double>(state.iterations());
  state.counters["rows_per_day"] = static_cast<double>(stored) / days;
  state.counters["obs_per_day"] = static_cast<double>(observations) / days;
  // Without the filter every observation is a row (each sample has its own time).
  state.counters["reduction_x"] =
      static_cast<double>(observations) / static_cast<double>(std::max<uint64_t>(stored, 1));
  collector->reset();
  store->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_PipelineRowsPerDay)
    ->ArgNames({"filter", "sim_seconds"})
    ->Args({0, 600})
    ->Args({1, 600})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace faultline

BENCHMARK_MAIN();
