// Splits one line of a kernel log, in any of the text forms faultline accepts, into its
// time fields and the kernel message (docs/kernel-log.md "Input forms"):
//   raw kmsg        "6,3973,227996636,-;msg"; dictionary lines " KEY=VALUE" (kKmsgContinuation)
//   dmesg           "[  123.456789] msg", "[  123.456789 <    0.000844>] msg" (-d, --show-delta),
//                   "<4>[  123.456789] msg" (-r), "[  123.456789] host kernel: msg" (journal short-monotonic)
//   dmesg -T        "[Sun Feb 23 16:24:18 2025] msg"
//   dmesg --reltime "[Feb23 16:24] msg" (dated to the minute), "[  +0.000844] msg" and
//                   "[<    0.000844>] msg" (deltas: no time of their own)
//   dmesg -x        "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 msg" or "kern  :warn  : [ 12.3] msg"
//   dmesg --time-format iso
//                   "2025-01-21T04:41:44,283302+00:00 msg" (comma fraction: no host or tag follows)
//   syslog / journalctl short / short-precise
//                   "Dec 02 09:56:04[.123456] [host] kernel: [uptime] msg" (host optional)
//   journalctl short-iso[-precise] / rsyslog RFC 3339 high precision
//                   "2025-01-21T04:41:44[.123456]+00:00 [host] kernel: msg"
//   journalctl short-unix
//                   "1737434504.283302 host kernel: msg"
//   time of day     "18:27:36 kernel: msg" (no date: undated)
//   RFC 5424 syslog "<3>1 2025-01-21T04:41:44.283Z host kernel - - - msg" (forwarded by rsyslog/syslog-ng;
//                   the structured data "[id k="v"]" is skipped)
//   plain           anything else: the whole line is the message
// Indented lines (a leading blank, or a message that starts with a blank after its
// prefix) are continuation lines of the message before them: `indented` is set and the
// message is left as printed. Only " KEY=VALUE" lines are raw-kmsg dictionary data.
//
// Pure; string_views point into the input line; never fails: anything unreadable is a
// plain line. Cost is bounded: no scan past the first 64 bytes for a prefix.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace faultline {

enum class LogFormat : uint8_t {
  kPlain,
  kKmsgRaw,
  kKmsgContinuation,  // " KEY=VALUE" dictionary line of a raw kmsg record
  kIndented,          // a line that starts with a blank: the previous message continues
  kDmesg,
  kDmesgCtime,
  kDmesgReltime,  // "[Feb23 16:24]" header or "[  +0.000844]" / "[<  0.000844>]" delta
  kDmesgDecode,
  kSyslog,
  kIso,
  kUnix,       // journalctl -o short-unix
  kTimeOfDay,  // "18:27:36 kernel: msg"
  kRfc5424,    // "<3>1 2025-01-21T04:41:44.283Z host app procid msgid [sd] msg"
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
  bool indented = false;  // continuation of the previous message (see above)
};

// `reference_ns` supplies the year for syslog lines that have none.
LogLine ParseLogLine(std::string_view line, int64_t reference_ns);

std::string_view ToString(LogFormat f);

}  // namespace faultline
