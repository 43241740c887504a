// Kernel logs saved as JSON, turned back into text lines for the kernel log reader, so
// every rule that reads a kernel log (multi-line messages, XID/SXid/AER/MCE knowledge,
// dating) applies to them unchanged (docs/kernel-log.md "Input forms"):
//   journalctl -o json         one record per line   {"__REALTIME_TIMESTAMP":"...","MESSAGE":"..."}
//   journalctl -o json-pretty  the same records, pretty-printed and concatenated
//   journalctl -o json-seq     the same records, each after an RS (0x1e) byte
//   dmesg --json / -J          {"dmesg":[{"pri":3,"time":1234.567890,"msg":"..."}, ...]}
// A journal record becomes "<ISO time> <host> <identifier>: <message>" (the journal's
// short-iso form, which the reader dates) and a dmesg record "[ <seconds>] <message>"
// (dated from boot as any dmesg line). A message of several lines keeps its later lines
// indented, so they stay continuation lines of the first. MESSAGE given as an array of
// bytes (the journal's form for non-UTF-8 text) is accepted.
//
// Damage policy: a record that does not parse, or has no message, costs that record
// (counted); a record larger than max_record_bytes is skipped unparsed (counted); nesting
// is bounded by the splitter, so hostile input cannot exhaust the stack or memory.
// Streaming: records are split from chunks of any size; memory is one record at most.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"

namespace faultline {

enum class JsonLogForm { kNone, kJournal, kDmesg };

// Decides from the first bytes of a JSON input whether it is a journal or dmesg JSON log
// (kNone: some other JSON, e.g. a faultline snapshot). A journal record is an object whose
// keys include "MESSAGE" and a journal field ("__CURSOR", "__REALTIME_TIMESTAMP",
// "_BOOT_ID", "PRIORITY", "SYSLOG_IDENTIFIER" or "_TRANSPORT"); dmesg JSON is an object
// whose first key is "dmesg".
JsonLogForm SniffJsonLog(std::string_view head);

struct JsonLogStats {
  uint64_t records = 0;    // turned into a line
  uint64_t bad = 0;        // did not parse, or had no message
  uint64_t oversized = 0;  // larger than max_record_bytes, skipped
};

class JsonLogToText {
 public:
  explicit JsonLogToText(JsonLogForm form, size_t max_record_bytes = 1 << 20);

  // Feeds JSON bytes (any chunking); appends the text lines of the records completed in
  // them to `out`, each ending in '\n'.
  void Feed(std::string_view data, std::string& out);
  const JsonLogStats& stats() const { return stats_; }

 private:
  void EndRecord(std::string& out);
  void Convert(const Json& record, std::string& out);

  JsonLogForm form_;
  size_t max_record_bytes_;
  int record_depth_;  // brace depth at which a record object starts
  int depth_ = 0;
  bool in_record_ = false;
  bool oversized_ = false;
  JsonStructureScanner scanner_;
  std::string record_;
  JsonLogStats stats_;
};

}  // namespace faultline
