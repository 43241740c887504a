// The dcgm-exporter source (DESIGN.md "Sources"): reads one scrape of an existing
// dcgm-exporter /metrics endpoint, or a saved scrape file, and returns GPU-layer
// observations (the mapping is parse/dcgm_map.h; this source only fetches).
//
// Only the URL or file the operator gives is read: no discovery, no redirects. TLS
// verification is on unless the operator turns it off. Not thread-safe per instance
// (it is cheap; make one per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/types.h"
#include "parse/prometheus.h"
#include "sources/dcgm_exporter/http_fetcher.h"

namespace faultline {

struct DcgmExporterOptions {
  std::string url;                    // e.g. "http://127.0.0.1:9400/metrics"; exactly one of url / file
  std::string file;                   // a saved scrape (curl -s host:9400/metrics > file)
  std::string node;                   // node name; empty = the series' Hostname label
  HttpGetOptions http;                // timeout 5 s, connect 2 s, body cap 16 MiB, TLS verify on
  PromParseOptions parse;             // parser caps (see prometheus.h)
  size_t max_file_bytes = 16u << 20;  // same cap as an HTTP body
};

struct DcgmCollection {
  std::vector<Observation> observations;
  std::vector<std::string> errors;  // per-line parse errors and unattributable series
  size_t blank_values = 0;          // DCGM blank sentinels skipped
};

// Reads a whole file, failing with kNotFound (absent / unreadable), kCorrupt (over
// max_bytes) or kIoError.
Result<std::string> ReadScrapeFile(const std::string& path, size_t max_bytes);

class DcgmExporterSource {
 public:
  // `fetcher` is used for url mode and may be null in file mode; not owned, must
  // outlive the source. `clock` stamps samples that carry no timestamp.
  DcgmExporterSource(DcgmExporterOptions options, const Clock& clock, HttpFetcher* fetcher);

  // One scrape. Errors: kInvalidArgument (neither or both of url/file, no fetcher),
  // the fetch/read error as is, or the parser's whole-input error. Malformed lines do
  // not fail the scrape; they are listed in DcgmCollection::errors.
  Result<DcgmCollection> Collect() const;

  // Parses and maps already-read text (what Collect does after reading).
  Result<DcgmCollection> FromText(std::string_view text, int64_t time_ns) const;

 private:
  DcgmExporterOptions options_;
  const Clock& clock_;
  HttpFetcher* fetcher_;
};

}  // namespace faultline
