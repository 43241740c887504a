// The project's reading of each XID code seen alone. Facts behind each choice come from
// NVIDIA's catalog (resolution buckets in xid_catalog_data.inc) and SIGNALS.md; where we
// depart from the bucket, the comment says why. Context rules (13/31 across programs,
// 45 after another XID, 48 with 63/64, 79 after AER, 94 never RMA) are in the kernel
// detector.
#include <algorithm>

#include "parse/xid_catalog.h"

namespace faultline {
namespace {

using FC = FaultClass;
using A = Action;
using S = Severity;
using L = Layer;

struct CodeRule {
  int code;
  XidRule rule;
};

// Codes whose meaning is specific enough to name a fault class.
constexpr CodeRule kRules[] = {
    // Program faults: NVIDIA's RESTART_APP codes that point at the application.
    {8, {FC::kUserApplication, L::kOs, A::kRestartJob, S::kWarning, false}},
    {13, {FC::kUserApplication, L::kOs, A::kNotifyUser, S::kWarning, false}},
    {31, {FC::kUserApplication, L::kOs, A::kNotifyUser, S::kWarning, false}},
    {32, {FC::kUserApplication, L::kOs, A::kNotifyUser, S::kWarning, false}},
    {43, {FC::kUserApplication, L::kOs, A::kRestartJob, S::kWarning, false}},
    {69, {FC::kUserApplication, L::kOs, A::kNotifyUser, S::kWarning, false}},
    {80, {FC::kUserApplication, L::kOs, A::kNotifyUser, S::kWarning, false}},
    // 45 alone: preemptive cleanup without a preceding error; NVIDIA's solo guidance is
    // to restart the fabric manager, i.e. a software-stack problem, not the board.
    {45, {FC::kDriverFault, L::kOs, A::kRestartJob, S::kWarning, false}},
    // Driver / firmware.
    {37, {FC::kDriverFault, L::kOs, A::kMonitor, S::kInfo, false}},
    {38, {FC::kDriverFault, L::kOs, A::kMonitor, S::kWarning, false}},
    {44, {FC::kDriverFault, L::kOs, A::kMonitor, S::kWarning, false}},
    {46, {FC::kDriverFault, L::kOs, A::kResetGpu, S::kCritical, false}},
    {62, {FC::kGspFirmware, L::kGpu, A::kResetGpu, S::kCritical, true}},
    {66, {FC::kDriverFault, L::kOs, A::kMonitor, S::kWarning, false}},
    {67, {FC::kDriverFault, L::kOs, A::kMonitor, S::kWarning, false}},
    {78, {FC::kDriverFault, L::kOs, A::kDriverUpgrade, S::kWarning, false}},
    {109, {FC::kDriverFault, L::kOs, A::kResetGpu, S::kCritical, false}},
    {110, {FC::kDriverFault, L::kOs, A::kResetGpu, S::kCritical, false}},
    {119, {FC::kGspFirmware, L::kGpu, A::kResetGpu, S::kCritical, false}},
    {120, {FC::kGspFirmware, L::kGpu, A::kResetGpu, S::kCritical, false}},
    {143, {FC::kDriverFault, L::kOs, A::kResetGpu, S::kCritical, true}},
    {158, {FC::kDriverFault, L::kOs, A::kResetGpu, S::kCritical, false}},
    {169, {FC::kGspFirmware, L::kGpu, A::kResetGpu, S::kCritical, true}},
    // HBM / memory integrity.
    {48, {FC::kHbmUncorrectable, L::kGpu, A::kResetGpu, S::kCritical, true}},
    {63, {FC::kRowRemapPending, L::kGpu, A::kResetGpu, S::kWarning, true}},
    // 64 = remap failure (spare rows exhausted). From the log alone drain; the NVML
    // remap state confirms before an RMA (SIGNALS.md: the remap state decides).
    {64, {FC::kRowRemapExhausted, L::kGpu, A::kDrain, S::kCritical, true}},
    {92, {FC::kHbmSbeAging, L::kGpu, A::kMonitor, S::kWarning, true}},
    // 94 contained: only the faulting program is affected; never escalates to RMA.
    {94, {FC::kHbmUncorrectable, L::kGpu, A::kRestartJob, S::kWarning, true}},
    {95, {FC::kHbmUncorrectable, L::kGpu, A::kResetGpu, S::kCritical, true}},
    {140, {FC::kHbmUncorrectable, L::kGpu, A::kResetGpu, S::kCritical, true}},
    {156, {FC::kRowRemapPending, L::kGpu, A::kResetGpu, S::kWarning, true}},
    {157, {FC::kRowRemapExhausted, L::kGpu, A::kDrain, S::kCritical, true}},
    {168, {FC::kHbmUncorrectable, L::kGpu, A::kResetGpu, S::kCritical, true}},
    {171, {FC::kHbmUncorrectable, L::kGpu, A::kResetGpu, S::kCritical, true}},
    {172, {FC::kGpuSram, L::kGpu, A::kResetGpu, S::kCritical, true}},
    // Bus / power.
    {54, {FC::kPowerInsufficient, L::kOob, A::kReseatOrReplaceLink, S::kCritical, true}},
    {79, {FC::kGpuFellOffBus, L::kOs, A::kDrain, S::kFatal, true}},
    {167, {FC::kPcieLinkDegraded, L::kFabric, A::kDrain, S::kCritical, true}},
    // NVLink.
    {74, {FC::kNvlinkErrors, L::kFabric, A::kResetGpu, S::kCritical, true}},
    {121, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true}},
    {136, {FC::kNvlinkErrors, L::kFabric, A::kResetGpu, S::kCritical, true}},
    {137, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, false}},
    {144, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true}},
    {145, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true}},
    {146, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true}},
    {147, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true}},
    {148, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true}},
    {149, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true}},
    {150, {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true}},
    {155, {FC::kNvlinkErrors, L::kFabric, A::kResetGpu, S::kCritical, false}},
    // Power smoothing circuitry wear: worth watching, not an outage.
    {164, {FC::kGpuPowerBrake, L::kGpu, A::kMonitor, S::kWarning, true}},
    {165, {FC::kGpuPowerBrake, L::kGpu, A::kMonitor, S::kWarning, true}},
};

