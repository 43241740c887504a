// Reads kernel logs from text files (every form in parse/log_line.h, detected per line),
// gzip files, or stdin ("-"), and turns them into deduplicated Observations.
//
// Speed: most lines of a real log are benign. A vectorscan (Hyperscan API) literal prefilter scans each
// chunk once and only lines containing a trigger string ("NVRM", "SXid", "AER", ...)
// are parsed and classified; every other line costs one newline count. See
// bench/bench_kmsg.cc for the measured throughput.
//
// Multi-line messages: the lines right after a candidate line that are indented (a
// leading blank, or a blank after their time/host prefix) are handed to the assembler
// too, so AER detail lines and the indented tail of "fallen off the bus" reach their head
// line even though they hold no trigger string.
//
// Damage tolerance: lines longer than max_line_bytes are cut (counted and warned about),
// lines with binary bytes are counted, a truncated last line is still read. Nothing in
// the input can make the reader fail except I/O errors on the file itself. Memory is
// bounded by the options whatever the input (max_variants, max_observations).
//
// Not thread-safe: one reader per thread (it owns vectorscan scratch space).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "sources/kmsg/dedup.h"
#include "sources/kmsg/kernel_events.h"

namespace faultline {

struct KernelLogOptions {
  std::string node;                      // put on observations; default: the syslog host, else "localhost"
  int64_t reference_ns = 0;              // supplies the year for syslog lines; 0 = now
  std::optional<int64_t> boot_time_ns;   // UTC of boot, to date "[ 123.45]" lines; unset = keep monotonic only
  size_t max_line_bytes = 64 * 1024;     // longer lines are cut to this for classification
  size_t chunk_bytes = 4 * 1024 * 1024;  // read size
  int64_t dedup_window_ns = 300LL * 1'000'000'000;
  // Bounds on what one reader keeps (sources/kmsg/dedup.h): distinct observations per
  // (kind, component, code) before further variants are aggregated into a count, and in
  // all before observations of new components are dropped (both counted and warned about).
  size_t max_variants = 1024;
  size_t max_observations = 100'000;
};

struct KernelLogStats {
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t candidate_lines = 0;   // passed the prefilter
  uint64_t classified_lines = 0;  // recognized by the classifier
  uint64_t truncated_lines = 0;
  uint64_t binary_lines = 0;
  uint64_t folded_duplicates = 0;
  uint64_t aggregated = 0;  // distinct lines counted into a kept one past max_variants
  uint64_t dropped = 0;     // observations dropped past max_observations
  std::string host;         // first syslog host seen
  std::vector<std::string> warnings;

  uint64_t unknown_lines() const { return lines - classified_lines; }
};

class KernelLogReader {
 public:
  static Result<std::unique_ptr<KernelLogReader>> Create(KernelLogOptions options);
  ~KernelLogReader();
  KernelLogReader(const KernelLogReader&) = delete;
  KernelLogReader& operator=(const KernelLogReader&) = delete;

  // Reads a whole file ("-" = stdin; gzip detected by magic bytes) and appends its
  // observations to the reader's pending set. Missing/unreadable file = kNotFound /
  // kPermissionDenied / kIoError; the data already read stays.
  Status ReadFile(const std::string& path);

  // Feeds raw log bytes (any chunking); call Finish() at end of input.
  void Feed(std::string_view data);
  void Finish();

  // Observations read so far (deduplicated), in input order; leaves the reader empty.
  std::vector<Observation> TakeObservations();
  const KernelLogStats& stats() const { return stats_; }

 private:
  struct Hyperscan;
  explicit KernelLogReader(KernelLogOptions options);

  void ScanComplete(std::string_view data);  // data ends at a line boundary
  void HandleLine(std::string_view line);
  size_t HandleContinuations(std::string_view data, size_t from);
  bool IsContinuation(std::string_view line) const;
  void CountBinaryLines(std::string_view data);
  void CountLongLines(std::string_view data);

  KernelLogOptions options_;
  std::unique_ptr<Hyperscan> hs_;
  KernelEventAssembler assembler_;
  ObservationDeduper deduper_;
  KernelLogStats stats_;
  std::string carry_;  // incomplete last line of the previous chunk
  bool cutting_long_line_ = false;
  bool continuation_open_ = false;  // the last handled line ended the previous block
  std::vector<size_t> candidates_;
  std::vector<Observation> scratch_;
};

}  // namespace faultline
