// The GPU hardware-integrity detectors (layer 2): HBM/ECC and memory repair, SBE aging,
// clock events and temperatures, lost GPUs. They read the observations of the NVML
// collector and the dcgm-exporter source alike (conventions in docs/gpu-detectors.md)
// and emit Findings with layer gpu, the GPU as component and the observations as
// evidence. Every threshold is in the options below; docs/gpu-detectors.md gives each
// default and the reason for it.
//
// Counters are cumulative; a counter that goes backwards (driver reload, GPU reset,
// reboot) is a new baseline, never a negative rate. Not thread-safe (see detector.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/time.h"
#include "engine/detect/detector.h"

namespace faultline {

// Uncorrectable ECC, row remapping and page retirement ("gpu_memory").
struct GpuMemoryOptions {
  double retired_pages_limit = 63;    // total retired pages (SBE + DBE) => RMA (DCGM health limit)
  double retired_dbe_limit = 15;      // DBE retired pages above this...
  double retired_dbe_recent_min = 2;  // ...with at least this many new ("more than one")...
  int64_t retired_dbe_recent_window_ns = 7 * 86400 * kNsPerSec;  // ...within this window => RMA
  size_t max_evidence = 16;
};

// Correctable (single-bit) ECC accumulation: an aging signal ("gpu_sbe").
struct GpuSbeOptions {
  double rate_per_hour = 20;                                 // sustained SBEs per hour that mark aging
  double rate_min_count = 10;                                // and at least this many new SBEs in the window
  int64_t rate_window_ns = 3600 * kNsPerSec;                 // rate measured over this window...
  int64_t rate_min_span_ns = 30 * 60 * kNsPerSec;            // ...once samples cover at least this much
  int trend_min_days = 3;                                    // days with a daily rate before a trend is fitted
  int trend_max_days = 14;                                   // days of daily rates kept
  int64_t trend_min_day_coverage_ns = 6 * 3600 * kNsPerSec;  // a day counts once sampled this long
  double trend_daily_limit = 1000;                           // SBEs per day taken as end of life
  double trend_horizon_days = 30;                            // projection reaching the limit within this => plan RMA
  size_t max_evidence = 16;
};

// Clock event reasons and temperatures ("gpu_throttle").
struct GpuThrottleOptions {
  int hw_event_min_samples = 1;                       // HW_THERMAL / HW_POWER_BRAKE samples before a finding
  int64_t slowdown_window_ns = 10 * 60 * kNsPerSec;   // HW_SLOWDOWN judged over this window...
  double slowdown_min_fraction = 0.6;                 // ...asserted this share of it (6 of 10 minutes)
  int64_t slowdown_min_span_ns = 5 * 60 * kNsPerSec;  // samples must cover this much of the window
  int64_t max_hold_ns = 2 * 60 * kNsPerSec;           // a sample's state holds at most this long
  double memory_slowdown_c = 95;                      // HBM slowdown when the sample carries no threshold
  int temp_min_samples = 2;                           // consecutive samples at/above slowdown before a finding
  double hot_margin_c = 5;                            // within this of slowdown = "hot" (HW_SLOWDOWN cause)
  size_t max_evidence = 16;
};

// GPU lost (NVML GPU_IS_LOST / RESET_REQUIRED) ("gpu_lost").
struct GpuLostOptions {
  int repeat_losses_for_drain = 2;  // losses (with recovery between) before drain + RMA
  size_t max_evidence = 16;
};

struct GpuDetectorOptions {
  GpuMemoryOptions memory;
  GpuSbeOptions sbe;
  GpuThrottleOptions throttle;
  GpuLostOptions lost;
};

std::unique_ptr<Detector> MakeGpuMemoryDetector(const GpuMemoryOptions& options);
std::unique_ptr<Detector> MakeGpuSbeDetector(const GpuSbeOptions& options);
std::unique_ptr<Detector> MakeGpuThrottleDetector(const GpuThrottleOptions& options);
std::unique_ptr<Detector> MakeGpuLostDetector(const GpuLostOptions& options);

// The whole layer-2 set, for the CLIs (collect nvml / dcgm-exporter) and the agent.
std::vector<std::unique_ptr<Detector>> MakeGpuDetectors(const GpuDetectorOptions& options = {});

}  // namespace faultline
