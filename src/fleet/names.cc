#include "fleet/names.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace faultline::fleet {
namespace {

constexpr size_t kHashSuffix = 17;  // "~" and 16 hex digits
constexpr size_t kMinMax = 24;

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// The longest prefix of at most `n` bytes that does not end inside a UTF-8 character.
size_t Utf8Prefix(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

std::string BoundName(std::string_view name, size_t max) {
  max = std::max(max, kMinMax);
  if (name.size() <= max) return std::string(name);
  const size_t keep = Utf8Prefix(name, max - kHashSuffix);
  std::string out;
  out.reserve(keep + kHashSuffix);
  out.append(name.substr(0, keep));
  char hex[kHashSuffix + 1];
  std::snprintf(hex, sizeof(hex), "~%016llx", static_cast<unsigned long long>(Fnv1a64(name)));
  out += hex;
  return out;
}

bool BoundNameInPlace(std::string& name, size_t max) {
  if (name.size() <= std::max(max, kMinMax)) return false;
  name = BoundName(name, max);
  return true;
}

bool CutText(std::string& text, size_t max) {
  if (text.size() <= max) return false;
  const size_t keep = Utf8Prefix(text, max < 3 ? 0 : max - 3);
  text.resize(keep);
  text.shrink_to_fit();
  text += "...";
  return true;
}

}  // namespace faultline::fleet
