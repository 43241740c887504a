// The state file of the fake NVML library (docs/nvml.md, "Fake NVML state file"): what
// each fake GPU answers, which calls fail with which NVML error, and when a GPU is lost.
// A field absent from the file makes the matching NVML call answer NOT_SUPPORTED, the
// way a real device without that feature does.
//
// ParseFakeNvmlState is a pure function (no I/O) so it can be unit-tested and fuzzed;
// unknown keys, wrong types and out-of-range values are errors (kCorrupt), never
// guesses.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::fake_nvml {

inline constexpr size_t kMaxGpus = 64;
inline constexpr size_t kMaxLinks = 18;            // NVML_NVLINK_MAX_LINKS
inline constexpr size_t kMaxStateBytes = 4 << 20;  // larger files are refused
inline constexpr size_t kMaxStringBytes = 256;

struct FakeLink {
  bool active = true;
  uint64_t crc_flit = 0;
  uint64_t crc_data = 0;
  uint64_t replay = 0;
  uint64_t recovery = 0;
};

struct FakeRemappedRows {
  uint32_t correctable = 0;
  uint32_t uncorrectable = 0;
  bool pending = false;
  bool failure = false;
};

// [error type: corrected, uncorrected][counter: volatile, aggregate]
using EccTotals = std::array<std::array<std::optional<uint64_t>, 2>, 2>;
// Same, per nvmlMemoryLocation_t value (0..7); a location absent = NOT_SUPPORTED.
using EccByLocation = std::array<std::array<std::map<int, uint64_t>, 2>, 2>;

struct FakeGpu {
  std::optional<std::string> name, uuid, serial, pci_bus_id;
  EccTotals ecc;
  EccByLocation ecc_locations;
  std::optional<uint32_t> retired_sbe, retired_dbe;
  std::optional<bool> retired_pending;
  std::optional<FakeRemappedRows> remapped_rows;
  std::optional<uint32_t> temp_gpu, temp_memory, temp_slowdown, temp_shutdown;
  std::optional<uint32_t> power_mw, power_limit_mw;
  std::optional<uint32_t> clock_sm, clock_mem;
  std::optional<uint64_t> clock_event_reasons;
  std::optional<uint32_t> pcie_replay, pcie_gen, pcie_max_gen, pcie_width, pcie_max_width;
  std::vector<FakeLink> nvlinks;      // link i at position i; links past the end: INVALID_ARGUMENT
  std::map<std::string, int> errors;  // NVML function name -> return code for this GPU
  // Lost GPU: every call on it answers `lost_code` once `lost_after_s` seconds have
  // passed since nvmlInit (0 = at once). Unset = never lost.
  std::optional<double> lost_after_s;
  int lost_code = 15;  // NVML_ERROR_GPU_IS_LOST
  // Events (nvmlDeviceGetSupportedEventTypes / nvmlEventSetWait_v2). `event_types` is the
  // supported mask; absent = single- and double-bit ECC and critical XIDs, which every
  // data-center GPU supports on Linux. A lost GPU delivers one critical XID 79 event to each
  // set it is registered on; `xid_events` are further critical XIDs, each delivered once
  // `at_s` seconds after nvmlInit.
  uint64_t event_types = 0x1 | 0x2 | 0x8;
  struct XidEvent {
    double at_s = 0;
    uint64_t xid = 0;
  };
  std::vector<XidEvent> xid_events;  // at most kMaxXidEvents
};

inline constexpr size_t kMaxXidEvents = 1000;

struct FakeNvmlState {
  std::vector<FakeGpu> gpus;
  std::map<std::string, int> errors;  // NVML function name -> return code, every GPU and global calls
};

// Parses the JSON state file text. kCorrupt with "<json path>: <reason>" on bad input.
Result<FakeNvmlState> ParseFakeNvmlState(std::string_view text);

// The NVML functions the fake exports (names accepted as keys of "errors").
bool IsFakeNvmlFunction(std::string_view name);

}  // namespace faultline::fake_nvml
