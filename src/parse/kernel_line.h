// Classifier for one kernel message (the text after any timestamp/host prefix):
// NVIDIA XID and SXid lines, "fallen off the bus", PCIe AER, MCE/EDAC, mlx5 events,
// soft lockups / hung tasks, user-program faults, driver mismatch and RmInitAdapter
// failures. Facts about the formats are in SIGNALS.md.
//
// Pure and allocation-free: the returned event holds string_views into `msg`, so it is
// valid only as long as the caller's buffer; the exceptions are a derived `severity`
// ("UE"/"CE" from an MCE bank status, "Uncorrected (Fatal)" for an AER/DPC verdict) and
// `event`, which are static constants. Unknown lines return type kNone; nothing here
// throws or fails on any input.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace faultline {

enum class KernelEventType : uint8_t {
  kNone,
  kXid,               // NVRM: Xid (PCI:bdf): code, [pid=..., name=...,] message
  kSxid,              // nvidia-nvswitchN: SXid (PCI:bdf): code, [Fatal|Non-fatal, Link n] message
  kSxidDetail,        // the same SXid's "Severity ..." / "Data {...}" continuation lines
  kFellOffBus,        // single-line "GPU has fallen off the bus" (with BDF), or the multi-line tail
  kFellOffBusHeader,  // "NVRM: The NVIDIA GPU <bdf>" (first line of the multi-line form)
  kGpuUuid,           // "NVRM: GPU at PCI:<bdf>: GPU-<uuid>"
  kGpuSerial,         // "NVRM: GPU Board Serial Number: <serial>"
  kAerReceived,       // "<port>: AER: [Multiple] Corrected error received: <source bdf>"
  kAerBusError,       // "<dev>: [AER: ]PCIe Bus Error: severity=..., type=..., (...)"; also the AER/DPC
                      // core's verdicts "AER: device recovery failed", "AER: can't recover (...)",
                      // "DPC: containment event", and pciehp's "Slot(N): Link Down" / "Card not present":
                      // severity "Uncorrected (Fatal)", detail = the verdict
  kAerStatus,         // "<dev>:   device [vvvv:dddd] error status/mask=...", or the firmware-first
                      // form "<dev>: AER: aer_status: 0x..., aer_mask: 0x..."
  kAerBit,            // "<dev>:    [ 0] RxErr   (First)"
  kMce,               // "mce: [Hardware Error]: ..." (severity from the bank status: CE/UE, else "")
  kEdac,              // "EDAC MC0: 1 CE memory read error on ..." (CE or UE); detail = DIMM location;
                      // "EDAC skx MC2: HANDLING MCE MEMORY ERROR" (severity "", code 0)
  kMlx5SlotPower,     // "Detected insufficient power on the PCIe slot (27W)"
  kMlx5ModuleEvent,   // "Port module event[error]: module 0, Cable error, High Temperature"
  kMlx5LinkDown,
  kMlx5LinkUp,
  kMlx5Health,      // firmware command timeouts, health poller, syndromes, TX timeouts: `event` names which
  kSoftLockup,      // "watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [proc:pid]"
  kHungTask,        // "INFO: task proc:pid blocked for more than 120 seconds."
  kSegfault,        // "proc[pid]: segfault at ... in libnccl.so.2[...]"
  kTrap,            // "traps: proc[pid] general protection fault ... in libcuda.so.1[...]"
  kOomKill,         // "Out of memory: Killed process pid (proc) ..."
  kDriverMismatch,  // "NVRM: API mismatch: the client has the version ..."
  kRmInitFailed,    // "NVRM: [GPU bdf: ]RmInitAdapter failed! (0x22:0x56:742)"
  kGhes,            // "{3}[Hardware Error]: <field>": one line of a firmware-first (APEI GHES / CPER)
                    // record; code = the record number, detail = the field text ("event severity:
                    // corrected", "section_type: PCIe error", "device_id: 0000:3b:00.0", ...)
  kAmdgpu,          // "amdgpu <bdf>: ..." RAS, reset, ring timeout, bad-page lines (parse/amdgpu_line.h):
                    // `event` names the family, detail = RAS block or ring, code = the printed count
};

