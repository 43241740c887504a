// The state file of the fake AMD SMI library (docs/amd.md "Fake AMD SMI"): what each
// fake GPU answers, which calls fail with which AMD SMI status, and which GPUs no longer
// enumerate. A field absent from the file makes its call answer NOT_SUPPORTED, the way a
// real device without that feature does.
//
// ParseFakeAmdsmiState is pure (no I/O) so it can be unit-tested and fuzzed; unknown
// keys, wrong types and out-of-range values are errors (kCorrupt naming the JSON path).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::fake_amdsmi {

inline constexpr size_t kMaxGpus = 64;
inline constexpr size_t kMaxStateBytes = 4 << 20;
inline constexpr size_t kMaxStringBytes = 256;
inline constexpr uint64_t kMaxBadPages = 1 << 20;

struct FakeEcc {
  uint64_t ce = 0, ue = 0, de = 0;
};

struct FakeTemp {
  int64_t current = 0;
  std::optional<int64_t> critical, emergency;
};

struct FakeGpu {
  std::string bdf;  // "0000:0c:00.0"
  std::string uuid;
  std::map<std::string, FakeEcc> ecc;  // RAS block name -> counts (absent map = ECC not supported)
  bool has_ecc = false;
  std::optional<uint64_t> bad_reserved, bad_pending, bad_unreservable;  // all set or none
  std::map<std::string, FakeTemp> temps;                                // "hotspot", "memory", "edge"
  std::optional<uint32_t> power_w, power_limit_w;
  std::optional<std::map<std::string, bool>> violation;  // socket_thermal, hbm_thermal, vr_thermal, prochot, ppt
  std::optional<uint32_t> xgmi_status;
  std::optional<uint64_t> pcie_replay;
  std::map<std::string, uint32_t> errors;  // AMD SMI function -> status
  bool lost = false;                       // not enumerated any more
};

struct FakeState {
  std::map<std::string, uint32_t> errors;  // every GPU, plus amdsmi_init / amdsmi_get_socket_handles
  std::vector<FakeGpu> gpus;
};

// The AMD SMI functions the fake exports (names accepted in "errors").
bool IsFakeAmdsmiFunction(std::string_view name);

Result<FakeState> ParseFakeAmdsmiState(std::string_view text);

}  // namespace faultline::fake_amdsmi
