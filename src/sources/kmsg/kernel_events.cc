#include "sources/kmsg/kernel_events.h"

#include <algorithm>

#include "core/inventory.h"
#include "sources/kmsg/amdgpu_events.h"
#include "parse/text.h"

namespace faultline {
namespace {

using KT = KernelEventType;

std::string Str(std::string_view s) { return std::string(s); }

// "nvidia-nvswitch3" -> "3"; anything else -> the BDF.
std::string NvswitchName(std::string_view driver, const std::string& bdf) {
  constexpr std::string_view kPrefix = "nvidia-nvswitch";
  if (driver.substr(0, kPrefix.size()) == kPrefix && driver.size() > kPrefix.size()) {
    return Str(driver.substr(kPrefix.size()));
  }
  return bdf;
}

// `bdf` is NormalizeBdf(printed) (empty when it does not read as one).
ComponentRef GpuByBdf(std::string bdf, std::string_view printed) {
  if (bdf.empty()) bdf = Str(printed);
  ComponentRef ref{ComponentType::kGpu, bdf, {}};
  ref.keys["bdf"] = bdf;
  return ref;
}

void SetIf(std::map<std::string, std::string>& attrs, const char* key, std::string_view v) {
  if (!v.empty()) attrs[key] = Str(v);
}

// A list attribute grows with each continuation line, up to a bound (a hostile log may
// repeat a detail line forever).
void AppendAttr(std::string& list, std::string_view item, std::string_view sep) {
  constexpr size_t kMaxAttrBytes = 1024;
  if (list.size() + sep.size() + item.size() > kMaxAttrBytes) return;
  if (!list.empty()) list += sep;
  list += item;
}

// "[14] CmpltTO                (First)" -> "CmpltTO"; "" when the text is not an AER bit line.
std::string_view AerBitName(std::string_view text) {
  if (text.size() < 4 || text[0] != '[') return {};
  size_t pos = 1;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  const size_t digits = pos;
  while (pos < text.size() && pos < digits + 2 && text[pos] >= '0' && text[pos] <= '9') ++pos;
  if (pos == digits || pos >= text.size() || text[pos] != ']') return {};
  std::string_view name = Trim(text.substr(pos + 1));
  name = name.substr(0, std::min(name.find("  "), name.find(" (")));
  return name;
}

}  // namespace

std::string KernelEventAssembler::Bdf(std::string_view printed) {
  // The same few devices repeat line after line (an AER burst, one GPU's XIDs).
  for (const auto& [seen, bdf] : bdf_memo_) {
    if (!seen.empty() && seen == printed) return bdf;
  }
  auto& slot = bdf_memo_[bdf_memo_next_++ % bdf_memo_.size()];
  slot = {Str(printed), NormalizeBdf(printed)};
  return slot.second;
}

Observation KernelEventAssembler::Base(const LogLine& line, std::string_view raw) const {
  Observation o;
  o.node = options_.node;
  o.source = Source::kKmsg;
  o.layer = Layer::kOs;
  o.time_ns = line.time_ns;
  o.mono_us = line.mono_us;
  o.seq = line.seq;
  if (o.time_ns == 0 && o.mono_us && options_.boot_time_ns) o.time_ns = *options_.boot_time_ns + *o.mono_us * 1000;
  o.raw = Str(raw.substr(0, options_.max_raw_bytes));
  return o;
}

void KernelEventAssembler::Flush(std::vector<Observation>& out) {
  if (pending_) out.push_back(std::move(*pending_));
  pending_.reset();
}

bool KernelEventAssembler::MergeIntoPending(const KernelEvent& ev, std::string_view raw) {
  if (!pending_) return false;
  if (ev.type != KT::kAerBit && ev.type != KT::kAerStatus && ev.type != KT::kSxidDetail) return false;
  const std::string bdf = Bdf(ev.device);
  if ((ev.type == KT::kAerBit || ev.type == KT::kAerStatus) && pending_->kind == ObsKind::kPcieAer &&
      pending_->component.name == bdf) {
    if (ev.type == KT::kAerBit) AppendAttr(pending_->attrs["errors"], ev.detail, ",");
    AppendRaw(raw);
    return true;
  }
  if (ev.type == KT::kSxidDetail && pending_->kind == ObsKind::kSxid && pending_->code == ev.code &&
      pending_->component.keys["bdf"] == bdf) {
    AppendAttr(pending_->attrs["data"], ev.detail, "; ");
    return true;
  }
  return false;
}

bool KernelEventAssembler::Feed(const LogLine& line, std::string_view raw, std::vector<Observation>& out) {
  if (line.format == LogFormat::kKmsgContinuation) return false;  // raw kmsg dictionary data
  // Userspace programs in a syslog file may print anything (a health script re-logging
  // the NVRM lines it found would double them); only kernel lines count.
  if (!line.tag.empty() && line.tag != "kernel") return false;
  const bool nvrm = Contains(line.message, "NVRM:");
  if (line.indented && AttachContinuation(line, raw, out)) return true;
  KernelEvent ev = ClassifyKernelMessage(line.message);
  if (ev.type == KT::kNone && nvrm && !StartsWith(line.message, "NVRM:")) {
    // "NVRM:" after a prefix nobody here knows (a pasted ticket, a relay's own stamp).
    ev = ClassifyKernelMessage(line.message.substr(line.message.find("NVRM:")));
  }
  if (ev.type == KT::kNone) return AttachUnclassified(line, raw);
  if (ev.type == KT::kGhes) {
    FeedGhes(ev, line, raw, out);
    return true;
  }
  if (MergeIntoPending(ev, raw)) return true;
  Flush(out);
  Emit(ev, line, raw, out);
  return true;
}

bool KernelEventAssembler::AttachContinuation(const LogLine& line, std::string_view raw,
                                              std::vector<Observation>& out) {
  const std::string_view text = Trim(line.message);
  if (!fell_off_bdf_.empty() && lines_since_header_ <= 3 && Contains(text, "fallen off the bus")) {
    // "NVRM: The NVIDIA GPU <bdf> (PCI ID: ...)" then, indented, "installed in this system
    // has fallen off the bus ...": one event on the header's GPU.
    Observation o = Base(line, raw);
    o.text = Str(text);
    o.kind = ObsKind::kGpuFellOffBus;
    o.code = 79;
    o.component = GpuByBdf(Bdf(fell_off_bdf_), fell_off_bdf_);
    if (!fell_off_raw_.empty()) o.raw = fell_off_raw_ + "\n" + o.raw;
    fell_off_bdf_.clear();
    fell_off_raw_.clear();
    Flush(out);
    out.push_back(std::move(o));
    return true;
  }
  if (!pending_ || pending_->kind != ObsKind::kPcieAer) return false;
  // AER detail lines printed without the device prefix, under their header:
  // "[14] CmpltTO  (First)", "TLP Header: ...", "device [10de:2330] error status/mask=...".
  if (std::string_view bit = AerBitName(text); !bit.empty()) {
    AppendAttr(pending_->attrs["errors"], bit, ",");
  } else if (StartsWith(text, "TLP Header:")) {
    pending_->attrs["tlp_header"] = Str(Trim(text.substr(11)));
  } else if (!StartsWith(text, "device [")) {
    return false;
  }
  AppendRaw(raw);
  return true;
}

bool KernelEventAssembler::AttachUnclassified(const LogLine& line, std::string_view raw) {
  // "<dev>: AER:   TLP Header: ..." belongs to that device's pending AER record.
  if (!pending_ || pending_->kind != ObsKind::kPcieAer) return false;
  const size_t tlp = line.message.find("TLP Header:");
  if (tlp == std::string_view::npos || !Contains(line.message.substr(0, tlp), pending_->component.name)) return false;
  pending_->attrs["tlp_header"] = Str(Trim(line.message.substr(tlp + 11)));
  AppendRaw(raw);
  return true;
}

void KernelEventAssembler::AppendRaw(std::string_view raw) {
  if (pending_->raw.size() >= options_.max_raw_bytes * 4) return;  // evidence stays bounded
  pending_->raw += '\n';
  pending_->raw += Str(raw.substr(0, options_.max_raw_bytes));
}

void KernelEventAssembler::Finish(std::vector<Observation>& out) { Flush(out); }

void KernelEventAssembler::Emit(const KernelEvent& ev, const LogLine& line, std::string_view raw,
                                std::vector<Observation>& out) {
  Observation o = Base(line, raw);
  o.text = Str(ev.message.empty() ? ev.detail : ev.message);
  ++lines_since_header_;
  switch (ev.type) {
    case KT::kXid:
    case KT::kFellOffBus:
    case KT::kFellOffBusHeader:
    case KT::kGpuUuid:
    case KT::kGpuSerial:
    case KT::kSxid:
    case KT::kDriverMismatch:
    case KT::kRmInitFailed:
      EmitGpuEvent(ev, o, out);
      return;
    case KT::kAerReceived:
    case KT::kAerBusError:
    case KT::kMlx5SlotPower:
    case KT::kMlx5ModuleEvent:
    case KT::kMlx5LinkDown:
    case KT::kMlx5LinkUp:
    case KT::kMlx5Health:
      EmitPcieEvent(ev, o, out);
      return;
    case KT::kSxidDetail:  // its SXid is not the pending record (switches interleave): switch data, never a program's
      return;
    case KT::kAerBit:  // no header of this device before it (firmware-first log, a cut paste)
      EmitOrphanAerBit(ev, o, out);
      return;
    case KT::kAerStatus:  // status words without their header: nothing to place
      return;
    case KT::kAmdgpu:  // amdgpu RAS / reset / ring lines (sources/kmsg/amdgpu_events.h)
      if (AmdgpuObservation(ev, Bdf(ev.device), o)) out.push_back(std::move(o));
      return;
    default:
      EmitHostEvent(ev, o, out);
      return;
  }
}

void KernelEventAssembler::EmitOrphanAerBit(const KernelEvent& ev, Observation& o, std::vector<Observation>& out) {
  const std::string_view severity = AerBitSeverity(ev.detail);
  const std::string bdf = Bdf(ev.device);
  if (severity.empty() || bdf.empty()) return;  // a severity is never guessed
  o.layer = Layer::kFabric;
  o.kind = ObsKind::kPcieAer;
  o.value = 1;
  o.component = PcieComponent(bdf);
  SetIf(o.component.keys, "driver", ev.driver);
  o.attrs["severity"] = Str(severity);
  o.attrs["errors"] = Str(ev.detail);
  pending_ = std::move(o);  // further bits of the same device merge into it
  (void)out;
}

// Firmware-first errors (APEI GHES): the kernel prints the platform's record one field per
// line, "{N}[Hardware Error]: ...". A PCIe section becomes one AER record on its device,
// with the record's severity, and takes the record's later lines (and the device's own
// "AER: aer_status" / "[ 0] RxErr" lines printed after it) as evidence.
void KernelEventAssembler::FeedGhes(const KernelEvent& ev, const LogLine& line, std::string_view raw,
                                    std::vector<Observation>& out) {
  const std::string_view d = ev.detail;
  const bool ours = pending_ && ev.code == ghes_record_ && pending_->attrs.count("ghes_record") != 0;
  const bool ours_memory = ours && pending_->kind == ObsKind::kHostMemoryError;
  if (ev.code != ghes_record_ || StartsWith(d, "Hardware error from APEI")) {
    // A new record (its header, or a paste that starts below it): nothing carries over.
    Flush(out);
    ghes_record_ = ev.code;
    ghes_severity_.clear();
    ghes_section_.clear();
    if (StartsWith(d, "Hardware error from APEI")) return;
  }
  if (StartsWith(d, "event severity:")) {
    ghes_severity_ = Str(Trim(d.substr(15)));
  } else if (StartsWith(d, "Error ") && Contains(d, ", type:")) {
    Flush(out);  // a new section of the same record
    ghes_section_.clear();
    ghes_severity_ = Str(Trim(d.substr(d.find(", type:") + 7)));
    return;
  } else if (StartsWith(d, "section_type:")) {
    ghes_section_ = Str(Trim(d.substr(13)));
    if (Contains(ghes_section_, "memory error")) {
      // A platform memory error: one host-memory record for the section, its DIMM named by
      // a later "DIMM location:" line when the firmware gives one.
      Flush(out);
      Observation o = Base(line, raw);
      o.kind = ObsKind::kHostMemoryError;
      o.component = HostComponent();
      o.attrs["event"] = "ghes";
      o.attrs["severity"] = ghes_severity_ == "corrected" || ghes_severity_ == "info" ? "CE" : "UE";
      o.attrs["ghes_record"] = std::to_string(ev.code);
      o.text = "firmware-first memory error, event severity: " + ghes_severity_;
      pending_ = std::move(o);
      return;
    }
  } else if (StartsWith(d, "DIMM location:") && ours_memory) {
    pending_->text += "; " + Str(d.substr(0, 256));
  } else if (StartsWith(d, "device_id:") && Contains(ghes_section_, "PCIe")) {
    const std::string bdf = Bdf(Trim(d.substr(10)));
    if (!bdf.empty()) {
      Flush(out);
      Observation o = Base(line, raw);
      o.layer = Layer::kFabric;
      o.kind = ObsKind::kPcieAer;
      o.value = 1;
      o.component = PcieComponent(bdf);
      o.component.keys["driver"] = "ghes";
      const std::string sev = ghes_severity_;
      o.attrs["severity"] = sev == "fatal"         ? "Uncorrected (Fatal)"
                            : sev == "recoverable" ? "Uncorrected (Non-Fatal)"
                                                   : "Corrected";  // corrected, info
      o.attrs["type"] = "firmware-first (GHES)";
      o.attrs["ghes_record"] = std::to_string(ev.code);
      o.text = "firmware-first PCIe error, event severity: " + (sev.empty() ? std::string("unknown") : sev);
      pending_ = std::move(o);
      return;
    }
  }
  if (ours) AppendRaw(raw);
}

void KernelEventAssembler::EmitGpuEvent(const KernelEvent& ev, Observation& o, std::vector<Observation>& out) {
  switch (ev.type) {
    case KT::kXid:
      o.kind = ev.code == 154 ? ObsKind::kXidRecoveryAction : ObsKind::kXid;
      o.code = ev.code;
      o.component = ev.device.empty() ? HostComponent() : GpuByBdf(Bdf(ev.device), ev.device);
      if (ev.pid != "<unknown>") SetIf(o.attrs, "pid", ev.pid);
      if (ev.process != "<unknown>") SetIf(o.attrs, "process", ev.process);
      if (ev.gpc >= 0) o.attrs["gpc"] = std::to_string(ev.gpc);
      if (ev.tpc >= 0) o.attrs["tpc"] = std::to_string(ev.tpc);
      SetIf(o.attrs, "unit", ev.unit);
      SetIf(o.attrs, "severity", ev.severity);
      if (ev.link >= -1) o.attrs["link"] = std::to_string(ev.link);
      if (ev.has_intr) {
        o.attrs["intr_info"] = std::to_string(ev.intr_info);
        o.attrs["error_status"] = std::to_string(ev.error_status);
      }
      if (ev.code == 154 && ev.recovery_to >= 0) {
        o.value = ev.recovery_to;
        SetIf(o.attrs, "recovery_action", ev.detail);
      }
      out.push_back(std::move(o));
      return;
    case KT::kFellOffBusHeader:
      fell_off_bdf_ = Bdf(ev.device);
      fell_off_raw_ = o.raw;
      lines_since_header_ = 0;
      return;
    case KT::kFellOffBus: {
      std::string bdf = ev.device.empty() && lines_since_header_ <= 3 ? fell_off_bdf_ : Bdf(ev.device);
      o.kind = ObsKind::kGpuFellOffBus;
      o.code = 79;
      o.component = bdf.empty() ? HostComponent() : GpuByBdf(Bdf(bdf), bdf);
      if (!fell_off_raw_.empty() && ev.device.empty()) o.raw = fell_off_raw_ + "\n" + o.raw;
      fell_off_bdf_.clear();
      fell_off_raw_.clear();
      out.push_back(std::move(o));
      return;
    }
    case KT::kGpuUuid:
      o.kind = ObsKind::kGpuIdentity;
      o.component = GpuByBdf(Bdf(ev.device), ev.device);
      o.attrs["uuid"] = o.text;
      last_uuid_bdf_ = o.component.name;
      out.push_back(std::move(o));
      return;
    case KT::kGpuSerial:
      if (last_uuid_bdf_.empty()) return;  // a serial we cannot place is not guessed onto a GPU
      o.kind = ObsKind::kGpuIdentity;
      o.component = GpuByBdf(Bdf(last_uuid_bdf_), last_uuid_bdf_);
      o.attrs["serial"] = o.text;
      last_uuid_bdf_.clear();
      out.push_back(std::move(o));
      return;
    case KT::kSxid: {
      const std::string bdf = Bdf(ev.device);
      o.kind = ObsKind::kSxid;
      o.layer = Layer::kFabric;
      o.code = ev.code;
      o.component = ComponentRef{ComponentType::kNvswitch, NvswitchName(ev.driver, bdf), {}};
      if (!bdf.empty()) o.component.keys["bdf"] = bdf;
      SetIf(o.attrs, "severity", ev.severity);
      if (ev.link >= -1) o.attrs["link"] = std::to_string(ev.link);
      pending_ = std::move(o);  // continuation lines may follow
      return;
    }
    default:  // driver mismatch, RmInitAdapter failure
      o.kind = ObsKind::kDriverError;
      o.component = ev.device.empty() ? HostComponent() : GpuByBdf(Bdf(ev.device), ev.device);
      o.attrs["event"] = Str(ToString(ev.type));
      out.push_back(std::move(o));
      return;
  }
}

void KernelEventAssembler::EmitPcieEvent(const KernelEvent& ev, Observation& o, std::vector<Observation>& out) {
  const std::string bdf = Bdf(ev.device);
  o.layer = Layer::kFabric;
  o.component = PcieComponent(bdf.empty() ? Str(ev.device) : bdf);
  SetIf(o.component.keys, "driver", ev.driver);
  if (ev.driver == "mlx5_core") SetIf(o.component.keys, "netdev", ev.ifname);  // mlx5_0 / ibp12s0: names the NIC
  if (ev.type == KT::kAerReceived) {
    // The port's header line names the source device; remember who reported it.
    const std::string source = Bdf(ev.source);
    if (!source.empty()) {
      if (aer_port_of_.size() > 4096) aer_port_of_.clear();
      aer_port_of_[source] = o.component.name;
    }
    return;
  }
  if (ev.type == KT::kAerBusError) {
    o.kind = ObsKind::kPcieAer;
    o.value = 1;
    SetIf(o.attrs, "severity", ev.severity);
    SetIf(o.attrs, "type", ev.detail);
    if (auto it = aer_port_of_.find(o.component.name); it != aer_port_of_.end() && it->second != o.component.name) {
      o.attrs["reporting_port"] = it->second;
      o.component.keys["upstream_port"] = it->second;
    }
    pending_ = std::move(o);  // error-bit lines follow
    return;
  }
  o.kind = ObsKind::kNicEvent;
  switch (ev.type) {
    case KT::kMlx5SlotPower:
      o.attrs["event"] = "slot_power";
      SetIf(o.attrs, "power", ev.detail);
      break;
    case KT::kMlx5ModuleEvent:
      o.attrs["event"] = "module";
      SetIf(o.attrs, "detail", ev.detail);
      break;
    case KT::kMlx5LinkDown:
      o.attrs["event"] = "link_down";
      break;
    case KT::kMlx5Health:  // firmware command timeouts, health poller, syndromes (kernel_line.h)
      o.attrs["event"] = Str(ev.event);
      SetIf(o.attrs, "detail", ev.detail);
      break;
    default:
      o.attrs["event"] = "link_up";
      break;
  }
  out.push_back(std::move(o));
}

void KernelEventAssembler::EmitHostEvent(const KernelEvent& ev, Observation& o, std::vector<Observation>& out) {
  o.component = HostComponent();
  o.attrs["event"] = Str(ToString(ev.type));
  SetIf(o.attrs, "process", ev.process);
  SetIf(o.attrs, "pid", ev.pid);
  switch (ev.type) {
    case KT::kMce:
      o.kind = ObsKind::kHostMemoryError;
      o.attrs["severity"] = "MCE";
      break;
    case KT::kEdac:
      o.kind = ObsKind::kHostMemoryError;
      o.value = static_cast<double>(ev.code);
      SetIf(o.attrs, "severity", ev.severity);
      break;
    case KT::kSoftLockup:
    case KT::kHungTask:
      o.kind = ObsKind::kKernelHang;
      break;
    case KT::kSegfault:
    case KT::kTrap:
    case KT::kOomKill:
      o.kind = ObsKind::kAppFault;
      SetIf(o.attrs, "library", ev.detail);
      break;
    default:  // a kind with no host meaning: never guessed into a program's fault
      return;
  }
  out.push_back(std::move(o));
}

}  // namespace faultline
