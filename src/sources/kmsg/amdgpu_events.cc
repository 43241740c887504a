#include "sources/kmsg/amdgpu_events.h"

#include "parse/amdgpu_line.h"

namespace faultline {

bool AmdgpuObservation(const KernelEvent& ev, const std::string& bdf, Observation& o) {
  if (ev.event.empty()) return false;
  if (!bdf.empty()) {
    o.component = ComponentRef{ComponentType::kGpu, bdf, {{"bdf", bdf}}};
  } else {
    o.component = HostComponent();
  }
  o.component.keys["driver"] = "amdgpu";
  o.text = std::string(ev.message.substr(0, 512));
  if (ev.event == amdgpu_event::kDeviceLost) {
    o.kind = ObsKind::kGpuFellOffBus;
    o.attrs["event"] = std::string(ev.event);
    return true;
  }
  o.kind = ObsKind::kAmdgpuEvent;
  o.attrs["event"] = std::string(ev.event);
  const std::string detail(ev.detail.substr(0, 64));
  if (ev.code >= 0) o.value = static_cast<double>(ev.code);
  if (ev.event == amdgpu_event::kRingTimeout || ev.event == amdgpu_event::kRingReset) {
    if (!detail.empty()) o.attrs["ring"] = detail;
  } else if (ev.event == amdgpu_event::kResetMode) {
    if (!detail.empty()) o.attrs["mode"] = detail;
  } else if (ev.event == amdgpu_event::kBadPageThreshold) {
    if (!detail.empty()) o.attrs["threshold"] = detail;
  } else if (!detail.empty()) {
    o.attrs["block"] = detail;
  }
  if (!ev.severity.empty()) o.attrs["status"] = std::string(ev.severity);
  if (!ev.process.empty()) o.attrs["process"] = std::string(ev.process.substr(0, 64));
  if (!ev.pid.empty()) o.attrs["pid"] = std::string(ev.pid);
  return true;
}

}  // namespace faultline
