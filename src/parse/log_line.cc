#include "parse/log_line.h"

#include <charconv>

#include "core/time.h"
#include "parse/text.h"

namespace faultline {
namespace {

constexpr size_t kMaxPrefix = 64;  // no prefix form is longer; bounds the work on junk lines

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }

// "123.456789" (optional blanks around) -> microseconds.
bool ParseSecondsDotFraction(std::string_view inner, int64_t& us) {
  inner = Trim(inner);
  const size_t dot = inner.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 12) return false;
  int64_t secs = 0, frac = 0;
  auto r1 = std::from_chars(inner.data(), inner.data() + dot, secs);
  std::string_view fs = inner.substr(dot + 1);
  if (r1.ec != std::errc() || r1.ptr != inner.data() + dot || fs.empty() || fs.size() > 9) return false;
  auto r2 = std::from_chars(fs.data(), fs.data() + fs.size(), frac);
  if (r2.ec != std::errc() || r2.ptr != fs.data() + fs.size() || secs < 0 || frac < 0) return false;
  // Callers turn these microseconds into nanoseconds and add an uptime to a boot time: past
  // 4e9 s (year 2096 as a Unix time, 126 years as an uptime) it is no time, and the sum could
  // overflow there.
  if (secs > 4'000'000'000) return false;
  for (size_t i = fs.size(); i < 6; ++i) frac *= 10;
  for (size_t i = 6; i < fs.size(); ++i) frac /= 10;
  us = secs * 1'000'000 + frac;
  return true;
}

// The bracketed head of a dmesg line: "[...]"; `after` is the offset past "] ".
bool BracketInner(std::string_view s, std::string_view& inner, size_t& after) {
  if (s.empty() || s[0] != '[') return false;
  const size_t close = s.substr(0, kMaxPrefix).find(']');
  if (close == std::string_view::npos) return false;
  inner = s.substr(1, close - 1);
  after = close + 1;
  if (after < s.size() && s[after] == ' ') ++after;
  return true;
}

// "[  123.456789]" or, with -d / --show-delta, "[  123.456789 <    0.000844>]".
bool ParseBracketUptime(std::string_view s, int64_t& mono_us, size_t& after) {
  std::string_view inner;
  if (!BracketInner(s, inner, after)) return false;
  if (size_t lt = inner.find('<'); lt != std::string_view::npos && lt > 0 && inner.back() == '>') {
    inner = inner.substr(0, lt);
  }
  return ParseSecondsDotFraction(inner, mono_us);
}

// dmesg --reltime / --time-format delta lines without a time of their own:
// "[  +0.000844]" and "[<    0.000844>]".
bool ParseBracketDelta(std::string_view s, size_t& after) {
  std::string_view inner;
  if (!BracketInner(s, inner, after)) return false;
  inner = Trim(inner);
  int64_t us = 0;
  if (inner.size() > 1 && inner.front() == '+') return ParseSecondsDotFraction(inner.substr(1), us);
  if (inner.size() > 2 && inner.front() == '<' && inner.back() == '>') {
    return ParseSecondsDotFraction(inner.substr(1, inner.size() - 2), us);
  }
  return false;
}

// dmesg --reltime minute header: "[Feb23 16:24]", "[Dec 1 10:00]", "[Dec  1 10:00]".
std::optional<int64_t> ParseReltimeHeader(std::string_view inner, int64_t reference_ns) {
  if (inner.size() < 10 || inner.size() > 13 || !IsUpper(inner[0])) return std::nullopt;
  size_t pos = 3;
  while (pos < inner.size() && inner[pos] == ' ') ++pos;
  const size_t day_start = pos;
  while (pos < inner.size() && IsDigit(inner[pos])) ++pos;
  const size_t day_len = pos - day_start;
  if (day_len < 1 || day_len > 2 || pos >= inner.size() || inner[pos] != ' ') return std::nullopt;
  const std::string_view hhmm = inner.substr(pos + 1);
  if (hhmm.size() != 5 || hhmm[2] != ':') return std::nullopt;
  // Rebuild the syslog form "Mmm dd HH:MM:00" and let the shared time code validate it.
  char buf[15] = {inner[0], inner[1], inner[2], ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ':', '0', '0'};
  buf[4] = day_len == 2 ? inner[day_start] : ' ';
  buf[5] = inner[day_start + day_len - 1];
  for (size_t i = 0; i < 5; ++i) buf[7 + i] = hhmm[i];
  return ParseSyslogTime(std::string_view(buf, sizeof buf), reference_ns);
}

// A syslog program tag token: "kernel:", "sshd[123]:", "systemd-logind[9]:" (no ':' inside).
bool IsTagToken(std::string_view tok, std::string_view& name, bool& has_pid) {
  if (tok.size() < 2 || tok.back() != ':') return false;
  tok.remove_suffix(1);
  has_pid = false;
  if (tok.back() == ']') {
    const size_t open = tok.find('[');
    if (open == std::string_view::npos || open == 0) return false;
    for (char c : tok.substr(open + 1, tok.size() - open - 2)) {
      if (!IsDigit(c)) return false;
    }
    has_pid = true;
    tok = tok.substr(0, open);
  }
  for (char c : tok) {
    if (!(IsDigit(c) || IsUpper(c) || IsLower(c) || c == '-' || c == '_' || c == '.' || c == '/' || c == '@')) {
      return false;
    }
  }
  name = tok;
  return true;
}

std::string_view Token(std::string_view s) { return s.substr(0, s.find(' ')); }

// After a time stamp: "[host] tag: msg". `kernel_only` (forms that are not syslog) strips
// only a "[host] kernel:" head: "EDAC MC0: ..." is a message there, not host "EDAC".
void ParseHostTag(std::string_view rest, LogLine& out, bool kernel_only) {
  out.message = rest;
  const std::string_view tok1 = Token(rest.substr(0, kMaxPrefix));
  std::string_view name;
  bool has_pid = false;
  const bool tok1_whole = tok1.size() < rest.size() && rest[tok1.size()] == ' ';
  if (tok1_whole && IsTagToken(tok1, name, has_pid) && (name == "kernel" || (has_pid && !kernel_only))) {
    out.tag = name;  // no host name: "Dec 02 09:56:04 kernel: msg"
    out.message = rest.substr(tok1.size() + 1);
  } else if (tok1_whole && !tok1.empty() && tok1.find(':') == std::string_view::npos) {
    const std::string_view after = rest.substr(tok1.size() + 1);
    const std::string_view tok2 = Token(after.substr(0, kMaxPrefix));
    if (tok2.size() < after.size() && after[tok2.size()] == ' ' && IsTagToken(tok2, name, has_pid) &&
        (name == "kernel" || !kernel_only)) {
      out.host = tok1;
      out.tag = name;
      out.message = after.substr(tok2.size() + 1);
    }
  }
  if (!out.tag.empty() && out.tag != "kernel") return;
  int64_t mono = 0;
  size_t off = 0;
  if (ParseBracketUptime(out.message, mono, off)) {
    out.mono_us = mono;
    out.message = out.message.substr(off);
  }
}

// "Dec 02 09:56:04 ..." and journalctl short-precise "Dec 02 09:56:04.123456 ...".
bool ParseSyslog(std::string_view s, int64_t reference_ns, LogLine& out) {
  if (s.size() < 16 || s[3] != ' ') return false;
  auto t = ParseSyslogTime(s.substr(0, 15), reference_ns);
  if (!t) return false;
  size_t pos = 15;
  if (s[pos] == '.' || s[pos] == ',') {
    int64_t frac_ns = 0, scale = 100'000'000;
    for (++pos; pos < s.size() && pos < 25 && IsDigit(s[pos]); ++pos, scale /= 10) frac_ns += (s[pos] - '0') * scale;
    *t += frac_ns;
  }
  if (pos >= s.size() || s[pos] != ' ') return false;
  out.format = LogFormat::kSyslog;
  out.time_ns = *t;
  ParseHostTag(s.substr(pos + 1), out, /*kernel_only=*/false);
  return true;
}

// "2025-01-21T04:41:44[.frac]+00:00 host tag: msg" (journal short-iso, rsyslog) or, with a
// comma fraction, dmesg --time-format iso "2025-01-21T04:41:44,283302+00:00 msg".
bool ParseIsoPrefixed(std::string_view s, LogLine& out) {
  if (s.size() < 20 || s[4] != '-') return false;
  size_t sp = s.substr(0, 48).find(' ');
  if (sp == 10 && s.size() > 19 && s[13] == ':') sp = s.substr(0, 48).find(' ', 11);  // "2025-01-21 04:41:44"
  if (sp == std::string_view::npos || sp < 19) return false;
  auto t = ParseIso8601(s.substr(0, sp));
  if (!t) return false;
  out.format = LogFormat::kIso;
  out.time_ns = *t;
  const bool dmesg_iso = s[19] == ',';
  ParseHostTag(s.substr(sp + 1), out, /*kernel_only=*/dmesg_iso);
  return true;
}

// journalctl -o short-unix: "1737434504.283302 host kernel: msg".
bool ParseUnixPrefixed(std::string_view s, LogLine& out) {
  const size_t dot = s.substr(0, 12).find('.');
  if (dot == std::string_view::npos || dot < 9 || dot > 11) return false;
  size_t end = dot + 1;
  while (end < s.size() && end < dot + 10 && IsDigit(s[end])) ++end;
  if (end == dot + 1 || end >= s.size() || s[end] != ' ') return false;
  int64_t us = 0;
  if (!ParseSecondsDotFraction(s.substr(0, end), us)) return false;
  out.format = LogFormat::kUnix;
  out.time_ns = us * 1000;
  ParseHostTag(s.substr(end + 1), out, /*kernel_only=*/false);
  return true;
}

// "18:27:36[.123] kernel: msg": a time of day without a date cannot be placed: undated.
bool ParseTimeOfDay(std::string_view s, LogLine& out) {
  if (s.size() < 10 || s[2] != ':' || s[5] != ':') return false;
  constexpr size_t kDigitsAt[] = {0, 1, 3, 4, 6, 7};
  for (size_t i : kDigitsAt) {
    if (!IsDigit(s[i])) return false;
  }
  size_t pos = 8;
  if (s[pos] == '.' || s[pos] == ',') {
    for (++pos; pos < s.size() && pos < 18 && IsDigit(s[pos]);) ++pos;
  }
  if (pos >= s.size() || s[pos] != ' ') return false;
  out.format = LogFormat::kTimeOfDay;
  ParseHostTag(s.substr(pos + 1), out, /*kernel_only=*/false);
  return true;
}

// "PRI,SEQ,TS_USEC,FLAGS[,...];msg"
bool ParseKmsgRaw(std::string_view s, LogLine& out) {
  size_t semi = s.substr(0, kMaxPrefix + 1).find(';');
  if (semi == std::string_view::npos) return false;
  std::string_view head = s.substr(0, semi);
  int64_t fields[3] = {0, 0, 0};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t comma = head.find(',', pos);
    std::string_view f = head.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    auto r = std::from_chars(f.data(), f.data() + f.size(), fields[i]);
    if (f.empty() || r.ec != std::errc() || r.ptr != f.data() + f.size() || fields[i] < 0) return false;
    if (comma == std::string_view::npos) {
      if (i < 2) return false;
      pos = head.size();
    } else {
      pos = comma + 1;
    }
  }
  out.format = LogFormat::kKmsgRaw;
  out.priority = static_cast<int>(fields[0] & 0x7fffffff);
  out.seq = static_cast<uint64_t>(fields[1]);
  out.mono_us = fields[2];
  out.message = s.substr(semi + 1);
  return true;
}

