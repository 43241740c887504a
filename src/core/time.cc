#include "core/time.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>

namespace faultline {
namespace {

constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// Reads exactly `n` digits at s[pos]; advances pos.
bool Digits(std::string_view s, size_t& pos, size_t n, int64_t& out) {
  if (pos + n > s.size()) return false;
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  pos += n;
  out = v;
  return true;
}

// Reads 1..2 digits (syslog day "2", ctime day " 2").
bool ShortNumber(std::string_view s, size_t& pos, int64_t& out) {
  while (pos < s.size() && s[pos] == ' ') ++pos;
  size_t start = pos;
  int64_t v = 0;
  while (pos < s.size() && pos - start < 2 && s[pos] >= '0' && s[pos] <= '9') v = v * 10 + (s[pos++] - '0');
  out = v;
  return pos > start;
}

std::optional<int> MonthIndex(std::string_view name) {
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (kMonths[i] == name) return static_cast<int>(i) + 1;
  }
  return std::nullopt;
}

bool ValidDate(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t sec) {
  // int64 nanoseconds since 1970 end in April 2262: later dates cannot be represented.
  return y >= 1971 && y <= 2261 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h <= 23 && mi <= 59 && sec <= 60;
}

int64_t ToNs(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t sec) {
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 24 + h) * 60 + mi) * 60 * kNsPerSec + sec * kNsPerSec;
}

// "HH:MM:SS" at pos.
bool ClockTime(std::string_view s, size_t& pos, int64_t& h, int64_t& mi, int64_t& sec) {
  if (!Digits(s, pos, 2, h) || pos >= s.size() || s[pos++] != ':') return false;
  if (!Digits(s, pos, 2, mi) || pos >= s.size() || s[pos++] != ':') return false;
  return Digits(s, pos, 2, sec);
}

// Optional ".123456" or ",123456" fraction -> ns.
int64_t Fraction(std::string_view s, size_t& pos) {
  if (pos >= s.size() || (s[pos] != '.' && s[pos] != ',')) return 0;
  ++pos;
  int64_t ns = 0;
  int64_t scale = 100'000'000;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    ns += (s[pos] - '0') * scale;
    scale /= 10;
    ++pos;
  }
  return ns;
}

// "Z", "+00:00", "-0600", "+05", or nothing. Returns the offset in seconds, nullopt on junk.
std::optional<int64_t> Offset(std::string_view s, size_t& pos) {
  if (pos >= s.size()) return 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
    return 0;
  }
  if (s[pos] != '+' && s[pos] != '-') return std::nullopt;
  const int sign = s[pos] == '-' ? -1 : 1;
  ++pos;
  int64_t hh = 0, mm = 0;
  if (!Digits(s, pos, 2, hh)) return std::nullopt;
  if (pos < s.size() && s[pos] == ':') ++pos;
  if (pos < s.size() && !Digits(s, pos, 2, mm)) return std::nullopt;
  return sign * (hh * 3600 + mm * 60);
}

}  // namespace

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  // Howard Hinnant's well-known civil-date algorithm, written out from its description.
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<int64_t> ParseIso8601(std::string_view s) {
  size_t pos = 0;
  int64_t y, mo, d, h, mi, sec;
  if (!Digits(s, pos, 4, y) || pos >= s.size() || s[pos++] != '-') return std::nullopt;
  if (!Digits(s, pos, 2, mo) || pos >= s.size() || s[pos++] != '-') return std::nullopt;
  if (!Digits(s, pos, 2, d) || pos >= s.size() || (s[pos] != 'T' && s[pos] != ' ')) return std::nullopt;
  ++pos;
  if (!ClockTime(s, pos, h, mi, sec)) return std::nullopt;
  if (!ValidDate(y, mo, d, h, mi, sec)) return std::nullopt;
  const int64_t frac = Fraction(s, pos);
  auto off = Offset(s, pos);
  if (!off || pos != s.size()) return std::nullopt;
  return ToNs(y, mo, d, h, mi, sec) + frac - *off * kNsPerSec;
}

