// AmdCollector: samples every AMD Instinct GPU and turns the answers into Observations
// in the GPU-layer conventions the NVIDIA path uses (docs/amd.md "Observations"), so the
// existing GPU, NVLink-class and PCIe detectors judge AMD GPUs unchanged.
//
// Two ways in, one mapping:
//  - AMD SMI (libamd_smi.so, dlopen'ed like NVML; path from AmdOptions::library_path,
//    $FAULTLINE_AMDSMI_LIB, else "libamd_smi.so"): per-block ECC counts, bad pages,
//    temperatures, power, violation (throttle) status, XGMI error state, PCIe replays;
//  - the amdgpu sysfs files under AmdOptions::sysfs_root (ras/*_err_count,
//    ras/gpu_vram_bad_pages, pcie_replay_count, hwmon), used when the library is absent
//    or cannot initialise: with no AMD SMI the sysfs files alone still give findings.
// Both fill an AmdGpuReading; EmitAmdReading maps it to observations.
//
// Errors: a library that cannot be loaded is a note (sample.via = "sysfs"), never a
// failure. Per call: NOT_SUPPORTED skips the field silently; any other code is an
// AmdError in the sample (one per GPU, call and code), the GPU's other fields are still
// read. A GPU seen in an earlier sample and missing now is reported lost (kGpuLost,
// error GPU_IS_LOST), as NVML reports a GPU that fell off the bus.
//
// GPU indices are stable for the collector's life: the first sample numbers GPUs in PCI
// address order (the order of card<N> and of amd-smi on usual systems), later ones keep
// each address's index. One thread at a time; no global state.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/types.h"
#include "sources/amdsmi/amdgpu_sysfs_parse.h"
#include "sources/amdsmi/amdsmi_api.h"
#include "sources/sysfs/fs.h"

namespace faultline::amdsmi {

struct AmdOptions {
  std::string library_path;      // "" = $FAULTLINE_AMDSMI_LIB, else libamd_smi.so
  bool use_library = true;       // false: sysfs only
  std::string sysfs_root = "/";  // the amdgpu sysfs files are read under this root
  std::string node;              // stamped on every observation
  const Clock* clock = nullptr;  // sample times; nullptr = the system clock
};

struct AmdError {
  int gpu = -1;      // GPU index; -1 when not tied to one GPU
  std::string call;  // "amdsmi_get_gpu_ecc_count", "ras/umc_err_count"
  std::string message;
};

// What one GPU reported this sample, in the units the observations carry.
struct AmdGpuReading {
  Source source = Source::kAmdSmi;
  std::string bdf;  // normalized "0000:0c:00.0"
  std::string uuid;
  std::string card;  // "card1" (sysfs path only)
  std::optional<RasErrCount> total;
  std::map<std::string, RasErrCount> blocks;  // by RAS block name: "umc", "gfx", "xgmi_wafl", ...
  std::optional<BadPages> bad_pages;
  std::optional<int64_t> bad_page_threshold;  // pages; the device's retirement limit when known
  struct Temp {
    double c = 0;
    std::optional<double> critical, emergency;
  };
  std::map<std::string, Temp> temps;  // "hotspot", "memory", "edge"
  std::optional<double> power_w, power_limit_w;
  std::optional<uint64_t> throttle_mask;  // mapped to NVML clock-event-reason bits
  std::string throttle_detail;            // the AMD flags behind it ("socket_thermal,ppt")
  std::optional<uint32_t> xgmi_status;    // 0 none, 1 error, 2 multiple
  std::optional<uint64_t> pcie_replay;
  bool lost = false;
  std::string lost_call;
};

struct AmdSample {
  int64_t time_ns = 0;
  int gpu_count = 0;
  std::string via;  // "amdsmi" or "sysfs"
  std::vector<Observation> observations;
  std::vector<AmdError> errors;
  std::vector<std::string> notes;
};

// Appends the observations of `r` (GPU `index`) to `out` (docs/amd.md "Observations").
void EmitAmdReading(const AmdGpuReading& r, int index, const std::string& node, int64_t time_ns,
                    std::vector<Observation>& out);

// NVML clock-event-reason bits for AMD violation flags (docs/amd.md "Throttling").
uint64_t ThrottleMaskFor(bool socket_thermal, bool hbm_thermal, bool vr_thermal, bool prochot, bool ppt);

// Card entries (/sys/class/drm/card<N>) read at most, per sample. A node has a few GPUs
// (an MI300X node in CPX mode shows 8 x 8 partitions); more entries are not a real tree.
inline constexpr size_t kMaxAmdCards = 256;

// Reads every amdgpu card under `fs` (sysfs layout), the first kMaxAmdCards card entries in
// name order (one error in `errors` says when there were more). Errors per file go to
// `errors`; notes (a busy RAS query) to `notes`. Cards whose PCI vendor is not AMD (0x1002)
// are skipped.
std::vector<AmdGpuReading> ReadAmdgpuSysfs(const SysfsFs& fs, std::vector<AmdError>& errors,
                                           std::vector<std::string>& notes);

// The driver's bad-page threshold per GPU bus address (only the module parameter, the
// identity and mem_info_vram_total are read; no RAS counter).
std::map<std::string, int64_t> ReadAmdgpuBadPageThresholds(const SysfsFs& fs);

// Reads every GPU through the AMD SMI table. `errors` gets failed calls (gpu = position
// in enumeration order until the index is known).
std::vector<AmdGpuReading> ReadAmdsmi(const AmdsmiApi& api, std::vector<AmdError>& errors);

class AmdCollector {
 public:
  // Never fails: without a usable library the collector reads sysfs, and the first
  // sample's notes say why the library was not used.
  static std::unique_ptr<AmdCollector> Open(AmdOptions options);
  // An injected table (tests); `api` must outlive the collector; nullptr = sysfs only.
  AmdCollector(const AmdsmiApi* api, AmdOptions options, std::vector<std::string> notes = {});
  ~AmdCollector();

  AmdSample Sample();
  // Why the library is not used ("" when it is).
  const std::string& library_status() const { return library_status_; }

 private:
  int IndexOf(const std::string& bdf);

  std::unique_ptr<AmdsmiLibrary> library_;
  const AmdsmiApi* api_ = nullptr;
  AmdOptions options_;
  std::unique_ptr<Clock> own_clock_;
  RootFs fs_;
  std::string library_status_;
  std::vector<std::string> pending_notes_;
  std::map<std::string, int> index_of_;  // bdf -> stable index
  std::map<std::string, bool> present_;  // bdf -> seen in some sample
};

}  // namespace faultline::amdsmi
