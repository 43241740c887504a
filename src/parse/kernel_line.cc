#include "parse/kernel_line.h"

#include <algorithm>
#include <charconv>

#include "parse/amdgpu_line.h"
#include "parse/text.h"

namespace faultline {
namespace {

using KT = KernelEventType;
constexpr auto npos = std::string_view::npos;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Reads a (possibly negative) decimal integer at s[pos]; advances pos.
bool ReadInt(std::string_view s, size_t& pos, int64_t& out) {
  size_t start = pos;
  if (pos < s.size() && s[pos] == '-') ++pos;
  while (pos < s.size() && IsDigit(s[pos]) && pos - start < 18) ++pos;
  if (pos == start || (s[start] == '-' && pos == start + 1)) {
    pos = start;
    return false;
  }
  std::from_chars(s.data() + start, s.data() + pos, out);
  return true;
}

bool ReadHex32(std::string_view s, size_t& pos, uint32_t& out) {
  if (s.substr(pos, 2) == "0x" || s.substr(pos, 2) == "0X") pos += 2;
  size_t start = pos;
  while (pos < s.size() && IsHexDigit(s[pos]) && pos - start < 8) ++pos;
  if (pos == start) return false;
  std::from_chars(s.data() + start, s.data() + pos, out, 16);
  return true;
}

void SkipSpaces(std::string_view s, size_t& pos) {
  while (pos < s.size() && s[pos] == ' ') ++pos;
}

// A token of BDF characters ("0000:3b:00.0", "0000:b5:00").
bool LooksLikeBdf(std::string_view s) {
  if (s.size() < 7 || s.size() > 16) return false;
  int colons = 0;
  for (char c : s) {
    if (c == ':')
      ++colons;
    else if (c != '.' && !IsHexDigit(c))
      return false;
  }
  return colons >= 1 && colons <= 2;
}

std::string_view TokenAt(std::string_view s, size_t pos) {
  size_t end = pos;
  while (end < s.size() && (IsHexDigit(s[end]) || s[end] == ':' || s[end] == '.')) ++end;
  std::string_view t = s.substr(pos, end - pos);
  while (!t.empty() && (t.back() == ':' || t.back() == '.')) t.remove_suffix(1);
  return t;
}

// "<driver> <bdf>: rest" or "<driver> <bdf> <ifname>: rest" -> fills driver/device, returns rest.
std::string_view SplitDevicePrefix(std::string_view msg, KernelEvent& ev) {
  size_t sp = msg.find(' ');
  if (sp == npos || sp == 0 || sp > 40) return msg;
  std::string_view bdf = TokenAt(msg, sp + 1);
  if (!LooksLikeBdf(bdf)) return msg;
  size_t after = sp + 1 + bdf.size();
  size_t colon = msg.find(':', after);
  if (colon == npos || colon > after + 40) return msg;
  ev.driver = msg.substr(0, sp);
  ev.device = bdf;
  ev.ifname = Trim(msg.substr(after, colon - after));
  if (ev.ifname.find(' ') != npos) ev.ifname = {};
  return Trim(msg.substr(colon + 1));
}

// "(PCI:0000:b5:00)" / "(0000:b5:00)" at pos -> bdf; advances past ')'.
std::string_view ReadParenBdf(std::string_view s, size_t& pos) {
  if (pos >= s.size() || s[pos] != '(') return {};
  size_t close = s.find(')', pos);
  if (close == npos || close - pos > 40) return {};
  std::string_view inner = s.substr(pos + 1, close - pos - 1);
  if (StartsWith(inner, "PCI:")) inner.remove_prefix(4);
  pos = close + 1;
  return LooksLikeBdf(inner) ? inner : std::string_view{};
}

// Reads "key=value, " at pos when present; value ends at ", " (or end).
std::string_view ReadKeyValue(std::string_view s, size_t& pos, std::string_view key) {
  if (s.substr(pos, key.size()) != key) return {};
  size_t start = pos + key.size();
  size_t end = s.find(", ", start);
  if (end == npos) end = s.size();
  std::string_view v = s.substr(start, end - start);
  pos = end == s.size() ? end : end + 2;
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
  return v;
}

void ParseXid13Location(KernelEvent& ev) {
  int64_t v = 0;
  if (size_t p = ev.message.find("GPC "); p != npos) {
    p += 4;
    if (ReadInt(ev.message, p, v)) ev.gpc = static_cast<int>(v);
  }
  if (size_t p = ev.message.find("TPC "); p != npos) {
    p += 4;
    if (ReadInt(ev.message, p, v)) ev.tpc = static_cast<int>(v);
  }
}

// "NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 ...)"
void ParseNvlink5(KernelEvent& ev) {
  std::string_view m = ev.message;
  size_t pos = 0;
  size_t end = m.find(' ');
  if (end == npos) return;
  ev.unit = m.substr(0, end);
  pos = end;
  SkipSpaces(m, pos);
  for (std::string_view sev : {"Nonfatal", "Non-fatal", "Fatal"}) {
    if (m.substr(pos, sev.size()) == sev) {
      ev.severity = m.substr(pos, sev.size());
      pos += sev.size();
      break;
    }
  }
  if (size_t l = m.find("Link ", pos); l != npos) {
    size_t p = l + 5;
    int64_t link = 0;
    if (ReadInt(m, p, link)) ev.link = static_cast<int>(link);
  }
  if (size_t paren = m.find('(', pos); paren != npos) {
    size_t p = paren + 1;
    if (ReadHex32(m, p, ev.intr_info)) {
      SkipSpaces(m, p);
      ev.has_intr = ReadHex32(m, p, ev.error_status);
    }
  }
}

// "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)"
void ParseRecoveryAction(KernelEvent& ev) {
  std::string_view m = ev.message;
  uint32_t v = 0;
  if (size_t p = m.find("from "); p != npos) {
    p += 5;
    if (ReadHex32(m, p, v)) ev.recovery_from = static_cast<int>(v);
  }
  if (size_t p = m.find(" to "); p != npos) {
    p += 4;
    if (ReadHex32(m, p, v)) ev.recovery_to = static_cast<int>(v);
    if (size_t open = m.find('(', p); open != npos) {
      size_t close = m.find(')', open);
      if (close != npos) ev.detail = m.substr(open + 1, close - open - 1);
    }
  }
}

bool ParseXid(std::string_view msg, KernelEvent& ev) {
  size_t x = msg.find("Xid");
  if (x == npos || x > 16) return false;
  size_t pos = x + 3;
  SkipSpaces(msg, pos);
  if (pos < msg.size() && msg[pos] == '(') ev.device = ReadParenBdf(msg, pos);
  if (pos >= msg.size() || msg[pos] != ':') return false;
  ++pos;
  SkipSpaces(msg, pos);
  if (!ReadInt(msg, pos, ev.code) || ev.code < 0) return false;
  ev.type = KT::kXid;
  if (pos < msg.size() && msg[pos] == ',') ++pos;
  SkipSpaces(msg, pos);
  std::string_view pid = ReadKeyValue(msg, pos, "pid=");
  ev.pid = pid;
  ev.process = ReadKeyValue(msg, pos, "name=");
  ev.message = Trim(msg.substr(pos));
  if (ev.code == 13) ParseXid13Location(ev);
  if (ev.code >= 144 && ev.code <= 150) ParseNvlink5(ev);
  if (ev.code == 154) ParseRecoveryAction(ev);
  return true;
}

bool ParseSxid(std::string_view msg, KernelEvent& ev) {
  size_t x = msg.find("SXid");
  if (x == npos) return false;
  if (x > 2) ev.driver = Trim(msg.substr(0, x)).substr(0, msg.substr(0, x).find(':'));
  size_t pos = x + 4;
  SkipSpaces(msg, pos);
  ev.device = ReadParenBdf(msg, pos);
  if (pos >= msg.size() || msg[pos] != ':') return false;
  ++pos;
  SkipSpaces(msg, pos);
  if (!ReadInt(msg, pos, ev.code) || ev.code < 0) return false;
  if (pos < msg.size() && msg[pos] == ',') ++pos;
  SkipSpaces(msg, pos);
  std::string_view rest = msg.substr(pos);
  if (StartsWith(rest, "Severity ") || StartsWith(rest, "Data {")) {
    ev.type = KT::kSxidDetail;
    ev.detail = rest;
    return true;
  }
  ev.type = KT::kSxid;
  for (std::string_view sev : {"Non-fatal", "Nonfatal", "Fatal"}) {
    if (StartsWith(rest, sev)) {
      ev.severity = rest.substr(0, sev.size());
      rest = Trim(rest.substr(sev.size()));
      if (StartsWith(rest, ",")) rest = Trim(rest.substr(1));
      break;
    }
  }
  if (StartsWith(rest, "Link ")) {
    size_t p = 5;
    int64_t link = 0;
    if (ReadInt(rest, p, link)) {
      ev.link = static_cast<int>(link);
      rest = Trim(rest.substr(p));
    }
  }
  ev.message = rest;
  return true;
}

bool ParseNvrm(std::string_view msg, KernelEvent& ev) {
  std::string_view body = Trim(msg.substr(5));  // after "NVRM:"
  if (Contains(body, "fallen off the bus")) {
    ev.type = KT::kFellOffBus;
    ev.code = 79;
    if (size_t g = body.find("GPU "); g != npos) {
      std::string_view bdf = TokenAt(body, g + 4);
      if (LooksLikeBdf(bdf)) ev.device = bdf;
    }
    ev.message = body;
    return true;
  }
  if (StartsWith(body, "The NVIDIA GPU ")) {
    std::string_view bdf = TokenAt(body, 15);
    if (!LooksLikeBdf(bdf)) return false;
    ev.type = KT::kFellOffBusHeader;
    ev.device = bdf;
    ev.message = body;
    return true;
  }
  if (StartsWith(body, "GPU at PCI:")) {
    std::string_view bdf = TokenAt(body, 11);
    size_t uuid = body.find("GPU-", 11);
    if (!LooksLikeBdf(bdf) || uuid == npos) return false;
    ev.type = KT::kGpuUuid;
    ev.device = bdf;
    ev.message = Trim(body.substr(uuid));
    return true;
  }
  if (StartsWith(body, "GPU Board Serial Number:")) {
    ev.type = KT::kGpuSerial;
    ev.message = Trim(body.substr(24));
    return !ev.message.empty();
  }
  if (StartsWith(body, "API mismatch")) {
    ev.type = KT::kDriverMismatch;
    ev.message = body;
    return true;
  }
  if (Contains(body, "RmInitAdapter failed")) {
    ev.type = KT::kRmInitFailed;
    if (StartsWith(body, "GPU ")) {
      std::string_view bdf = TokenAt(body, 4);
      if (LooksLikeBdf(bdf)) ev.device = bdf;
    }
    ev.message = body;
    return true;
  }
  return false;
}

// The AER / DPC core's own verdict on an uncorrectable error: the link could not be
// recovered (or was contained by DPC). Reported as a fatal bus error on that device.
bool ParseAerVerdict(std::string_view rest, KernelEvent& ev) {
  // pciehp's "Slot(N): Link Down" / "Card not present" on the port above a GPU: the
  // device is gone from the bus, like a surprise down, whatever follows from the driver.
  for (std::string_view verdict : {"device recovery failed", "can't recover", "subordinate device reset failed",
                                   "DPC: containment event", "Link Down", "Card not present"}) {
    if ((verdict == "Link Down" || verdict == "Card not present") && !StartsWith(rest, "pciehp: ")) continue;
    if (Contains(rest, verdict)) {
      ev.type = KT::kAerBusError;
      ev.severity = kernel_derived::kAerFatal;
      ev.detail = rest.substr(rest.find(verdict), verdict.size());
      ev.message = rest;
      return true;
    }
  }
  return false;
}

bool ParseAer(std::string_view rest, KernelEvent& ev) {
  if (ParseAerVerdict(rest, ev)) return true;
  if (StartsWith(rest, "AER: ")) rest = rest.substr(5);
  if (size_t r = rest.find(" error received: "); r != npos) {
    std::string_view sev = rest.substr(0, r);
    if (StartsWith(sev, "Multiple ")) sev.remove_prefix(9);
    ev.type = KT::kAerReceived;
    ev.severity = sev;
    ev.source = Trim(rest.substr(r + 17));
    return true;
  }
  if (StartsWith(rest, "PCIe Bus Error: severity=")) {
    std::string_view f = rest.substr(25);
    size_t comma = f.find(", type=");
    ev.type = KT::kAerBusError;
    ev.severity = f.substr(0, comma);
    if (comma != npos) {
      std::string_view t = f.substr(comma + 7);
      ev.detail = t.substr(0, t.find(','));
    }
    ev.message = rest;
    return true;
  }
  if ((StartsWith(rest, "device [") && Contains(rest, "error status/mask=")) || StartsWith(rest, "aer_status: ")) {
    ev.type = KT::kAerStatus;
    ev.message = rest;
    return true;
  }
  if (StartsWith(rest, "[")) {
    size_t pos = 1;
    SkipSpaces(rest, pos);
    int64_t bit = 0;
    if (!ReadInt(rest, pos, bit) || pos >= rest.size() || rest[pos] != ']' || bit < 0 || bit > 31) return false;
    ev.type = KT::kAerBit;
    ev.code = bit;
    std::string_view name = Trim(rest.substr(pos + 1));
    size_t first = name.find("  ");
    ev.detail = Trim(name.substr(0, first == npos ? name.find(" (") : first));
    return !ev.detail.empty();
  }
  return false;
}

// mlx5 health and firmware-command messages (drivers/net/ethernet/mellanox/mlx5/core
// health.c, cmd.c, events.c): which event the line reports, or "" for none of them.
std::string_view Mlx5HealthEvent(std::string_view rest) {
  const bool timeout = Contains(rest, "timeout") || Contains(rest, "Timeout");
  if (timeout && (Contains(rest, "leak") || Contains(rest, "cmd_work_handler") || Contains(rest, "wait_func"))) {
    return "fw_cmd_timeout";
  }
  if (Contains(rest, "completion arrived after timeout")) return "fw_cmd_late";
  if (Contains(rest, "health compromised")) return "health_compromised";
  if (Contains(rest, "unrecoverable hardware error") || Contains(rest, "HW fatal error")) return "hw_error";
  if (Contains(rest, "Fatal error") && Contains(rest, "detected")) return "fatal_error";
  if (Contains(rest, "error state") || Contains(rest, "enter_error_state") || Contains(rest, "handling bad device")) {
    return "error_state";
  }
  if (Contains(rest, "synd 0x") || Contains(rest, "Health issue observed")) return "syndrome";
  if (Contains(rest, "fw_state")) return "fw_state";
  if (Contains(rest, "TX timeout") || Contains(rest, "tx_timeout")) return "tx_timeout";
  if (Contains(rest, "High temperature")) return "temperature";
  if (Contains(rest, "advertised sufficient power")) return "slot_power_ok";
  if (Contains(rest, "power capability was not advertised")) return "slot_power_unknown";
  return {};
}

bool ParseMlx5(std::string_view rest, KernelEvent& ev) {
  if (Contains(rest, "insufficient power on the PCIe slot")) {
    ev.type = KT::kMlx5SlotPower;
    if (size_t open = rest.rfind('('); open != npos) ev.detail = rest.substr(open + 1, rest.find(')', open) - open - 1);
  } else if (Contains(rest, "Port module event")) {
    ev.type = KT::kMlx5ModuleEvent;
    ev.detail = Trim(rest.substr(rest.find("Port module event")));
  } else if (std::string_view health = Mlx5HealthEvent(rest); !health.empty()) {
    ev.type = KT::kMlx5Health;
    ev.event = health;
    ev.detail = rest;
  } else if (Contains(rest, "Link down")) {
    ev.type = KT::kMlx5LinkDown;
  } else if (Contains(rest, "Link up")) {
    ev.type = KT::kMlx5LinkUp;
  } else {
    return false;
  }
  ev.message = rest;
  return true;
}

// "name[pid]" or "name:pid" -> process, pid
void ReadProcess(std::string_view s, KernelEvent& ev) {
  if (size_t b = s.find('['); b != npos && s.back() == ']') {
    ev.process = s.substr(0, b);
    ev.pid = s.substr(b + 1, s.size() - b - 2);
  } else if (size_t c = s.rfind(':'); c != npos) {
    ev.process = s.substr(0, c);
    ev.pid = s.substr(c + 1);
  }
}

std::string_view LibraryAfterIn(std::string_view s) {
  size_t in = s.rfind(" in ");
  if (in == npos) return {};
  std::string_view lib = s.substr(in + 4);
  return lib.substr(0, lib.find('['));
}

bool ParseUserFault(std::string_view msg, KernelEvent& ev) {
  if (size_t seg = msg.find(": segfault at "); seg != npos) {
    ev.type = KT::kSegfault;
    ReadProcess(msg.substr(0, seg), ev);
    ev.detail = LibraryAfterIn(msg);
    ev.message = msg;
    return true;
  }
  if (StartsWith(msg, "traps: ")) {
    ev.type = KT::kTrap;
    std::string_view rest = msg.substr(7);
    size_t sp = rest.find(' ');
    ReadProcess(rest.substr(0, sp), ev);
    ev.detail = LibraryAfterIn(rest);
    ev.message = msg;
    return true;
  }
  if (size_t k = msg.find("Killed process "); k != npos && Contains(msg.substr(0, k), "ut of memory")) {
    ev.type = KT::kOomKill;
    size_t pos = k + 15;
    size_t pid_end = msg.find(' ', pos);
    ev.pid = msg.substr(pos, pid_end == npos ? npos : pid_end - pos);
    if (size_t open = msg.find('(', pos); open != npos) {
      ev.process = msg.substr(open + 1, msg.find(')', open) - open - 1);
    }
    ev.message = msg;
    return true;
  }
  return false;
}

bool ParseHostAndHang(std::string_view msg, KernelEvent& ev) {
  if (StartsWith(msg, "mce: ") && Contains(msg, "[Hardware Error]")) {
    ev.type = KT::kMce;
    ev.message = Trim(msg.substr(msg.find("[Hardware Error]") + 16));
    if (StartsWith(ev.message, ":")) ev.message = Trim(ev.message.substr(1));
    ev.severity = McaSeverity(ev.message);
    return true;
  }
  if (StartsWith(msg, "EDAC ")) {
    for (std::string_view sev : {" CE ", " UE "}) {
      size_t p = msg.find(sev);
      if (p == npos) continue;
      ev.type = KT::kEdac;
      ev.severity = msg.substr(p + 1, 2);  // a view into the input, like every other field
      size_t start = p;
      while (start > 0 && IsDigit(msg[start - 1])) --start;
      int64_t n = 1;
      if (start < p) std::from_chars(msg.data() + start, msg.data() + p, n);
      ev.code = std::max<int64_t>(n, 1);
      ev.message = msg;
      ev.detail = MemoryErrorLocation(msg);
      return true;
    }
    // skx/i10nm_edac announce each machine-check memory error before the CE/UE line.
    if (Contains(msg, "HANDLING MCE MEMORY ERROR")) {
      ev.type = KT::kEdac;
      ev.code = 0;
      ev.message = msg;
      return true;
    }
    return false;
  }
  if (size_t s = msg.find("soft lockup - CPU#"); s != npos) {
    ev.type = KT::kSoftLockup;
    size_t open = msg.rfind('[');
    size_t close = msg.rfind(']');
    if (open != npos && close != npos && close > open) ReadProcess(msg.substr(open + 1, close - open - 1), ev);
    ev.message = msg;
    return true;
  }
  if (StartsWith(msg, "INFO: task ") && Contains(msg, " blocked for more than ")) {
    ev.type = KT::kHungTask;
    std::string_view rest = msg.substr(11);
    ReadProcess(rest.substr(0, rest.find(' ')), ev);
    ev.message = msg;
    return true;
  }
  return false;
}

// "...DIMM..." word: letters, digits and _#.- around the match, as printed.
std::string_view WordAround(std::string_view s, size_t pos) {
  auto word = [](char c) {
    return IsHexDigit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '#' || c == '-' ||
           c == '.';
  };
  size_t b = pos, e = pos;
  while (b > 0 && word(s[b - 1])) --b;
  while (e < s.size() && word(s[e])) ++e;
  while (e > b && (s[e - 1] == '.' || s[e - 1] == '-')) --e;
  return s.substr(b, e - b);
}

}  // namespace

std::string_view McaSeverity(std::string_view msg) {
  if (Contains(msg, "Machine Check Exception") || Contains(msg, "Fatal machine check") ||
      Contains(msg, "Uncorrected error")) {
    return kernel_derived::kMcaUncorrected;
  }
  if (size_t bank = msg.find("Bank "); bank != npos) {
    size_t colon = msg.find(": ", bank);
    if (colon != npos) {
      size_t p = colon + 2;
      const size_t start = p;
      uint64_t status = 0;
      while (p < msg.size() && IsHexDigit(msg[p]) && p - start < 16) ++p;
      if (p > start && std::from_chars(msg.data() + start, msg.data() + p, status, 16).ec == std::errc()) {
        const bool valid = (status >> 63) & 1u;
        const bool uncorrected = (status >> 61) & 1u;
        if (valid) return uncorrected ? kernel_derived::kMcaUncorrected : kernel_derived::kMcaCorrected;
      }
    }
  }
  if (Contains(msg, "Corrected error")) return kernel_derived::kMcaCorrected;
  return {};
}

std::string_view AerBitSeverity(std::string_view name) {
  for (std::string_view c : {"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr",
                             "HeaderOF"}) {
    if (name == c) return "Corrected";
  }
  for (std::string_view u : {"Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
                             "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP",
                             "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"}) {
    if (name == u) return "Uncorrected (Non-Fatal)";
  }
  return "";
}

std::string_view MemoryErrorLocation(std::string_view msg) {
  if (size_t p = msg.find("DIMM location: "); p != npos) {
    std::string_view v = Trim(msg.substr(p + 15));
    v = v.substr(0, v.find_first_of(" ,;("));
    if (!v.empty() && v != "not" && v != "unknown") return v;
  }
  // A word holding the location: "CPU_SrcID#0_MC#0_Chan#1_DIMM#0", "DIMM_A1", "mc#0csrow#3channel#1".
  for (std::string_view marker : {"DIMM#", "DIMM_", "csrow#"}) {
    if (size_t p = msg.find(marker); p != npos) {
      if (std::string_view w = WordAround(msg, p); !w.empty()) return w;
    }
  }
  // "DIMM A1" / "DIMM 2": the marker and the short word after it.
  if (size_t p = msg.find("DIMM "); p != npos) {
    size_t e = p + 5;
    while (e < msg.size() && msg[e] != ' ' && msg[e] != ',' && msg[e] != ')' && msg[e] != ':' && msg[e] != ';') ++e;
    const std::string_view word = msg.substr(p + 5, e - p - 5);
    if (!word.empty() && word.size() <= 8 && word != "location" && (e >= msg.size() || msg[e] != ':')) {
      return msg.substr(p, e - p);
    }
  }
  if (size_t p = msg.find("(channel:"); p != npos) {
    size_t slot = msg.find(" slot:", p);
    if (slot != npos && slot - p < 16) {
      size_t e = slot + 6;
      while (e < msg.size() && IsDigit(msg[e])) ++e;
      return msg.substr(p + 1, e - p - 1);
    }
  }
  return {};
}

// "{3}[Hardware Error]: section_type: PCIe error": the kernel's print of a firmware-first
// error record (APEI GHES, UEFI CPER), one field per line under one record number.
bool ParseGhes(std::string_view msg, KernelEvent& ev) {
  if (msg.size() < 4 || msg[0] != '{') return false;
  size_t pos = 1;
  int64_t record = 0;
  if (!ReadInt(msg, pos, record) || pos >= msg.size() || msg[pos] != '}') return false;
  std::string_view rest = msg.substr(pos + 1);
  if (!StartsWith(rest, "[Hardware Error]:")) return false;
  ev.type = KT::kGhes;
  ev.code = record;
  ev.detail = Trim(rest.substr(17));
  ev.message = msg;
  return true;
}

KernelEvent ClassifyKernelMessage(std::string_view msg) {
  KernelEvent ev;
  msg = Trim(msg);
  if (msg.empty()) return ev;
  const bool ok = [&] {
    if (StartsWith(msg, "NVRM:")) {
      if (ParseXid(msg, ev)) return true;
      ev = KernelEvent{};
      return ParseNvrm(msg, ev);
    }
    if (Contains(msg, "SXid")) return ParseSxid(msg, ev);
    if (ParseGhes(msg, ev)) return true;
    if (ParseAmdgpuDrm(msg, ev)) return true;  // "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ..." (no BDF)
    if (ParseHostAndHang(msg, ev)) return true;
    if (ParseUserFault(msg, ev)) return true;
    std::string_view rest = SplitDevicePrefix(msg, ev);
    if (ev.device.empty()) return false;
    if (ev.driver == "mlx5_core" && ParseMlx5(rest, ev)) return true;
    if (ev.driver == "amdgpu") return ParseAmdgpu(rest, ev);
    return ParseAer(rest, ev);
  }();
  if (!ok) return KernelEvent{};
  return ev;
}

std::string_view ToString(KernelEventType t) {
  switch (t) {
    case KT::kNone:
      return "none";
    case KT::kXid:
      return "xid";
    case KT::kSxid:
      return "sxid";
    case KT::kSxidDetail:
      return "sxid_detail";
    case KT::kFellOffBus:
      return "fell_off_bus";
    case KT::kFellOffBusHeader:
      return "fell_off_bus_header";
    case KT::kGpuUuid:
      return "gpu_uuid";
    case KT::kGpuSerial:
      return "gpu_serial";
    case KT::kAerReceived:
      return "aer_received";
    case KT::kAerBusError:
      return "aer_bus_error";
    case KT::kAerStatus:
      return "aer_status";
    case KT::kAerBit:
      return "aer_bit";
    case KT::kMce:
      return "mce";
    case KT::kEdac:
      return "edac";
    case KT::kMlx5SlotPower:
      return "mlx5_slot_power";
    case KT::kMlx5ModuleEvent:
      return "mlx5_module_event";
    case KT::kMlx5LinkDown:
      return "mlx5_link_down";
    case KT::kMlx5LinkUp:
      return "mlx5_link_up";
    case KT::kMlx5Health:
      return "mlx5_health";
    case KT::kSoftLockup:
      return "soft_lockup";
    case KT::kHungTask:
      return "hung_task";
    case KT::kSegfault:
      return "segfault";
    case KT::kTrap:
      return "trap";
    case KT::kOomKill:
      return "oom_kill";
    case KT::kDriverMismatch:
      return "driver_mismatch";
    case KT::kRmInitFailed:
      return "rm_init_failed";
    case KT::kGhes:
      return "ghes";
    case KT::kAmdgpu:
      return "amdgpu";
  }
  return "none";
}

}  // namespace faultline