struct KernelEvent {
  KernelEventType type = KernelEventType::kNone;
  std::string_view driver;  // printing driver/device prefix: "pcieport", "nvidia", "mlx5_core", "nvidia-nvswitch3"
  std::string_view device;  // BDF as printed (not normalized), when the line names one
  std::string_view ifname;  // "<driver> <bdf> <ifname>: ..." (mlx5_0, ibp12s0, ens1f0), when printed
  int64_t code = -1;        // XID/SXid code, AER bit index, EDAC error count
  std::string_view pid;     // as printed ("1234", "'<unknown>'" stripped to "<unknown>")
  std::string_view process;
  std::string_view message;   // the human-readable remainder
  std::string_view severity;  // "Fatal"/"Non-fatal" (SXid, 144-150), "Corrected"/"Uncorrected (Fatal)" (AER), "CE"/"UE"
  std::string_view detail;    // AER error type / bit name, SXid data, mlx5 module text, library name
  std::string_view source;    // AER: the BDF the error came from (kAerReceived)
  std::string_view event;     // kMlx5Health: fw_cmd_timeout, fw_cmd_late, health_compromised, fatal_error,
                              // hw_error, syndrome, error_state, fw_state, tx_timeout, temperature,
                              // slot_power_ok, slot_power_unknown (a constant, not a view into msg)
  int link = -2;              // NVLink/NVSwitch link number; -1 is printed by the driver for "no link"
  int gpc = -1, tpc = -1;     // XID 13 location
  std::string_view unit;      // XID 144-150 unit mnemonic
  uint32_t intr_info = 0;     // XID 144-150
  uint32_t error_status = 0;  // XID 144-150
  bool has_intr = false;
  int recovery_from = -1;  // XID 154 values
  int recovery_to = -1;
};

// The values a classifier sets where the line's own words do not fit; every other view of a
// KernelEvent points into the message. The fuzz target checks every view is one or the
// other, by value: a constexpr view's address is its translation unit's copy of the literal.
namespace kernel_derived {
inline constexpr std::string_view kMcaUncorrected = "UE";             // McaSeverity
inline constexpr std::string_view kMcaCorrected = "CE";               // McaSeverity
inline constexpr std::string_view kAerFatal = "Uncorrected (Fatal)";  // AER/DPC/pciehp verdicts
inline constexpr std::string_view kAmdgpuDriver = "amdgpu";           // "[drm:... [amdgpu]]" lines
inline constexpr std::string_view kUmcBlock = "umc";                  // CPU-attached UMC errors
inline constexpr std::string_view kRunningTotal = "total";            // amdgpu "... in total ..."
inline constexpr std::string_view kResetStarted = "started";          // amdgpu ring reset progress
inline constexpr std::string_view kResetSucceeded = "succeeded";
inline constexpr std::string_view kResetFailed = "failed";
inline constexpr std::array<std::string_view, 9> kAll = {kMcaUncorrected, kMcaCorrected,   kAerFatal,
                                                         kAmdgpuDriver,   kUmcBlock,       kRunningTotal,
                                                         kResetStarted,   kResetSucceeded, kResetFailed};
}  // namespace kernel_derived

KernelEvent ClassifyKernelMessage(std::string_view msg);

// Machine-check severity from an "mce: [Hardware Error]:" message (the text after the
// prefix, or the whole line): "UE" when the bank status has the UC bit (61) set or the
// line reports a Machine Check Exception / fatal machine check, "CE" for a bank status
// without UC, "" when the line does not say (e.g. "Machine check events logged").
std::string_view McaSeverity(std::string_view msg);

// The memory location an EDAC / GHES line names, as printed: "CPU_SrcID#0_MC#0_Chan#1_DIMM#0",
// "mc#0csrow#3channel#1", "DIMM_A1", "channel:1 slot:0", a "DIMM location: X" value; "" when
// the line names none. A view into `msg`.
// The AER severity an error-bit name belongs to, for a bit line printed without its
// "PCIe Bus Error: severity=..." header (firmware-first logs, a cut paste): "Corrected"
// for the correctable-status names (RxErr, BadTLP, BadDLLP, Rollover, Timeout,
// NonFatalErr, CorrIntErr, HeaderOF), "Uncorrected (Non-Fatal)" for the uncorrectable
// ones, "" for a name that is neither (never guessed).
std::string_view AerBitSeverity(std::string_view name);

std::string_view MemoryErrorLocation(std::string_view msg);

std::string_view ToString(KernelEventType t);

}  // namespace faultline
