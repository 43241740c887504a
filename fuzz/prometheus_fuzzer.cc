// libFuzzer target for the Prometheus text parser and the dcgm-exporter mapping: any
// bytes must parse (or fail with a Status) and map without crashing, and every sample
// the parser accepts must respect the caps it was given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "parse/prometheus.h"
#include "parse/dcgm_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  faultline::PromParseOptions opt;
  opt.max_line_bytes = 4096;
  opt.max_labels = 16;
  opt.max_samples = 10000;
  auto scrape = faultline::ParsePrometheusText(text, opt);
  if (!scrape.ok()) return 0;
  for (const auto& s : scrape->samples) {
    if (s.labels.size() > opt.max_labels || s.raw.size() > opt.max_raw_bytes || s.name.empty()) std::abort();
  }
  auto mapped = faultline::MapDcgmScrape(*scrape, 1'764'400'000LL * 1'000'000'000LL);
  for (const auto& o : mapped.observations) {
    if (o.value && faultline::IsDcgmBlank(*o.value)) std::abort();
  }
  return 0;
}
