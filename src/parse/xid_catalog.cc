#include "parse/xid_catalog.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace faultline {
namespace {

#include "parse/sxid_catalog_data.inc"
#include "parse/xid_catalog_data.inc"

#define X(code, mnemonic, description, families, immediate, investigatory) \
  XidInfo{code, mnemonic, description, families, immediate, investigatory},
constexpr XidInfo kXids[] = {FAULTLINE_XID_ROWS};
#undef X

#define S(code, name, severity, recovery) SxidInfo{code, name, SxidSeverity::k##severity, SxidRecovery::k##recovery},
constexpr SxidInfo kSxids[] = {FAULTLINE_SXID_ROWS};
#undef S

struct DecodeRow {
  int xid;
  std::string_view unit;
  std::string_view pattern_v1;  // intrInfo bits, MSB first, '-' = don't care
  std::string_view pattern_v2;
  std::string_view error_status;  // exact value(s), '/'-separated; "" = any
  std::string_view bucket;
  std::string_view action2_v1;  // promotable rows: intrInfo patterns that call for action2
  std::string_view action2_v2;
  std::string_view action2;
  std::string_view severity;
  std::string_view hw_sw;
};
#define D(xid, unit, v1, v2, status, bucket, a2v1, a2v2, a2, severity, hwsw) \
  DecodeRow{xid, unit, v1, v2, status, bucket, a2v1, a2v2, a2, severity, hwsw},
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

bool EitherPattern(std::string_view v1, std::string_view v2, uint32_t intr_info) {
  return PatternMatches(v2, intr_info) || PatternMatches(v1, intr_info);
}

// "0x00000004" -> 4; nullopt for anything that is not one hex number.
std::optional<uint32_t> ParseHexValue(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 8) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= static_cast<uint32_t>(c - 'A' + 10);
    else
      return std::nullopt;
  }
  return v;
}

// NVIDIA's table lists errorStatus values, not bits: 0x3 is the value 3 (not "bit 0 or
// bit 1"), and 0x0 is a value that must match too. "0x00000000/0xFFFFFFFF" is either.
bool StatusMatches(std::string_view row_status, uint32_t status) {
  if (row_status.empty()) return true;
  while (!row_status.empty()) {
    const size_t slash = row_status.find('/');
    if (auto want = ParseHexValue(row_status.substr(0, slash)); want && *want == status) return true;
    if (slash == std::string_view::npos) break;
    row_status.remove_prefix(slash + 1);
  }
  return false;
}

int BucketRank(std::string_view bucket) { return bucket == "RESET_GPU" ? 2 : bucket == "XID_154_EVAL" ? 1 : 0; }

}  // namespace

std::span<const XidInfo> AllXids() { return kXids; }

const XidInfo* FindXid(int code) {
  for (const XidInfo& x : kXids) {
    if (x.code == code) return &x;
  }
  return nullptr;
}

NvlinkXidDecode DecodeNvlinkXid(int xid, uint32_t intr_info, uint32_t error_status) {
  // Newer drivers (>= R575) use the v2 layout; try it, then v1. A promotable row whose
  // action-2 pattern matches takes its action-2 bucket. The most disruptive matching row
  // wins, so an ambiguous decode never understates a fault.
  NvlinkXidDecode best;
  for (const DecodeRow& r : kDecode) {
    if (r.xid != xid || !StatusMatches(r.error_status, error_status)) continue;
    std::string_view bucket;
    if (!r.action2.empty() && EitherPattern(r.action2_v1, r.action2_v2, intr_info)) {
      bucket = r.action2;
    } else if (EitherPattern(r.pattern_v1, r.pattern_v2, intr_info)) {
      bucket = r.bucket;
    } else {
      continue;
    }
    if (!best.matched || BucketRank(bucket) > BucketRank(best.bucket)) best = {true, r.unit, bucket, r.severity};
  }
  return best;
}

std::span<const SxidInfo> AllSxids() { return kSxids; }

const SxidInfo* FindSxid(int code) {
  auto it =
      std::lower_bound(std::begin(kSxids), std::end(kSxids), code, [](const SxidInfo& s, int c) { return s.code < c; });
  return it != std::end(kSxids) && it->code == code ? &*it : nullptr;
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