// "kern  :warn  : <time> msg"
bool ParseDecoded(std::string_view s, LogLine& out) {
  size_t c1 = s.substr(0, 11).find(':');
  if (c1 == std::string_view::npos) return false;
  size_t c2 = s.find(':', c1 + 1);
  if (c2 == std::string_view::npos || c2 > c1 + 10 || c2 + 2 > s.size() || s[c2 + 1] != ' ') return false;
  for (char c : s.substr(0, c1)) {
    if (!IsLower(c) && c != ' ') return false;
  }
  for (char c : s.substr(c1 + 1, c2 - c1 - 1)) {
    if (!IsLower(c) && c != ' ') return false;
  }
  std::string_view rest = s.substr(c2 + 2);
  out.format = LogFormat::kDmesgDecode;
  int64_t mono = 0;
  size_t off = 0;
  if (ParseBracketUptime(rest, mono, off)) {
    out.mono_us = mono;
    out.message = rest.substr(off);
    return true;
  }
  size_t sp = rest.substr(0, 48).find(' ');
  if (sp != std::string_view::npos) {
    if (auto t = ParseIso8601(rest.substr(0, sp))) {
      out.time_ns = *t;
      out.message = rest.substr(sp + 1);
      return true;
    }
  }
  out.message = rest;
  return true;
}

