#include "parse/xid_catalog.h"

#include <array>

namespace faultline {
namespace {

#include "parse/xid_catalog_data.inc"

#define X(code, mnemonic, description, families, immediate, investigatory) \
  XidInfo{code, mnemonic, description, families, immediate, investigatory},
constexpr XidInfo kXids[] = {FAULTLINE_XID_ROWS};
#undef X

struct DecodeRow {
  int xid;
  std::string_view unit;
  std::string_view pattern_v1;  // intrInfo bits, MSB first, '-' = don't care
  std::string_view pattern_v2;
  std::string_view error_status;  // "" = any
  std::string_view bucket;
  std::string_view severity;
  std::string_view hw_sw;
};
#define D(xid, unit, v1, v2, status, bucket, severity, hwsw) \
  DecodeRow{xid, unit, v1, v2, status, bucket, severity, hwsw},
constexpr DecodeRow kDecode[] = {FAULTLINE_XID_DECODE_ROWS};
#undef D

bool PatternMatches(std::string_view pattern, uint32_t value) {
  if (pattern.size() != 32) return false;
  for (size_t i = 0; i < 32; ++i) {
    const bool bit = (value >> (31 - i)) & 1u;
    const char want = pattern[i];
    if (want == '-') continue;
    if ((want == '1') != bit) return false;
  }
  return true;
}

bool StatusMatches(std::string_view row_status, uint32_t status) {
  if (row_status.empty()) return true;
  uint32_t want = 0;
  for (char c : row_status.substr(2)) {
    want <<= 4;
    if (c >= '0' && c <= '9')
      want |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      want |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      want |= static_cast<uint32_t>(c - 'A' + 10);
  }
  return (status & want) != 0;
}

}  // namespace

std::span<const XidInfo> AllXids() { return kXids; }

const XidInfo* FindXid(int code) {
  for (const XidInfo& x : kXids) {
    if (x.code == code) return &x;
  }
  return nullptr;
}

NvlinkXidDecode DecodeNvlinkXid(int xid, uint32_t intr_info, uint32_t error_status) {
  // Newer drivers (>= R575) use the v2 layout; try it first, then v1. The most
  // disruptive matching row wins, so an ambiguous decode never understates a fault.
  NvlinkXidDecode best;
  auto rank = [](std::string_view bucket) { return bucket == "RESET_GPU" ? 2 : bucket == "XID_154_EVAL" ? 1 : 0; };
  for (const DecodeRow& r : kDecode) {
    if (r.xid != xid || !StatusMatches(r.error_status, error_status)) continue;
    if (!PatternMatches(r.pattern_v2, intr_info) && !PatternMatches(r.pattern_v1, intr_info)) continue;
    if (!best.matched || rank(r.bucket) > rank(best.bucket)) best = {true, r.unit, r.bucket, r.severity};
  }
  return best;
}

size_t NvlinkDecodeRowCount() { return std::size(kDecode); }

std::optional<Action> RecoveryActionFor(int value) {
  switch (value) {
    case 0:
      return Action::kNone;  // None
    case 1:
      return Action::kResetGpu;  // GPU Reset Required
    case 2:
      return Action::kRebootNode;  // Node Reboot Required
    case 3:
      return Action::kDrain;  // Drain P2P
    case 4:
      return Action::kDrain;  // Drain P2P and Reset GPU
    case 5:
      return Action::kResetGpu;  // Recover IMEX domain
    case 6:
      return Action::kResetGpu;  // Bus reset
    case 7:
      return Action::kRebootNode;  // System reboot
    default:
      return std::nullopt;
  }
}

}  // namespace faultline
