#include "sources/kmsg/kernel_events.h"

#include "core/inventory.h"

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

ComponentRef GpuByBdf(std::string_view printed) {
  std::string bdf = NormalizeBdf(printed);
  if (bdf.empty()) bdf = Str(printed);
  ComponentRef ref{ComponentType::kGpu, bdf, {}};
  ref.keys["bdf"] = bdf;
  return ref;
}

void SetIf(std::map<std::string, std::string>& attrs, const char* key, std::string_view v) {
  if (!v.empty()) attrs[key] = Str(v);
}

}  // namespace

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
  const std::string bdf = NormalizeBdf(ev.device);
  if ((ev.type == KT::kAerBit || ev.type == KT::kAerStatus) && pending_->kind == ObsKind::kPcieAer &&
      pending_->component.name == bdf) {
    if (ev.type == KT::kAerBit) {
      std::string& errors = pending_->attrs["errors"];
      if (!errors.empty()) errors += ',';
      errors += Str(ev.detail);
    }
    pending_->raw += '\n';
    pending_->raw += Str(raw.substr(0, options_.max_raw_bytes));
    return true;
  }
  if (ev.type == KT::kSxidDetail && pending_->kind == ObsKind::kSxid && pending_->code == ev.code &&
      pending_->component.keys["bdf"] == bdf) {
    std::string& data = pending_->attrs["data"];
    if (!data.empty()) data += "; ";
    data += Str(ev.detail);
    return true;
  }
  return false;
}

bool KernelEventAssembler::Feed(const LogLine& line, std::string_view raw, std::vector<Observation>& out) {
  if (line.format == LogFormat::kKmsgContinuation) return false;
  // Userspace programs in a syslog file may print anything; only kernel lines count.
  if (!line.tag.empty() && line.tag != "kernel") return false;
  KernelEvent ev = ClassifyKernelMessage(line.message);
  if (ev.type == KT::kNone) return false;
  if (MergeIntoPending(ev, raw)) return true;
  Flush(out);
  Emit(ev, line, raw, out);
  return true;
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
      EmitPcieEvent(ev, o, out);
      return;
    default:
      EmitHostEvent(ev, o, out);
      return;
  }
}

void KernelEventAssembler::EmitGpuEvent(const KernelEvent& ev, Observation& o, std::vector<Observation>& out) {
  switch (ev.type) {
    case KT::kXid:
      o.kind = ev.code == 154 ? ObsKind::kXidRecoveryAction : ObsKind::kXid;
      o.code = ev.code;
      o.component = ev.device.empty() ? HostComponent() : GpuByBdf(ev.device);
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
      fell_off_bdf_ = NormalizeBdf(ev.device);
      lines_since_header_ = 0;
      return;
    case KT::kFellOffBus: {
      std::string bdf = ev.device.empty() && lines_since_header_ <= 3 ? fell_off_bdf_ : NormalizeBdf(ev.device);
      o.kind = ObsKind::kGpuFellOffBus;
      o.code = 79;
      o.component = bdf.empty() ? HostComponent() : GpuByBdf(bdf);
      fell_off_bdf_.clear();
      out.push_back(std::move(o));
      return;
    }
    case KT::kGpuUuid:
      o.kind = ObsKind::kGpuIdentity;
      o.component = GpuByBdf(ev.device);
      o.attrs["uuid"] = o.text;
      last_uuid_bdf_ = o.component.name;
      out.push_back(std::move(o));
      return;
    case KT::kGpuSerial:
      if (last_uuid_bdf_.empty()) return;  // a serial we cannot place is not guessed onto a GPU
      o.kind = ObsKind::kGpuIdentity;
      o.component = GpuByBdf(last_uuid_bdf_);
      o.attrs["serial"] = o.text;
      last_uuid_bdf_.clear();
      out.push_back(std::move(o));
      return;
    case KT::kSxid: {
      const std::string bdf = NormalizeBdf(ev.device);
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
      o.component = ev.device.empty() ? HostComponent() : GpuByBdf(ev.device);
      o.attrs["event"] = Str(ToString(ev.type));
      out.push_back(std::move(o));
      return;
  }
}

void KernelEventAssembler::EmitPcieEvent(const KernelEvent& ev, Observation& o, std::vector<Observation>& out) {
  const std::string bdf = NormalizeBdf(ev.device);
  o.layer = Layer::kFabric;
  o.component = PcieComponent(bdf.empty() ? Str(ev.device) : bdf);
  SetIf(o.component.keys, "driver", ev.driver);
  if (ev.type == KT::kAerReceived) {
    // The port's header line names the source device; remember who reported it.
    const std::string source = NormalizeBdf(ev.source);
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
    default:  // segfault, trap, OOM kill
      o.kind = ObsKind::kAppFault;
      SetIf(o.attrs, "library", ev.detail);
      break;
  }
  out.push_back(std::move(o));
}

}  // namespace faultline