// Fallback from NVIDIA's immediate-action bucket for codes not listed above.
XidRule FromBucket(std::string_view bucket) {
  if (bucket == "RESTART_APP") return {FC::kUserApplication, L::kOs, A::kRestartJob, S::kWarning, false};
  if (bucket == "RESET_GPU") return {FC::kDriverFault, L::kOs, A::kResetGpu, S::kCritical, false};
  if (bucket == "RESTART_BM") return {FC::kDriverFault, L::kOs, A::kRebootNode, S::kCritical, false};
  if (bucket == "UPDATE_SWFW") return {FC::kDriverFault, L::kOs, A::kDriverUpgrade, S::kWarning, false};
  if (bucket == "RESTART_VM") return {FC::kDriverFault, L::kOs, A::kRestartJob, S::kWarning, false};
  if (bucket == "IGNORE") return {FC::kNone, L::kOs, A::kNone, S::kInfo, false};
  return {FC::kDriverFault, L::kOs, A::kMonitor, S::kWarning, false};  // CONTACT_SUPPORT, unknown, empty
}

// An SXid's reading by NVIDIA's recovery for it (sxid_catalog_data.inc). A port whose
// traffic a fatal SXid stopped: the job on it died; reset the GPUs on it (restart the guest
// VM on virtualized systems), or reboot the node where every GPU and NVSwitch must be reset
// (on an HGX baseboard the switches are reset with the node). The policy drains before
// either; a repeat names the switch (the fabric detector).
XidRule FromSxidRecovery(SxidRecovery r) {
  switch (r) {
    case SxidRecovery::kNone:
      return {FC::kNone, L::kFabric, A::kNone, S::kInfo, false};
    case SxidRecovery::kWatch:
      return {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true};
    case SxidRecovery::kCheckLink:
      return {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true};
    case SxidRecovery::kCheckCooling:
      return {FC::kCoolingDegraded, L::kFabric, A::kMonitor, S::kWarning, false};
    case SxidRecovery::kRestartGuestVm:
      return {FC::kNvswitchFault, L::kFabric, A::kResetGpu, S::kCritical, true};
    case SxidRecovery::kResetGpuAndSwitch:
      return {FC::kNvswitchFault, L::kFabric, A::kRebootNode, S::kCritical, true};
    case SxidRecovery::kRestartHost:
      return {FC::kNvswitchFault, L::kFabric, A::kRebootNode, S::kFatal, true};
  }
  return {FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true};
}

}  // namespace

XidRule RuleForSxid(int code, std::string_view printed_severity) {
  const bool printed_fatal = printed_severity == "Fatal";
  const SxidInfo* info = FindSxid(code);
  if (info == nullptr) {
    return printed_fatal ? XidRule{FC::kNvswitchFault, L::kFabric, A::kResetGpu, S::kCritical, true}
                         : XidRule{FC::kNvlinkErrors, L::kFabric, A::kMonitor, S::kWarning, true};
  }
  XidRule rule = FromSxidRecovery(info->recovery);
  // Fatal to the port's traffic (the catalog's class, or the driver says so on this line):
  // at least the GPUs on the port are reset. Not "drain" alone: that would take the node out
  // and never bring it back (the policy drains before a reset or reboot anyway).
  if (info->severity != SxidSeverity::kNonFatal || printed_fatal) {
    rule.fault_class = rule.fault_class == FC::kCoolingDegraded ? rule.fault_class : FC::kNvswitchFault;
    if (rule.action < A::kResetGpu) rule.action = A::kResetGpu;
    rule.severity = std::max(rule.severity, S::kCritical);
  }
  return rule;
}

XidRule RuleForXid(int code) {
  for (const CodeRule& r : kRules) {
    if (r.code == code) return r.rule;
  }
  if (const XidInfo* info = FindXid(code)) return FromBucket(info->immediate);
  return FromBucket("");
}

}  // namespace faultline
