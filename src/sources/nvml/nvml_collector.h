// NvmlCollector: samples every GPU through NVML and turns the answers into
// Observations in the GPU-layer conventions (docs/nvml.md, "Observations").
//
// One Sample() reads, for each GPU: identity, ECC counters (totals and per location),
// retired pages, remapped rows, GPU/HBM temperature and thresholds, power and its
// enforced limit, SM/memory clocks, clock event reasons, PCIe replay/link state and the
// per-link NVLink state and error counters.
//
// Error handling, per NVML call:
//  - NOT_SUPPORTED: the field is skipped, nothing is reported (the device lacks it).
//  - GPU_IS_LOST / RESET_REQUIRED: one kGpuLost observation for that GPU; the rest of
//    that GPU is not read this sample. Other GPUs are still read.
//  - anything else (NO_PERMISSION, TIMEOUT, UNKNOWN, ...): an NvmlError in the sample,
//    the field is skipped, the GPU's other fields are still read.
//  - an optional function the library lacks (older driver): its fields are skipped and
//    the first sample's notes say so once.
//
// Thread-safety: a collector is used by one thread at a time (Sample/Run are not
// reentrant). It holds no global state; NVML itself is process-wide.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/types.h"
#include "sources/nvml/nvml_api.h"

namespace faultline::nvml {

struct NvmlOptions {
  // Library to dlopen; "" = $FAULTLINE_NVML_LIB if set, else "libnvidia-ml.so.1".
  std::string library_path;
  // Node name stamped on every observation.
  std::string node;
  // Time between samples in Run(). Counters change slowly; 10 s is the default, 1 s is
  // affordable (see docs/nvml.md for the measured cost).
  std::chrono::nanoseconds interval = std::chrono::seconds(10);
  // Source of sample times; nullptr = the system clock.
  const Clock* clock = nullptr;
  // How Run() waits between samples; empty = std::this_thread::sleep_for. Tests inject
  // one that advances a FakeClock.
  std::function<void(std::chrono::nanoseconds)> sleep;
  // NVLink links probed per GPU (NVML_NVLINK_MAX_LINKS = 18). 0 disables NVLink reads.
  int max_nvlinks = kNvlinkMaxLinks;
  // Read per-location ECC counters (32 calls per GPU) in addition to the totals.
  bool per_location_ecc = true;
  // The slow fields (NVLink state and error counters, per-location ECC counters, retired
  // pages, remapped rows: ~130 of a GPU's ~150 calls) are read at every slow_every-th
  // sample, the first one included, and whenever the GPU count changed; 1 = every sample.
  // They move rarely, what they mean is judged over minutes (rates, by their own
  // timestamps), and their urgent news comes faster another way (XID 48/63/64/74/79/94/95
  // in the kernel log, NVML's ECC and GPU-lost events). The fast fields (temperatures,
  // power, clocks, throttle reasons, ECC totals, PCIe link and replays) are read at every
  // sample. At the agent's 10 s interval: slow fields every 30 s, as dcgm-exporter
  // collects by default.
  int slow_every = 3;
};

// A failed NVML call that is neither "not supported" nor "GPU lost".
struct NvmlError {
  int gpu = -1;      // GPU index; -1 for a call not tied to one GPU (device count)
  std::string call;  // NVML function name, e.g. "nvmlDeviceGetTotalEccErrors"
  NvmlReturn code = kErrorUnknown;
  std::string message;  // "gpu 3: nvmlDeviceGetPowerUsage: NO_PERMISSION"
};

struct NvmlSample {
  int64_t time_ns = 0;  // the sample time (UTC ns) every observation carries
  int gpu_count = 0;    // devices NVML reported
  std::vector<Observation> observations;
  std::vector<NvmlError> errors;
  std::vector<std::string> notes;  // one-time facts (functions the driver lacks)
};

// Receives each sample from Run(); return false to stop early.
using NvmlSink = std::function<bool(const NvmlSample&)>;

class NvmlCollector {
 public:
  // Loads NVML (see NvmlOptions::library_path) and initialises it. Fails with the
  // library's Status (kUnavailable / kPermissionDenied) when the layer is unavailable.
  static Result<std::unique_ptr<NvmlCollector>> Open(NvmlOptions options);

  // Uses a caller-provided table (tests). `api` must outlive the collector; required
  // entries (get_count, get_handle_by_index) must be set; nvmlInit is the caller's job.
  // `missing` lists optional functions to report as absent in the first sample.
  NvmlCollector(const NvmlApi& api, NvmlOptions options, std::vector<std::string> missing = {});
  ~NvmlCollector();

  // Reads every GPU once (the slow fields at every slow_every-th call). Never fails as a
  // whole: a failed device count yields a sample with no observations and one NvmlError
  // (gpu = -1).
  NvmlSample Sample();

  // Takes `count` samples (0 = until the sink returns false) `interval` apart
  // (measured from the start of one sample to the next) and hands each to `sink`.
  void Run(int count, std::chrono::nanoseconds interval, const NvmlSink& sink);

  const NvmlOptions& options() const { return options_; }
  // The function table it calls through (valid while the collector lives): for an
  // NvmlEventWatch on the same initialised library.
  const NvmlApi& api() const { return api_; }

 private:
  NvmlCollector(std::unique_ptr<NvmlLibrary> library, NvmlOptions options);

  std::unique_ptr<NvmlLibrary> library_;  // null when a table was injected
  const NvmlApi& api_;
  NvmlOptions options_;
  std::unique_ptr<Clock> own_clock_;        // when options_.clock is null
  std::vector<std::string> pending_notes_;  // reported in the next sample, then cleared
  uint64_t samples_ = 0;                    // taken so far (slow_every)
  int last_count_ = -1;                     // GPU count of the last sample
};

}  // namespace faultline::nvml
