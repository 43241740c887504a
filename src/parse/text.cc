#include "parse/text.h"

#include <charconv>
#include <cstdlib>
#include <string>

namespace faultline {

std::string_view Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) --e;
  return s.substr(b, e - b);
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool Contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

std::optional<int64_t> ParseInt(std::string_view s, bool allow_hex) {
  if (allow_hex && (StartsWith(s, "0x") || StartsWith(s, "0X"))) {
    auto v = ParseHex(s);
    if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(*v);
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<uint64_t> ParseHex(std::string_view s) {
  if (StartsWith(s, "0x") || StartsWith(s, "0X")) s.remove_prefix(2);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  std::string copy(s);  // strtod needs a terminated string; from_chars<double> is fine too but
  char* end = nullptr;  // strtod also accepts "NaN"/"Inf", which Prometheus text uses.
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  return v;
}

std::optional<std::string_view> After(std::string_view s, std::string_view key) {
  size_t pos = s.find(key);
  if (pos == std::string_view::npos) return std::nullopt;
  return s.substr(pos + key.size());
}

}  // namespace faultline
