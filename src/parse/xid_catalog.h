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

// XID 154 recovery actions ("GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)").
std::optional<Action> RecoveryActionFor(int value);

}  // namespace faultline
