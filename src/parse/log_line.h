// Splits one line of a kernel log, in any of the text forms faultline accepts, into its
// time fields and the kernel message (SIGNALS.md "Text forms to accept"):
//   raw kmsg      "6,3973,227996636,-;msg" (+ continuation lines starting with a space)
//   dmesg         "[  123.456789] msg"
//   dmesg -T      "[Sun Feb 23 16:24:18 2025] msg"
//   dmesg -x / --decode --time-format iso
//                 "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 msg" or "kern  :warn  : [ 12.3] msg"
//   syslog / journalctl -k
//                 "Dec 02 09:56:04 node1 kernel: [uptime] msg"
//   journalctl -o short-iso / rsyslog RFC 3339
//                 "2025-01-21T04:41:44+0000 node1 kernel: msg"
//   plain         anything else: the whole line is the message
// Pure; string_views point into the input line.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace faultline {

enum class LogFormat : uint8_t {
  kPlain,
  kKmsgRaw,
  kKmsgContinuation,
  kDmesg,
  kDmesgCtime,
  kDmesgDecode,
  kSyslog,
  kIso
};

struct LogLine {
  LogFormat format = LogFormat::kPlain;
  int64_t time_ns = 0;             // UTC when the line carries a wall-clock time, else 0
  std::optional<int64_t> mono_us;  // kernel monotonic time when printed
  std::optional<uint64_t> seq;     // raw kmsg sequence number
  int priority = -1;               // syslog priority (facility*8+level) when printed
  std::string_view host;           // syslog host
  std::string_view tag;            // syslog program tag ("kernel")
  std::string_view message;
};

// `reference_ns` supplies the year for syslog lines that have none.
LogLine ParseLogLine(std::string_view line, int64_t reference_ns);

std::string_view ToString(LogFormat f);

}  // namespace faultline
