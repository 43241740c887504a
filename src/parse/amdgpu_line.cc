#include "parse/amdgpu_line.h"

#include "parse/text.h"

namespace faultline {
namespace {

namespace E = amdgpu_event;
constexpr size_t npos = std::string_view::npos;

// Strips the decorations newer kernels put before the text: "amdgpu: ", "{12}",
// "socket: 0, die: 1, ".
std::string_view StripDecorations(std::string_view s) {
  s = Trim(s);
  if (StartsWith(s, "amdgpu:")) s = Trim(s.substr(7));
  if (!s.empty() && s.front() == '{') {
    const size_t close = s.find('}');
    if (close != npos && close <= 12) s = Trim(s.substr(close + 1));
  }
  if (StartsWith(s, "socket:")) {
    const size_t die = s.find("die:");
    if (die != npos && die < 32) {
      const size_t comma = s.find(',', die);
      if (comma != npos && comma < die + 16) s = Trim(s.substr(comma + 1));
    }
  }
  return s;
}

// The leading integer of `s` and the text after it; code stays -1 when there is none.
std::string_view LeadingCount(std::string_view s, int64_t& code) {
  size_t n = 0;
  while (n < s.size() && n < 19 && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0) return s;
  code = ParseInt(s.substr(0, n)).value_or(-1);
  return Trim(s.substr(n));
}

// "... detected in <blk> block" -> "<blk>".
std::string_view BlockOf(std::string_view s) {
  const size_t in = s.rfind(" in ");
  if (in == npos) return {};
  std::string_view b = s.substr(in + 4);
  const size_t sp = b.find(" block");
  if (sp == npos || sp == 0 || sp > 32) return {};
  // "<blk> block" ends the sentence ("block", "block,", "block."): a longer phrase is not a block name.
  const std::string_view after = b.substr(sp + 6);
  if (!after.empty() && after.front() != ',' && after.front() != '.') return {};
  const std::string_view name = b.substr(0, sp);
  if (name.find(' ') != npos) return {};
  return name;
}

// "Process python3 pid 1234 thread python3 pid 1235" / "process information: process X pid N ..."
void ReadProcess(std::string_view s, KernelEvent& ev) {
  size_t p = s.find("rocess ");
  if (p == npos) return;
  std::string_view r = s.substr(p + 7);
  if (StartsWith(r, "information:")) {
    r = Trim(r.substr(12));
    if (StartsWith(r, "process ")) r = r.substr(8);
  }
  const size_t pid = r.find(" pid ");
  if (pid == npos || pid == 0 || pid > 64) return;
  ev.process = Trim(r.substr(0, pid));
  std::string_view n = r.substr(pid + 5);
  size_t end = 0;
  while (end < n.size() && n[end] >= '0' && n[end] <= '9') ++end;
  if (end > 0) ev.pid = n.substr(0, end);
}

bool Ras(std::string_view s, KernelEvent& ev) {
  if (StartsWith(s, "uncorrectable hardware error(") && Contains(s, "detected")) {
    ev.event = E::kRasFatal;
    const size_t open = s.find('('), close = s.find(')');
    if (close != npos && close > open) ev.detail = s.substr(open + 1, close - open - 1);
    return true;
  }
  int64_t count = -1;
  std::string_view r = LeadingCount(s, count);
  if (count < 0) return false;
  if (StartsWith(r, "new ")) r = r.substr(4);
  std::string_view ev_name;
  if (StartsWith(r, "correctable hardware errors detected")) {
    ev_name = E::kRasCe;
  } else if (StartsWith(r, "uncorrectable hardware errors detected")) {
    ev_name = E::kRasUe;
  } else if (StartsWith(r, "deferred hardware errors detected")) {
    ev_name = E::kRasDeferred;
  } else if (StartsWith(r, "poison consumption detected")) {
    ev_name = E::kPoisonConsumed;
  } else {
    return false;
  }
  ev.detail = BlockOf(r);
  if (ev.detail.empty()) return false;
  ev.event = ev_name;
  ev.code = count;
  // "... detected in total in <blk> block": a running total, not news.
  if (Contains(r, "in total")) ev.severity = kernel_derived::kRunningTotal;
  return true;
}

bool BadPages(std::string_view s, KernelEvent& ev) {
  if (StartsWith(s, "Saved ") && Contains(s, "pages to EEPROM table")) {
    int64_t n = -1;
    LeadingCount(s.substr(6), n);
    ev.event = E::kBadPagesSaved;
    ev.code = n;
    return true;
  }
  if (StartsWith(s, "RAS records:") && Contains(s, "exceed threshold:")) {
    int64_t n = -1;
    LeadingCount(s.substr(12), n);
    ev.event = E::kBadPageThreshold;
    ev.code = n;
    std::string_view t = s.substr(s.find("threshold:") + 10);
    size_t e = 0;
    while (e < t.size() && ((t[e] >= '0' && t[e] <= '9') || t[e] == '-')) ++e;
    ev.detail = t.substr(0, e);
    return true;
  }
  if (StartsWith(s, "GPU will not be initialized") && Contains(s, "threshold")) {
    ev.event = E::kBadPageThreshold;
    return true;
  }
  if (Contains(s, "AMD Service Action Guide")) {
    ev.event = E::kRmaAdvised;
    return true;
  }
  if ((StartsWith(s, "Failed to save EEPROM table") || StartsWith(s, "Failed to load EEPROM table"))) {
    ev.event = E::kEepromError;
    return true;
  }
  if (StartsWith(s, "Uncorrectable error detected in UMC")) {  // CPU-attached (MCA notifier)
    ev.event = E::kRasUe;
    ev.detail = kernel_derived::kUmcBlock;
    ev.code = 1;
    return true;
  }
  return false;
}

bool Reset(std::string_view s, KernelEvent& ev) {
  if (StartsWith(s, "GPU reset begin")) {
    ev.event = E::kResetBegin;
    return true;
  }
  if (s == "MODE1 reset" || s == "MODE2 reset" || s == "BACO reset" || s == "MODE0 reset") {
    ev.event = E::kResetMode;
    ev.detail = s.substr(0, 5 - (s[0] == 'B' ? 1 : 0));
    return true;
  }
  if (StartsWith(s, "GPU reset") && Contains(s, "succeeded")) {
    ev.event = E::kResetSucceeded;
    return true;
  }
  if ((StartsWith(s, "GPU reset") && Contains(s, "failed")) || StartsWith(s, "GPU Recovery Failed") ||
      StartsWith(s, "ASIC reset failed")) {
    ev.event = E::kResetFailed;
    return true;
  }
  if (StartsWith(s, "GPU reset end with ret =")) {
    const auto ret = ParseInt(Trim(s.substr(24)));
    ev.event = ret && *ret == 0 ? E::kResetSucceeded : E::kResetFailed;
    return true;
  }
  if (StartsWith(s, "VRAM is lost due to GPU reset")) {
    ev.event = E::kVramLost;
    return true;
  }
  return false;
}

bool Ring(std::string_view s, KernelEvent& ev) {
  if (StartsWith(s, "ring ") && Contains(s, " timeout")) {
    std::string_view r = s.substr(5);
    const size_t sp = r.find(' ');
    if (sp == npos || sp == 0 || sp > 32) return false;
    ev.event = E::kRingTimeout;
    ev.detail = r.substr(0, sp);
    ev.message = s;
    return true;
  }
  if (StartsWith(s, "Process ") || StartsWith(s, "Process information:") || StartsWith(s, "process information:")) {
    ReadProcess(s, ev);
    if (ev.process.empty()) return false;
    ev.event = E::kRingProcess;
    return true;
  }
  if (StartsWith(s, "Starting ") && Contains(s, " ring reset")) {
    ev.event = E::kRingReset;
    ev.detail = Trim(s.substr(9, s.find(" ring reset") - 9));
    ev.severity = kernel_derived::kResetStarted;
    return true;
  }
  if (StartsWith(s, "Ring ") && Contains(s, " reset ")) {
    std::string_view r = s.substr(5);
    const size_t sp = r.find(' ');
    if (sp == npos || sp == 0 || sp > 32) return false;
    ev.event = E::kRingReset;
    ev.detail = r.substr(0, sp);
    ev.severity = Contains(s, "failed")      ? kernel_derived::kResetFailed
                  : Contains(s, "succeeded") ? kernel_derived::kResetSucceeded
                                             : kernel_derived::kResetStarted;
    return true;
  }
  if (Contains(s, "page fault") && (StartsWith(s, "[gfxhub") || StartsWith(s, "[mmhub") || Contains(s, "VM fault"))) {
    ev.event = E::kVmFault;
    ReadProcess(s, ev);
    return true;
  }
  return false;
}

bool Device(std::string_view s, KernelEvent& ev) {
  if (StartsWith(s, "device lost from bus")) {
    ev.event = E::kDeviceLost;
    return true;
  }
  if (StartsWith(s, "SMU: bus error") || (StartsWith(s, "SMU:") && Contains(s, "0xFFFFFFFF"))) {
    ev.event = E::kSmuBusError;
    return true;
  }
  if (StartsWith(s, "Fatal error during GPU init")) {
    ev.event = E::kInitFailed;
    return true;
  }
  if (StartsWith(s, "Poison is created")) {
    ev.event = E::kPoisonCreated;
    return true;
  }
  if (StartsWith(s, "GPU reset for ") && Contains(s, "poison consumption")) {
    ev.event = E::kPoisonConsumed;
    std::string_view b = s.substr(14);
    ev.detail = b.substr(0, std::min(b.find(' '), size_t{32}));
    return true;
  }
  if (StartsWith(s, "[Hardware Error]:") &&
      (Contains(s, "Accelerator Check Architecture") || Contains(s, "aca entry"))) {
    ev.event = E::kAca;
    return true;
  }
  return false;
}

bool Classify(std::string_view s, KernelEvent& ev) {
  if (s.empty()) return false;
  ev.message = s;
  if (Ras(s, ev) || BadPages(s, ev) || Reset(s, ev) || Ring(s, ev) || Device(s, ev)) {
    ev.type = KernelEventType::kAmdgpu;
    return true;
  }
  return false;
}

}  // namespace

bool ParseAmdgpu(std::string_view rest, KernelEvent& ev) { return Classify(StripDecorations(rest), ev); }

bool ParseAmdgpuDrm(std::string_view msg, KernelEvent& ev) {
  if (!StartsWith(msg, "[drm:")) return false;
  const size_t tag = msg.find(" [amdgpu]]");
  if (tag == npos || tag > 80) return false;
  std::string_view rest = Trim(msg.substr(tag + 10));
  if (StartsWith(rest, "*ERROR*")) rest = Trim(rest.substr(7));
  ev.driver = kernel_derived::kAmdgpuDriver;
  return Classify(StripDecorations(rest), ev);
}

}  // namespace faultline