// Lines starting with '[': the dmesg forms.
bool ParseBracketed(std::string_view line, int64_t reference_ns, LogLine& out) {
  int64_t mono = 0;
  size_t off = 0;
  if (ParseBracketUptime(line, mono, off)) {
    out.format = LogFormat::kDmesg;
    out.mono_us = mono;
    // journalctl -o short-monotonic adds the host and tag: "[  12.3] node1 kernel: msg".
    ParseHostTag(line.substr(off), out, /*kernel_only=*/true);
    out.mono_us = mono;
    return true;
  }
  if (ParseBracketDelta(line, off)) {
    out.format = LogFormat::kDmesgReltime;
    out.message = line.substr(off);
    return true;
  }
  std::string_view inner;
  if (!BracketInner(line, inner, off)) return false;
  if (auto t = ParseCtime(inner)) {
    out.format = LogFormat::kDmesgCtime;
    out.time_ns = *t;
  } else if (auto m = ParseReltimeHeader(inner, reference_ns)) {
    out.format = LogFormat::kDmesgReltime;
    out.time_ns = *m;
  } else {
    return false;
  }
  out.message = line.substr(off);
  return true;
}

// " KEY=VALUE": a raw kmsg record's dictionary line (KEY is upper case, digits, '_').
bool IsKmsgDictionaryLine(std::string_view line) {
  if (line.size() < 3 || line[0] != ' ' || !IsUpper(line[1])) return false;
  for (size_t i = 2; i < line.size() && i < kMaxPrefix; ++i) {
    const char c = line[i];
    if (c == '=') return true;
    if (!IsUpper(c) && !IsDigit(c) && c != '_') return false;
  }
  return false;
}

