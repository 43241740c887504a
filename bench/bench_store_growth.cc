// Store growth of a healthy 8-GPU node at the agent's default NVML interval (10 s): rows
// and bytes per day, and how many days of history the 2 GiB cap then holds.
//
// The readings come through the real NVML collector and the fake libnvidia-ml.so.1, whose
// state file is rewritten before every sample with wander (board power moves every sample
// around a steady load, sigma 15 W; GPU/HBM temperatures step a degree now and then; the
// SM clock dips under the power cap about one sample in ten, with SW_POWER_CAP set; ECC,
// NVLink CRC and PCIe replay counters creep up rarely; identity, limits and link states
// are flat). Each sample goes through the agent's ChangeFilter and Store::Append, as in
// Pipeline::StoreBatch; bytes are the pages in use after a checkpoint
// (page_count - freelist) x page_size, not the file size.
//   build/bench/bench_store_growth --benchmark_counters_tabular=true
// Args: mode, simulated seconds. Modes: 0 = every sample stored; 1 = schema 1 (a flat
// series stored again at each 5-min heartbeat); 2 = series table (heartbeat = one small
// row updated in place), exact comparison; 3 = 2 + the dead-band (the default).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/clock.h"
#include "core/time.h"
#include "daemon/change_filter.h"
#include "sources/nvml/nvml_collector.h"
#include "store/store.h"

namespace faultline {
namespace {

using Json = nlohmann::json;
constexpr int64_t kT0 = 1764410400LL * kNsPerSec;
constexpr int kGpus = 8;
constexpr int kLinks = 18;
constexpr int64_t kSampleS = 10;

std::string FakeLibraryPath() {
  if (const char* env = getenv("FAULTLINE_NVML_LIB")) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path().parent_path() / "src/sim/fake_nvml/libnvidia-ml.so.1").string();
}

struct Gpu {
  int temp = 55, mem_temp = 50, sm_clock = 1980, ecc_sbe = 3, replay = 0;
  int power_mw = 420000;
  uint64_t reasons = 0;
  int crc_flit[kLinks] = {};
};

class Wander {
 public:
  explicit Wander(uint32_t seed) : rng_(seed) {}
  void Step(Gpu& g) {
    if (Chance(0.2)) g.temp = std::clamp(g.temp + (Chance(0.5) ? 1 : -1), 50, 70);
    if (Chance(0.1)) g.mem_temp = std::clamp(g.mem_temp + (Chance(0.5) ? 1 : -1), 45, 65);
    g.power_mw = 420000 + static_cast<int>(power_noise_(rng_));
    const bool capped = Chance(0.1);
    g.sm_clock = capped ? 1980 - 15 * static_cast<int>(1 + rng_() % 10) : 1980;
    g.reasons = capped ? 0x4 : 0;
    // Per 10 s sample: an SBE every ~10 h, a replay every ~20 h, a CRC per link every ~5 h.
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

Json GpuState(int i, const Gpu& g) {
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

void WriteState(const std::string& path, const std::vector<Gpu>& gpus) {
  Json all = Json::array();
  for (int i = 0; i < kGpus; ++i) all.push_back(GpuState(i, gpus[static_cast<size_t>(i)]));
  std::ofstream(path + ".tmp") << Json{{"gpus", all}}.dump();
  std::filesystem::rename(path + ".tmp", path);  // the fake re-reads the file when its inode changes
}

void BM_StoreGrowth(benchmark::State& state) {
  const int mode = static_cast<int>(state.range(0));
  const int64_t seconds = state.range(1);
  const std::string dir = std::filesystem::temp_directory_path() / ("bench_store_growth_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string state_file = dir + "/state.json";
  std::vector<Gpu> gpus(kGpus);
  WriteState(state_file, gpus);
  setenv("FAKE_NVML_STATE", state_file.c_str(), 1);
  FakeClock clock(kT0, 3600 * kNsPerSec);
  nvml::NvmlOptions options;
  options.library_path = FakeLibraryPath();
  options.node = "bench";
  options.clock = &clock;
  auto collector = nvml::NvmlCollector::Open(options);
  StoreOptions so;
  so.synchronous = StoreOptions::Synchronous::kNormal;
  auto store = Store::Open(dir + "/store.db", so);
  if (!collector.ok() || !store.ok()) {
    state.SkipWithError((collector.ok() ? store.status() : collector.status()).ToString().c_str());
    return;
  }
  daemon::ChangeFilterOptions fo;
  if (mode < 3) fo.deadbands.clear();
  daemon::ChangeFilter filter(fo);
  uint64_t observations = 0, marks = 0;
  std::map<std::string, uint64_t> rows_by_kind;  // what the rows left are made of
  for (auto _ : state) {
    Wander wander(42);
    for (int64_t s = 0; s < seconds; s += kSampleS) {
      for (Gpu& g : gpus) wander.Step(g);
      WriteState(state_file, gpus);
      std::vector<Observation> sample = (*collector)->Sample().observations;
      observations += sample.size();
      std::vector<Observation> rows, seen;
      for (Observation& o : sample) {
        const daemon::StoreDecision d = mode == 0 ? daemon::StoreDecision::kStore : filter.Decide(o);
        if (d == daemon::StoreDecision::kStore || (d == daemon::StoreDecision::kSeen && mode == 1)) {
          auto sensor = o.attrs.find("sensor");
          ++rows_by_kind[std::string(ToString(o.kind)) + (sensor == o.attrs.end() ? "" : "_" + sensor->second)];
          rows.push_back(std::move(o));
        } else if (d == daemon::StoreDecision::kSeen) {
          seen.push_back(std::move(o));
        }
      }
      marks += seen.size();
      if (auto r = (*store)->Append(rows, {}, seen); !r.ok()) return state.SkipWithError(r.status().ToString().c_str());
      clock.Advance(kSampleS * kNsPerSec);
    }
  }
  // Nothing is old enough to delete: this checkpoints the WAL into the file.
  (void)(*store)->ApplyRetention(clock.NowNs());
  auto stats = (*store)->Stats();
  if (!stats.ok()) return state.SkipWithError(stats.status().ToString().c_str());
  const double days = static_cast<double>(seconds * static_cast<int64_t>(state.iterations())) / 86400.0;
  const double mb_per_day = static_cast<double>(stats->used_bytes) / 1e6 / days;
  state.counters["obs_per_sample"] = static_cast<double>(observations) / static_cast<double>(seconds / kSampleS) /
                                     static_cast<double>(state.iterations());
  state.counters["rows_per_day"] = static_cast<double>(stats->observations) / days;
  state.counters["marks_per_day"] = static_cast<double>(marks) / days;
  state.counters["MB_per_day"] = mb_per_day;
  state.counters["bytes_per_row"] =
      static_cast<double>(stats->used_bytes) / static_cast<double>(std::max<int64_t>(stats->observations, 1));
  state.counters["days_to_2GiB"] = static_cast<double>(int64_t{2} << 30) / 1e6 / mb_per_day;
  // The kinds that make most of the rows (a quarter of a percent of them or more), per day.
  for (const auto& [kind, n] : rows_by_kind) {
    if (mode > 0 && n * 400 >= static_cast<uint64_t>(std::max<int64_t>(stats->observations, 1))) {
      state.counters["rows_per_day_" + kind] = static_cast<double>(n) / days;
    }
  }
  collector->reset();
  store->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_StoreGrowth)
    ->ArgNames({"mode", "sim_seconds"})
    ->Args({0, 3600})
    ->Args({1, 6 * 3600})
    ->Args({2, 6 * 3600})
    ->Args({3, 6 * 3600})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace faultline

BENCHMARK_MAIN();
