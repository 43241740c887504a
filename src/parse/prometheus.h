// Prometheus text exposition format (version 0.0.4) parser: the format dcgm-exporter,
// node-exporter and most agents serve on /metrics. Pure function from text to samples;
// no I/O.
//
// Accepted grammar, one record per line ('\n', an optional trailing '\r' is dropped):
//   # HELP <metric> <docstring>        docstring escapes: \\ and \n
//   # TYPE <metric> <counter|gauge|histogram|summary|untyped>
//   # anything else                    a comment, ignored
//   <metric>[{<label>="<value>"[,...][,]}] <value> [<timestamp ms>]
// Label values take the escapes \\, \" and \n. Values are floats, including NaN, +Inf,
// -Inf (and Inf). Timestamps are integer milliseconds since the epoch.
//
// Failure model: the parser never throws and never crashes on any input. One malformed
// line (unterminated quote, duplicate label, bad escape, bad number, a line longer than
// the cap) is skipped and reported in `errors`; the rest of the scrape still counts,
// because one broken series must not hide the GPU counters around it. Input larger
// than `max_input_bytes`, or more samples than `max_samples`, fails the whole parse
// with kInvalidArgument (a scrape that big is not what we think it is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace faultline {

struct PromParseOptions {
  size_t max_input_bytes = 64u << 20;  // 64 MiB: a 8-GPU dcgm-exporter scrape is ~100 KiB
  size_t max_line_bytes = 64u << 10;   // 64 KiB per line; longer lines are skipped
  size_t max_labels = 64;              // labels per sample; more is a malformed line
  size_t max_samples = 1'000'000;      // whole-parse cap
  size_t max_errors = 100;             // line errors kept verbatim (all are counted)
  size_t max_raw_bytes = 512;          // each sample keeps at most this much of its line
};

struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // in input order, unique names
  double value = 0;
  std::optional<int64_t> timestamp_ms;
  size_t line = 0;  // 1-based line number in the input
  std::string raw;  // the line as read (truncated to max_raw_bytes)

  // The value of label `key`, or nullptr when absent.
  const std::string* Label(std::string_view key) const;
};

struct PromMetadata {
  std::string help;
  std::string type;  // "counter", "gauge", ...; empty when no TYPE line
};

struct PromLineError {
  size_t line = 0;
  std::string reason;
};

struct PromScrape {
  std::vector<PromSample> samples;
  std::map<std::string, PromMetadata> metadata;  // by metric name
  std::vector<PromLineError> errors;             // first max_errors line errors
  size_t error_count = 0;                        // all line errors
};

Result<PromScrape> ParsePrometheusText(std::string_view text, const PromParseOptions& options = {});

// Parses one sample line (no comments); the line-level building block, exposed for tests.
Result<PromSample> ParsePrometheusSample(std::string_view line, const PromParseOptions& options = {});

}  // namespace faultline
