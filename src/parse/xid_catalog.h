// The XID catalog: NVIDIA's facts about each XID code (generated from the catalog CSV,
// see xid_catalog_data.inc) and, separately, the project's interpretation of each code
// (layer, default fault class, action, severity) in xid_rules.cc. Rules that depend on
// context (13/31 across programs, 45 after another XID, 48 with 63/64, 79 after AER)
// live in the kernel detector, not here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/types.h"

namespace faultline {

enum XidFamily : uint8_t { kA100 = 1, kH100 = 2, kB100 = 4, kGB200 = 8 };

struct XidInfo {
  int code;
  std::string_view mnemonic;
  std::string_view description;
  uint8_t families;                // XidFamily bits the code applies to
  std::string_view immediate;      // NVIDIA resolution bucket (immediate action)
  std::string_view investigatory;  // NVIDIA resolution bucket (investigatory action)
};

// The project's default reading of a code seen alone.
struct XidRule {
  FaultClass fault_class;
  Layer layer;
  Action action;
  Severity severity;
  bool hardware;  // evidence against the GPU/board itself rather than software
};

std::span<const XidInfo> AllXids();
const XidInfo* FindXid(int code);
// Always returns a rule; unknown codes get a conservative driver_fault/monitor reading.
XidRule RuleForXid(int code);

// NVLink5 XIDs 144-150: decode of unit + intrInfo + errorStatus against NVIDIA's table.
struct NvlinkXidDecode {
  bool matched = false;
  std::string_view unit;      // e.g. "NETIR_LINK_EVT/NETIR_LINK_DOWN"
  std::string_view bucket;    // IGNORE, RESET_GPU, XID_154_EVAL
  std::string_view severity;  // Non-fatal, Fatal, Link Fatal
};
NvlinkXidDecode DecodeNvlinkXid(int xid, uint32_t intr_info, uint32_t error_status);
// Number of rows in the 144-150 decode table (for tests against the CSV).
size_t NvlinkDecodeRowCount();

// NVSwitch SXids: NVIDIA's facts per code (sxid_catalog_data.inc names its source).
enum class SxidSeverity : uint8_t { kNonFatal, kFatal, kAlwaysFatal };
enum class SxidRecovery : uint8_t {
  kNone,               // corrected by hardware / safe to ignore
  kWatch,              // may cost NVLink throughput, or may precede a fatal SXid
  kCheckLink,          // broken/inconsistent connection unless an uncoordinated shutdown
  kCheckCooling,       // NVSwitch thermal event
  kRestartGuestVm,     // the partition using the port (bare metal: reset the GPUs on it)
  kResetGpuAndSwitch,  // reset every GPU and NVSwitch
  kRestartHost,        // the whole fabric
};
struct SxidInfo {
  int code;
  std::string_view name;
  SxidSeverity severity;
  SxidRecovery recovery;
};
std::span<const SxidInfo> AllSxids();
const SxidInfo* FindSxid(int code);
// The project's reading of one SXid; `printed_severity` is what the line said ("Fatal",
// "Non-fatal", or empty). The more severe of the catalog and the printed severity wins;
// a code the catalog does not know is read from the printed severity alone. Codes NVIDIA
// calls safe to ignore get fault class kNone.
XidRule RuleForSxid(int code, std::string_view printed_severity);

// XID 154 recovery actions ("GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)").
std::optional<Action> RecoveryActionFor(int value);

}  // namespace faultline
