// Cost of reading one dcgm-exporter scrape: Prometheus text parse, mapping to
// observations, and the GPU detector set over them, on the saved 8-GPU H100 scrape in
// tests/dcgm/data (360 lines, ~70 KiB, 36 series per GPU).
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "engine/detect/gpu_detectors.h"
#include "parse/prometheus.h"
#include "parse/dcgm_map.h"

namespace faultline {
namespace {

const std::string& Scrape() {
  static const std::string text = [] {
    std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/tests/dcgm/data/h100_faulty.prom");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  return text;
}

void BM_PrometheusParse(benchmark::State& state) {
  const std::string& text = Scrape();
  for (auto _ : state) {
    auto r = ParsePrometheusText(text);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_PrometheusParse);

void BM_DcgmParseAndMap(benchmark::State& state) {
  const std::string& text = Scrape();
  for (auto _ : state) {
    auto r = ParsePrometheusText(text);
    auto m = MapDcgmScrape(*r, 1'764'400'000LL * 1'000'000'000LL);
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_DcgmParseAndMap);

// Steady state: one scrape's observations into detectors that have seen many before.
void BM_GpuDetectorsPerScrape(benchmark::State& state) {
  auto r = ParsePrometheusText(Scrape());
  auto m = MapDcgmScrape(*r, 0);
  auto detectors = MakeGpuDetectors();
  int64_t t = 1'764'400'000LL * 1'000'000'000LL;
  for (auto _ : state) {
    t += 10'000'000'000LL;
    for (Observation& o : m.observations) o.time_ns = t;
    for (auto& d : detectors) {
      for (const Observation& o : m.observations) d->Observe(o);
    }
  }
  state.counters["observations"] = static_cast<double>(m.observations.size());
}
BENCHMARK(BM_GpuDetectorsPerScrape);

}  // namespace
}  // namespace faultline

BENCHMARK_MAIN();
