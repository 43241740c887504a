// Turns classified kernel-log lines into Observations (DESIGN.md "Observation"),
// joining the multi-line forms: the three-line "fallen off the bus" message and its
// two-line form with the tail indented, AER header + detail + error-bit + "TLP Header"
// lines (with the device prefix, or indented under their header without it), SXid
// "Severity"/"Data" continuation lines, and the "GPU at PCI:... / Board Serial Number"
// identity pair. Indented lines (LogLine::indented) that continue nothing are read as
// messages of their own; raw kmsg " KEY=VALUE" dictionary lines are skipped.
//
// Not thread-safe; one assembler per input stream. Observations come out in input order
// once complete; Finish() flushes whatever is still open at end of input.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/types.h"
#include "parse/kernel_line.h"
#include "parse/log_line.h"

namespace faultline {

struct KernelEventsOptions {
  std::string node;                     // node name put on every observation
  std::optional<int64_t> boot_time_ns;  // UTC of boot: turns monotonic time into UTC when set
  size_t max_raw_bytes = 4096;          // evidence lines are cut to this many bytes
};

class KernelEventAssembler {
 public:
  explicit KernelEventAssembler(KernelEventsOptions options) : options_(std::move(options)) {}

  // Feeds one parsed line; `raw` is the whole original line (kept as evidence).
  // Appends completed observations to `out`; returns true if the line was recognized.
  bool Feed(const LogLine& line, std::string_view raw, std::vector<Observation>& out);
  void Finish(std::vector<Observation>& out);

 private:
  Observation Base(const LogLine& line, std::string_view raw) const;
  std::string Bdf(std::string_view printed);  // NormalizeBdf, memoized
  void Flush(std::vector<Observation>& out);
  bool MergeIntoPending(const KernelEvent& ev, std::string_view raw);
  bool AttachContinuation(const LogLine& line, std::string_view raw, std::vector<Observation>& out);
  bool AttachUnclassified(const LogLine& line, std::string_view raw);
  void AppendRaw(std::string_view raw);
  void Emit(const KernelEvent& ev, const LogLine& line, std::string_view raw, std::vector<Observation>& out);
  void EmitGpuEvent(const KernelEvent& ev, Observation& o, std::vector<Observation>& out);
  void EmitPcieEvent(const KernelEvent& ev, Observation& o, std::vector<Observation>& out);
  void EmitHostEvent(const KernelEvent& ev, Observation& o, std::vector<Observation>& out);
  void EmitOrphanAerBit(const KernelEvent& ev, Observation& o, std::vector<Observation>& out);
  void FeedGhes(const KernelEvent& ev, const LogLine& line, std::string_view raw, std::vector<Observation>& out);

  KernelEventsOptions options_;
  std::optional<Observation> pending_;                        // AER or SXid record still taking continuation lines
  std::unordered_map<std::string, std::string> aer_port_of_;  // source bdf -> reporting port bdf
  std::string fell_off_bdf_;                                  // from "The NVIDIA GPU <bdf>", awaiting its tail
  std::string fell_off_raw_;                                  // that header line, for the evidence
  int lines_since_header_ = 0;
  std::array<std::pair<std::string, std::string>, 8> bdf_memo_;  // printed -> normalized
  size_t bdf_memo_next_ = 0;
  std::string last_uuid_bdf_;  // "GPU at PCI:" line, for the serial line after it
  // The firmware-first (GHES) record being printed: its number, and the severity and
  // section type of its current section.
  int64_t ghes_record_ = -1;
  std::string ghes_severity_;
  std::string ghes_section_;
};

}  // namespace faultline
