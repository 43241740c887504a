// Saved snapshots for offline analysis (`faultline diagnose`): tells the forms apart by
// content and turns the machine-readable ones into Observations.
//
// Forms (docs/kernel-log.md "Snapshots of other layers"):
//  - kernel log: dmesg/journal/syslog/kmsg text. Only sniffed here; the caller streams it
//    through KernelLogReader (sources/kmsg), which reads files of any size.
//  - JSON: what `faultline collect redfish|nvml|sysfs|fabric|dcgm-exporter --json` prints
//    (objects with an "observations" array: one pretty-printed object, or one object per
//    line, or several concatenated), a JSON array of Observations, or JSON lines of
//    Observations (core/json.h wire format). Findings in a snapshot are ignored: the
//    detectors are re-run over the observations.
//  - Prometheus text: a saved dcgm-exporter scrape, mapped like the live source does
//    (sources/dcgm_exporter).
//
// Damage policy: nothing in the input makes these functions crash or throw. Damage is
// reported, and everything around it is kept: a JSON-lines record that does not parse
// costs that line, an observation that does not decode costs that observation, a
// truncated or over-deep value ends (or skips) that value. Only input with no usable
// record at all is an error. Pure functions of their arguments; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "parse/prometheus.h"

namespace faultline {

// kJournalJson / kDmesgJson are kernel logs saved as JSON (parse/json_log.h): read, like
// kKernelLog, by KernelLogReader after JsonLogToText turns them back into lines.
enum class SnapshotFormat { kKernelLog, kJson, kPrometheus, kJournalJson, kDmesgJson };
std::string_view ToString(SnapshotFormat format);
// Whether the format is read by KernelLogReader (a kernel log, as text or as JSON).
inline bool IsKernelLogFormat(SnapshotFormat f) {
  return f == SnapshotFormat::kKernelLog || f == SnapshotFormat::kJournalJson || f == SnapshotFormat::kDmesgJson;
}

// Decides from the first bytes of an input (a few KiB is plenty; the whole input works
// too). Skips a UTF-8 BOM and leading blank space. '{' = journal or dmesg JSON when the
// first record reads as one (parse/json_log.h), else JSON; '[' = JSON unless the
// first line reads as a kernel log line (a dmesg stamp of any form: "[  12.345678] ...",
// "[Tue Mar ...] ...", "[  +0.000844] ...", or a bare message like "[drm] ..." whose
// bracket is not followed by a JSON value); a
// first line starting "# HELP", "# TYPE" or "DCGM_FI_" = Prometheus; anything else is
// a kernel log (the historical input, whose reader copes with any bytes).
SnapshotFormat SniffSnapshot(std::string_view head);

struct SnapshotOptions {
  std::string node;            // set on observations that carry none; Prometheus: overrides the Hostname label
  int64_t scrape_time_ns = 0;  // stamps Prometheus samples without their own timestamp (0 = undated)
  int max_json_depth = 32;     // deeper JSON values are skipped unparsed (snapshots nest 5 levels)
  size_t max_warnings = 20;    // damage reports kept verbatim; the rest are counted in one line
  // Observations kept at most (the caller's share of a total across files); the rest are
  // counted in Snapshot::dropped, never parsed into memory all at once.
  size_t max_observations = SIZE_MAX;
  PromParseOptions prometheus;
};

struct Snapshot {
  SnapshotFormat format = SnapshotFormat::kJson;
  std::vector<Observation> observations;
  std::set<Source> sources;           // sources of the observations: what the snapshot was of
  std::vector<std::string> warnings;  // damage found, with the byte offset or line where it matters
  uint64_t records = 0;               // JSON values (or Prometheus samples) read
  uint64_t rejected = 0;              // records, lines or observations that could not be used
  uint64_t dropped = 0;               // good observations past SnapshotOptions::max_observations
};

// Parses `text` in the given format (kJson or kPrometheus). Errors: kInvalidArgument for
// kKernelLog (not parsed here); kCorrupt, with the first reason, when not one record
// could be used (truncated single object, not JSON, JSON of another shape, an over-large
// Prometheus scrape). A usable snapshot with damage elsewhere is returned with warnings.
Result<Snapshot> ParseSnapshot(std::string_view text, SnapshotFormat format, const SnapshotOptions& options = {});

}  // namespace faultline
