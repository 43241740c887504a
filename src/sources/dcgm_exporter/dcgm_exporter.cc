#include "sources/dcgm_exporter/dcgm_exporter.h"

#include <fstream>
#include <sstream>

#include "parse/dcgm_map.h"

namespace faultline {

Result<std::string> ReadScrapeFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot open scrape file " + path);
  std::string data;
  char buf[64 * 1024];
  while (in) {
    in.read(buf, sizeof buf);
    const auto n = static_cast<size_t>(in.gcount());
    if (data.size() + n > max_bytes) {
      return Status(StatusCode::kCorrupt,
                    "scrape file " + path + " is larger than " + std::to_string(max_bytes) + " bytes");
    }
    data.append(buf, n);
  }
  if (in.bad()) return Status(StatusCode::kIoError, "error reading scrape file " + path);
  return data;
}

DcgmExporterSource::DcgmExporterSource(DcgmExporterOptions options, const Clock& clock, HttpFetcher* fetcher)
    : options_(std::move(options)), clock_(clock), fetcher_(fetcher) {}

Result<DcgmCollection> DcgmExporterSource::FromText(std::string_view text, int64_t time_ns) const {
  DcgmCollection out;
  Result<PromScrape> scrape = ParsePrometheusText(text, options_.parse);
  if (!scrape.ok()) return scrape.status();
  for (const PromLineError& e : scrape->errors) {
    out.errors.push_back("line " + std::to_string(e.line) + ": " + e.reason);
  }
  if (scrape->error_count > scrape->errors.size()) {
    out.errors.push_back(std::to_string(scrape->error_count - scrape->errors.size()) + " more malformed lines");
  }
  DcgmMapResult mapped = MapDcgmScrape(*scrape, time_ns, DcgmMapOptions{options_.node});
  out.observations = std::move(mapped.observations);
  out.blank_values = mapped.blank_values;
  for (std::string& w : mapped.warnings) out.errors.push_back(std::move(w));
  return out;
}

Result<DcgmCollection> DcgmExporterSource::Collect() const {
  if (options_.url.empty() == options_.file.empty()) {
    return Status(StatusCode::kInvalidArgument, "give exactly one of a dcgm-exporter URL or a scrape file");
  }
  Result<std::string> text = Status(StatusCode::kInternal, "unset");
  if (!options_.file.empty()) {
    text = ReadScrapeFile(options_.file, options_.max_file_bytes);
  } else if (fetcher_ == nullptr) {
    return Status(StatusCode::kInvalidArgument, "no HTTP client for URL mode");
  } else {
    text = fetcher_->Get(options_.url, options_.http);
  }
  if (!text.ok()) return text.status();
  return FromText(*text, clock_.NowNs());
}

}  // namespace faultline
