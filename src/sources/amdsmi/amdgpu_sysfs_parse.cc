#include "sources/amdsmi/amdgpu_sysfs_parse.h"

#include <charconv>

namespace faultline::amdsmi {
namespace {

constexpr std::string_view kBlocks[] = {"umc",       "sdma", "gfx",  "mmhub", "athub", "pcie_bif", "hdp",
                                        "xgmi_wafl", "df",   "smn",  "sem",   "mp0",   "mp1",      "fuse",
                                        "mca",       "vcn",  "jpeg", "ih",    "mpio"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// Printable excerpt for error messages (hostile input never reaches a terminal raw).
std::string Excerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

Status Bad(std::string what) { return Status(StatusCode::kCorrupt, std::move(what)); }

bool ParseU64(std::string_view s, uint64_t& v, int base = 10) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

bool IsKnownRasBlock(std::string_view block) {
  for (std::string_view b : kBlocks) {
    if (b == block) return true;
  }
  return false;
}

Result<RasErrCount> ParseRasErrCount(std::string_view text) {
  if (text.size() > kMaxRasFileBytes) return Bad("err_count: " + std::to_string(text.size()) + " bytes, too large");
  if (Trim(text).find("inaccessible") != std::string_view::npos) {
    return Status(StatusCode::kUnavailable, "err_count: query currently inaccessible (RAS recovery in progress)");
  }
  RasErrCount c;
  bool ue = false, ce = false;
  size_t start = 0;
  int line_no = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = Trim(text.substr(start, nl - start));
    start = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      return Bad("err_count line " + std::to_string(line_no) + ": no ':' in \"" + Excerpt(line) + "\"");
    const std::string_view key = Trim(line.substr(0, colon));
    uint64_t v = 0;
    if (!ParseU64(Trim(line.substr(colon + 1)), v)) {
      return Bad("err_count line " + std::to_string(line_no) + ": not a count: \"" + Excerpt(line) + "\"");
    }
    bool* seen = key == "ue" ? &ue : key == "ce" ? &ce : key == "de" ? &c.has_de : nullptr;
    if (seen == nullptr)
      return Bad("err_count line " + std::to_string(line_no) + ": unknown key \"" + Excerpt(key) + "\"");
    if (*seen) return Bad("err_count: \"" + std::string(key) + "\" given twice");
    *seen = true;
    (key == "ue" ? c.ue : key == "ce" ? c.ce : c.de) = v;
  }
  if (!ue || !ce) return Bad(std::string("err_count: no \"") + (ue ? "ce" : "ue") + ":\" line (truncated?)");
  return c;
}

Result<BadPages> ParseBadPages(std::string_view text) {
  if (text.size() > kMaxBadPagesBytes)
    return Bad("gpu_vram_bad_pages: " + std::to_string(text.size()) + " bytes, too large");
  BadPages p;
  size_t start = 0;
  uint64_t line_no = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = Trim(text.substr(start, nl - start));
    start = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    if (p.total() >= kMaxBadPageLines)
      return Bad("gpu_vram_bad_pages: more than " + std::to_string(kMaxBadPageLines) + " pages");
    // "0x00000001 : 0x00001000 : R"
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    const std::string where = "gpu_vram_bad_pages line " + std::to_string(line_no);
    if (c2 == std::string_view::npos)
      return Bad(where + ": expected \"pfn : size : flag\", got \"" + Excerpt(line) + "\"");
    uint64_t pfn = 0, size = 0;
    const std::string_view a = Trim(line.substr(0, c1)), b = Trim(line.substr(c1 + 1, c2 - c1 - 1));
    if (a.size() < 3 || a.substr(0, 2) != "0x" || !ParseU64(a.substr(2), pfn, 16) || b.size() < 3 ||
        b.substr(0, 2) != "0x" || !ParseU64(b.substr(2), size, 16)) {
      return Bad(where + ": not hexadecimal: \"" + Excerpt(line) + "\"");
    }
    const std::string_view flag = Trim(line.substr(c2 + 1));
    if (flag == "R") {
      ++p.reserved;
    } else if (flag == "P") {
      ++p.pending;
    } else if (flag == "F") {
      ++p.unreservable;
    } else {
      return Bad(where + ": unknown flag \"" + Excerpt(flag) + "\" (R, P or F)");
    }
  }
  return p;
}

Result<uint64_t> ParseRasFeatures(std::string_view text) {
  if (text.size() > kMaxRasFileBytes) return Bad("features: too large");
  const std::string_view t = Trim(text);
  constexpr std::string_view kPrefix = "feature mask:";
  if (t.substr(0, kPrefix.size()) != kPrefix) return Bad("features: expected \"feature mask: 0x..\"");
  const std::string_view v = Trim(t.substr(kPrefix.size()));
  uint64_t mask = 0;
  if (v.size() < 3 || v.substr(0, 2) != "0x" || !ParseU64(v.substr(2), mask, 16)) {
    return Bad("features: not a hexadecimal mask: \"" + Excerpt(v) + "\"");
  }
  return mask;
}

Result<int64_t> ParseSysfsInt(std::string_view text) {
  if (text.size() > kMaxRasFileBytes) return Bad("too large for a number");
  const std::string_view t = Trim(text);
  int64_t v = 0;
  if (t.empty()) return Bad("empty");
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) return Bad("not a number: \"" + Excerpt(t) + "\"");
  return v;
}

}  // namespace faultline::amdsmi
