// Pure parsers for the amdgpu RAS sysfs files (SIGNALS-ethernet-amd.md B1/B2), no I/O:
//  - ras/<block>_err_count: "ue: <n>\nce: <n>\n" (newer kernels may add "de: <n>",
//    deferred/poison errors), or "Query currently inaccessible" during RAS recovery;
//  - ras/gpu_vram_bad_pages: one "0x%08x : 0x%08x : R|P|F" line per retired page;
//  - ras/features: "feature mask: 0x<hex>";
//  - a single decimal or signed integer (pcie_replay_count, hwmon, module parameters).
// Every parser bounds what it accepts (at most kMaxRasFileBytes, kMaxBadPageLines) and
// answers kCorrupt (or kUnavailable for the "inaccessible" answer) with a message naming
// what was wrong; nothing here throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace faultline::amdsmi {

inline constexpr size_t kMaxRasFileBytes = 4096;       // err_count / features / integers
inline constexpr size_t kMaxBadPagesBytes = 4u << 20;  // one 26-byte line per page
inline constexpr uint64_t kMaxBadPageLines = 100000;   // far above any EEPROM table

struct RasErrCount {
  uint64_t ue = 0;
  uint64_t ce = 0;
  uint64_t de = 0;  // deferred (poison); 0 when the kernel does not print it
  bool has_de = false;
};

// kUnavailable for "Query currently inaccessible" (retry next sample); kCorrupt for a
// missing ue/ce line, a non-numeric or overflowing count, an unknown key or a repeated one.
Result<RasErrCount> ParseRasErrCount(std::string_view text);

struct BadPages {
  uint64_t reserved = 0;      // R: retired, unusable
  uint64_t pending = 0;       // P: marked bad, reserved at the next reserve window
  uint64_t unreservable = 0;  // F: could not be reserved
  uint64_t total() const { return reserved + pending + unreservable; }
};

// Empty text is zero pages. kCorrupt names the first bad line (1-based).
Result<BadPages> ParseBadPages(std::string_view text);

// "feature mask: 0x1f" -> 0x1f.
Result<uint64_t> ParseRasFeatures(std::string_view text);

// One integer with optional surrounding whitespace ("-1\n", "1966\n").
Result<int64_t> ParseSysfsInt(std::string_view text);

// The RAS block names of ras/<block>_err_count in bit order (B1), for the reader and tests.
bool IsKnownRasBlock(std::string_view block);

}  // namespace faultline::amdsmi
