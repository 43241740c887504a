#include "sources/sysfs/counter_parse.h"

#include <cmath>

#include "parse/text.h"

namespace faultline {
namespace {

Status Corrupt(std::string_view what, std::string_view text) {
  // Quote a bounded, printable prefix: the text may be hostile.
  std::string shown;
  for (char c : text.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  return Status(StatusCode::kCorrupt, std::string(what) + ": \"" + shown + (text.size() > 40 ? "...\"" : "\""));
}

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

std::optional<uint64_t> ParseU64(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

}  // namespace

Result<std::vector<AerCounter>> ParseAerCounters(std::string_view text) {
  if (text.size() > kMaxAttrBytes) return Status(StatusCode::kCorrupt, "AER counters: file too large");
  std::vector<AerCounter> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    const size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) return Corrupt("AER counters: line without a count", line);
    std::string_view name = line.substr(0, sp);
    for (char c : name) {
      if (!IsNameChar(c)) return Corrupt("AER counters: bad counter name", line);
    }
    auto value = ParseU64(Trim(line.substr(sp)));
    if (!value) return Corrupt("AER counters: bad count", line);
    if (out.size() >= kMaxAerLines) return Status(StatusCode::kCorrupt, "AER counters: too many lines");
    out.push_back({std::string(name), *value});
  }
  if (out.empty()) return Status(StatusCode::kCorrupt, "AER counters: empty file");
  return out;
}

Result<uint64_t> ParseCounter(std::string_view text) {
  if (text.size() > kMaxAttrBytes) return Status(StatusCode::kCorrupt, "counter: file too large");
  if (StartsWith(Trim(text), "N/A")) return Status(StatusCode::kUnsupported, "counter: not available (no PMA)");
  auto v = ParseU64(Trim(text));
  if (!v) return Corrupt("counter: not an unsigned number", text);
  return *v;
}

int IbCounterWidthBits(std::string_view counter) {
  // PortCounters field widths (InfiniBand Architecture Specification, PerfMgt class);
  // the kernel prints each at its own width.
  struct Width {
    std::string_view name;
    int bits;
  };
  static constexpr Width kWidths[] = {{"symbol_error", 16},
                                      {"link_error_recovery", 8},
                                      {"link_downed", 8},
                                      {"port_rcv_errors", 16},
                                      {"port_rcv_remote_physical_errors", 16},
                                      {"port_rcv_switch_relay_errors", 16},
                                      {"port_xmit_discards", 16},
                                      {"port_xmit_constraint_errors", 8},
                                      {"port_rcv_constraint_errors", 8},
                                      {"local_link_integrity_errors", 4},
                                      {"excessive_buffer_overrun_errors", 4},
                                      {"VL15_dropped", 16}};
  for (const Width& w : kWidths) {
    if (w.name == counter) return w.bits;
  }
  return 0;
}

uint64_t IbCounterMax(std::string_view counter) {
  const int bits = IbCounterWidthBits(counter);
  return bits > 0 ? (uint64_t{1} << bits) - 1 : 0;
}

bool IbCounterSaturated(std::string_view counter, uint64_t value) {
  if (value == UINT32_MAX || value == UINT64_MAX) return true;
  const uint64_t max = IbCounterMax(counter);
  return max > 0 && value == max;
}

Result<double> ParseLinkSpeed(std::string_view text) {
  if (text.size() > kMaxAttrBytes) return Status(StatusCode::kCorrupt, "link speed: file too large");
  std::string_view t = Trim(text);
  if (StartsWith(t, "Unknown")) return Status(StatusCode::kUnsupported, "link speed: Unknown");
  const size_t pos = t.find(" GT/s");
  if (pos == std::string_view::npos) return Corrupt("link speed: no GT/s", t);
  auto v = ParseDouble(t.substr(0, pos));
  if (!v || !std::isfinite(*v) || *v <= 0 || *v > 1024) return Corrupt("link speed: bad number", t);
  return *v;
}

Result<int> ParseLinkWidth(std::string_view text) {
  if (text.size() > kMaxAttrBytes) return Status(StatusCode::kCorrupt, "link width: file too large");
  auto v = ParseU64(Trim(text));
  if (!v || *v > 32) return Corrupt("link width: not 0..32", text);
  return static_cast<int>(*v);
}

int PcieGenFromSpeed(double gts) {
  constexpr double kRates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0};
  for (int i = 0; i < 7; ++i) {
    if (std::fabs(gts - kRates[i]) < 0.01 * kRates[i]) return i + 1;
  }
  return 0;
}

Result<IbState> ParseIbState(std::string_view text) {
  if (text.size() > kMaxAttrBytes) return Status(StatusCode::kCorrupt, "IB state: file too large");
  std::string_view t = Trim(text);
  const size_t colon = t.find(':');
  if (colon == std::string_view::npos) return Corrupt("IB state: no \"N: NAME\"", t);
  auto n = ParseU64(Trim(t.substr(0, colon)));
  if (!n || *n > 255) return Corrupt("IB state: bad number", t);
  std::string_view name = Trim(t.substr(colon + 1));
  if (name.empty() || name.size() > 64) return Corrupt("IB state: bad name", t);
  return IbState{static_cast<int>(*n), std::string(name)};
}

Result<double> ParseIbRate(std::string_view text) {
  if (text.size() > kMaxAttrBytes) return Status(StatusCode::kCorrupt, "IB rate: file too large");
  std::string_view t = Trim(text);
  const size_t pos = t.find(" Gb/sec");
  if (pos == std::string_view::npos) return Corrupt("IB rate: no Gb/sec", t);
  auto v = ParseDouble(t.substr(0, pos));
  if (!v || !std::isfinite(*v) || *v < 0 || *v > 1e5) return Corrupt("IB rate: bad number", t);
  return *v;
}

Result<uint32_t> ParsePciId(std::string_view text) {
  if (text.size() > kMaxAttrBytes) return Status(StatusCode::kCorrupt, "PCI id: file too large");
  std::string_view t = Trim(text);
  if (!StartsWith(t, "0x")) return Corrupt("PCI id: no 0x", t);
  auto v = ParseHex(t);
  if (!v || *v > 0xffffffu) return Corrupt("PCI id: bad hex", t);
  return static_cast<uint32_t>(*v);
}

}  // namespace faultline