// One header field of an RFC 5424 line; "-" is the nil value.
bool NextField(std::string_view& s, std::string_view& field) {
  const size_t sp = s.find(' ');
  if (sp == std::string_view::npos || sp == 0) return false;
  field = s.substr(0, sp);
  s.remove_prefix(sp + 1);
  return true;
}

// Skips RFC 5424 structured data: "-" or "[id k=\"v\" ...]" elements, where a quoted
// value may hold ' ', ']' and backslash escapes.
bool SkipStructuredData(std::string_view& s) {
  if (s.starts_with("-")) {
    s.remove_prefix(s.size() > 1 && s[1] == ' ' ? 2 : 1);
    return true;
  }
  size_t i = 0;
  while (i < s.size() && s[i] == '[') {
    bool quoted = false;
    for (++i; i < s.size(); ++i) {
      if (quoted && s[i] == '\\') {
        ++i;
      } else if (s[i] == '"') {
        quoted = !quoted;
      } else if (!quoted && s[i] == ']') {
        break;
      }
    }
    if (i >= s.size()) return false;
    ++i;
  }
  if (i == 0) return false;
  s.remove_prefix(i < s.size() && s[i] == ' ' ? i + 1 : i);
  return true;
}

// RFC 5424 (what rsyslog and syslog-ng forward): "1 TIMESTAMP HOST APP PROCID MSGID SD MSG",
// the "<PRI>" already taken off. Only the version 1 exists.
bool ParseRfc5424(std::string_view s, LogLine& out) {
  if (!s.starts_with("1 ")) return false;
  s.remove_prefix(2);
  std::string_view stamp, host, app, procid, msgid;
  if (!NextField(s, stamp) || !NextField(s, host) || !NextField(s, app) || !NextField(s, procid) ||
      !NextField(s, msgid)) {
    return false;
  }
  std::optional<int64_t> t;
  if (stamp != "-" && !(t = ParseIso8601(stamp))) return false;
  if (!SkipStructuredData(s)) return false;
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);  // MSG may start with a BOM
  out.format = LogFormat::kRfc5424;
  out.time_ns = t.value_or(0);
  if (host != "-") out.host = host;
  if (app != "-") out.tag = app;
  out.message = s;
  int64_t mono = 0;
  size_t off = 0;
  if (out.tag == "kernel" && ParseBracketUptime(out.message, mono, off)) {
    out.mono_us = mono;
    out.message = out.message.substr(off);
  }
  return true;
}