std::optional<int64_t> ParseCtime(std::string_view s) {
  // "Sun Feb 23 16:24:18 2025"
  if (s.size() < 24 || s[3] != ' ' || s[7] != ' ') return std::nullopt;
  auto mo = MonthIndex(s.substr(4, 3));
  if (!mo) return std::nullopt;
  size_t pos = 8;
  int64_t d, h, mi, sec, y;
  if (!ShortNumber(s, pos, d) || pos >= s.size() || s[pos++] != ' ') return std::nullopt;
  if (!ClockTime(s, pos, h, mi, sec) || pos >= s.size() || s[pos++] != ' ') return std::nullopt;
  if (!Digits(s, pos, 4, y) || pos != s.size()) return std::nullopt;
  if (!ValidDate(y, *mo, d, h, mi, sec)) return std::nullopt;
  return ToNs(y, *mo, d, h, mi, sec);
}

std::optional<int64_t> ParseSyslogTime(std::string_view s, int64_t reference_ns) {
  // "Dec 02 09:56:04" or "Dec  2 09:56:04"
  if (s.size() < 15 || s[3] != ' ') return std::nullopt;
  auto mo = MonthIndex(s.substr(0, 3));
  if (!mo) return std::nullopt;
  size_t pos = 4;
  int64_t d, h, mi, sec;
  if (!ShortNumber(s, pos, d) || pos >= s.size() || s[pos++] != ' ') return std::nullopt;
  if (!ClockTime(s, pos, h, mi, sec) || pos != s.size()) return std::nullopt;
  const int64_t ref_days = reference_ns / (86400 * kNsPerSec);
  // Year of the reference time: walk from an estimate (cheap, exact).
  int64_t year = 1970 + ref_days / 366;
  while (DaysFromCivil(year + 1, 1, 1) <= ref_days) ++year;
  if (!ValidDate(year, *mo, d, h, mi, sec)) return std::nullopt;
  int64_t t = ToNs(year, *mo, d, h, mi, sec);
  if (t > reference_ns + 86400 * kNsPerSec) t = ToNs(year - 1, *mo, d, h, mi, sec);
  return t;
}

std::optional<int64_t> ParseDuration(std::string_view s) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || n < 0) return std::nullopt;
  std::string_view unit(p, static_cast<size_t>(s.data() + s.size() - p));
  int64_t scale = 0;
  if (unit == "ms") scale = kNsPerMs;
  if (unit == "s" || unit.empty()) scale = kNsPerSec;
  if (unit == "m") scale = 60 * kNsPerSec;
  if (unit == "h") scale = 3600 * kNsPerSec;
  if (unit == "d") scale = 86400 * kNsPerSec;
  // A duration past ~292 years does not fit in nanoseconds: refuse it rather than wrap.
  if (scale == 0 || n > INT64_MAX / scale) return std::nullopt;
  return n * scale;
}

std::optional<int64_t> ParseTimeArg(std::string_view s, int64_t now_ns) {
  if (auto t = ParseIso8601(s)) return t;
  if (auto d = ParseDuration(s)) return now_ns - *d;
  return std::nullopt;
}

std::string FormatIso8601(int64_t ns) {
  if (ns == 0) return "-";
  int64_t secs = ns / kNsPerSec;
  int64_t rem = ns % kNsPerSec;
  if (rem < 0) {
    rem += kNsPerSec;
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    --days;
  }
  // Inverse of DaysFromCivil (same published algorithm, other direction).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ", static_cast<long long>(y), m, d,
                static_cast<long long>(sod / 3600), static_cast<long long>(sod / 60 % 60),
                static_cast<long long>(sod % 60), static_cast<long long>(rem / 1000));
  return buf;
}

}  // namespace faultline
