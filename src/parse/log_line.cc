#include "parse/log_line.h"

#include <charconv>

#include "core/time.h"
#include "parse/text.h"

namespace faultline {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "[  123.456789]" at the start -> microseconds; returns the offset after "] ".
bool ParseBracketUptime(std::string_view s, int64_t& mono_us, size_t& after) {
  if (s.empty() || s[0] != '[') return false;
  size_t close = s.find(']');
  if (close == std::string_view::npos || close > 32) return false;
  std::string_view inner = Trim(s.substr(1, close - 1));
  size_t dot = inner.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  int64_t secs = 0, frac = 0;
  auto r1 = std::from_chars(inner.data(), inner.data() + dot, secs);
  std::string_view fs = inner.substr(dot + 1);
  if (r1.ec != std::errc() || r1.ptr != inner.data() + dot || fs.empty() || fs.size() > 9) return false;
  auto r2 = std::from_chars(fs.data(), fs.data() + fs.size(), frac);
  if (r2.ec != std::errc() || r2.ptr != fs.data() + fs.size()) return false;
  for (size_t i = fs.size(); i < 6; ++i) frac *= 10;
  for (size_t i = 6; i < fs.size(); ++i) frac /= 10;
  mono_us = secs * 1'000'000 + frac;
  after = close + 1;
  if (after < s.size() && s[after] == ' ') ++after;
  return true;
}

// "PRI,SEQ,TS_USEC,FLAGS[,...];msg"
bool ParseKmsgRaw(std::string_view s, LogLine& out) {
  size_t semi = s.find(';');
  if (semi == std::string_view::npos || semi > 64) return false;
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

// "host tag: msg" after a syslog/ISO timestamp.
void ParseHostTag(std::string_view rest, LogLine& out) {
  size_t sp = rest.find(' ');
  if (sp == std::string_view::npos) {
    out.message = rest;
    return;
  }
  out.host = rest.substr(0, sp);
  std::string_view after = rest.substr(sp + 1);
  size_t colon = after.find(": ");
  if (colon != std::string_view::npos && colon < 64 && after.substr(0, colon).find(' ') == std::string_view::npos) {
    out.tag = after.substr(0, colon);
    if (size_t b = out.tag.find('['); b != std::string_view::npos) out.tag = out.tag.substr(0, b);
    after = after.substr(colon + 2);
  }
  int64_t mono = 0;
  size_t off = 0;
  if (ParseBracketUptime(after, mono, off)) {
    out.mono_us = mono;
    after = after.substr(off);
  }
  out.message = after;
}

bool ParseSyslog(std::string_view s, int64_t reference_ns, LogLine& out) {
  if (s.size() < 16 || s[3] != ' ' || s[15] != ' ') return false;
  auto t = ParseSyslogTime(s.substr(0, 15), reference_ns);
  if (!t) return false;
  out.format = LogFormat::kSyslog;
  out.time_ns = *t;
  ParseHostTag(s.substr(16), out);
  return true;
}

bool ParseIsoPrefixed(std::string_view s, LogLine& out) {
  size_t sp = s.find(' ');
  if (sp == std::string_view::npos || sp < 19 || sp > 40) return false;
  auto t = ParseIso8601(s.substr(0, sp));
  if (!t) return false;
  out.format = LogFormat::kIso;
  out.time_ns = *t;
  ParseHostTag(s.substr(sp + 1), out);
  return true;
}

// "kern  :warn  : <time> msg"
bool ParseDecoded(std::string_view s, LogLine& out) {
  size_t c1 = s.find(':');
  if (c1 == std::string_view::npos || c1 > 10) return false;
  size_t c2 = s.find(':', c1 + 1);
  if (c2 == std::string_view::npos || c2 > c1 + 10 || c2 + 2 > s.size() || s[c2 + 1] != ' ') return false;
  for (char c : s.substr(0, c1)) {
    if (!(c >= 'a' && c <= 'z') && c != ' ') return false;
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
  size_t sp = rest.find(' ');
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

}  // namespace

LogLine ParseLogLine(std::string_view line, int64_t reference_ns) {
  LogLine out;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  out.message = line;
  if (line.empty()) return out;
  const char c = line[0];
  if (c == ' ') {
    out.format = LogFormat::kKmsgContinuation;
    return out;
  }
  if (IsDigit(c)) {
    if (ParseKmsgRaw(line, out) || ParseIsoPrefixed(line, out)) return out;
    return LogLine{LogFormat::kPlain, 0, {}, {}, -1, {}, {}, line};
  }
  if (c == '[') {
    int64_t mono = 0;
    size_t off = 0;
    if (ParseBracketUptime(line, mono, off)) {
      out.format = LogFormat::kDmesg;
      out.mono_us = mono;
      out.message = line.substr(off);
      return out;
    }
    size_t close = line.find(']');
    if (close != std::string_view::npos && close < 32) {
      if (auto t = ParseCtime(line.substr(1, close - 1))) {
        out.format = LogFormat::kDmesgCtime;
        out.time_ns = *t;
        out.message = line.substr(close + 1 < line.size() && line[close + 1] == ' ' ? close + 2 : close + 1);
        return out;
      }
    }
    return out;
  }
  if (c >= 'A' && c <= 'Z' && ParseSyslog(line, reference_ns, out)) return out;
  if (c >= 'a' && c <= 'z' && ParseDecoded(line, out)) return out;
  return LogLine{LogFormat::kPlain, 0, {}, {}, -1, {}, {}, line};
}

std::string_view ToString(LogFormat f) {
  switch (f) {
    case LogFormat::kPlain:
      return "plain";
    case LogFormat::kKmsgRaw:
      return "kmsg";
    case LogFormat::kKmsgContinuation:
      return "kmsg-continuation";
    case LogFormat::kDmesg:
      return "dmesg";
    case LogFormat::kDmesgCtime:
      return "dmesg-T";
    case LogFormat::kDmesgDecode:
      return "dmesg-decode";
    case LogFormat::kSyslog:
      return "syslog";
    case LogFormat::kIso:
      return "iso";
  }
  return "plain";
}

}  // namespace faultline