bool ParsePrefixed(std::string_view line, int64_t reference_ns, LogLine& out) {
  const char c = line[0];
  if (IsDigit(c)) {
    return ParseRfc5424(line, out) || ParseKmsgRaw(line, out) || ParseIsoPrefixed(line, out) || ParseUnixPrefixed(line, out) ||
           ParseTimeOfDay(line, out);
  }
  if (c == '[') return ParseBracketed(line, reference_ns, out);
  if (IsUpper(c)) return ParseSyslog(line, reference_ns, out);
  if (IsLower(c)) {
    if (ParseDecoded(line, out)) return true;
    // "kernel: msg" (journalctl -o cat with the tag, logger output).
    std::string_view name;
    bool has_pid = false;
    const std::string_view tok = Token(line.substr(0, kMaxPrefix));
    if (tok.size() < line.size() && IsTagToken(tok, name, has_pid) && name == "kernel") {
      out.tag = name;
      ParseHostTag(line, out, /*kernel_only=*/true);
      return true;
    }
  }
  return false;
}

}  // namespace

LogLine ParseLogLine(std::string_view line, int64_t reference_ns) {
  LogLine out;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  out.message = line;
  if (line.empty()) return out;
  if (IsBlank(line[0])) {
    out.format = IsKmsgDictionaryLine(line) ? LogFormat::kKmsgContinuation : LogFormat::kIndented;
    out.indented = out.format == LogFormat::kIndented;
    return out;
  }
  // dmesg -r / syslog wire form: "<4>[  12.3] msg" or "<4>msg".
  int priority = -1;
  if (line[0] == '<' && line.size() > 2) {
    const size_t gt = line.substr(0, 5).find('>');
    int p = 0;
    if (gt != std::string_view::npos && gt > 1 &&
        std::from_chars(line.data() + 1, line.data() + gt, p).ptr == line.data() + gt) {
      priority = p;
      line = line.substr(gt + 1);
      out.message = line;
      if (line.empty()) return out;
    }
  }
  if (!ParsePrefixed(line, reference_ns, out)) out = LogLine{LogFormat::kPlain, 0, {}, {}, -1, {}, {}, line, false};
  if (priority >= 0) out.priority = priority;
  out.indented = !out.message.empty() && IsBlank(out.message[0]);
  return out;
}

std::string_view ToString(LogFormat f) {
  switch (f) {
    case LogFormat::kPlain:
      return "plain";
    case LogFormat::kKmsgRaw:
      return "kmsg";
    case LogFormat::kKmsgContinuation:
      return "kmsg-continuation";
    case LogFormat::kIndented:
      return "indented";
    case LogFormat::kDmesg:
      return "dmesg";
    case LogFormat::kDmesgCtime:
      return "dmesg-T";
    case LogFormat::kDmesgReltime:
      return "dmesg-reltime";
    case LogFormat::kDmesgDecode:
      return "dmesg-decode";
    case LogFormat::kSyslog:
      return "syslog";
    case LogFormat::kIso:
      return "iso";
    case LogFormat::kUnix:
      return "unix";
    case LogFormat::kRfc5424:
      return "rfc5424";
    case LogFormat::kTimeOfDay:
      return "time-of-day";
  }
  return "plain";
}

}  // namespace faultline
