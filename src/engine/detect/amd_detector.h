// The amdgpu kernel-log detector: judges kAmdgpuEvent observations (sources/kmsg/
// amdgpu_events.h) with the same fault classes the XID rules use, next to the kernel
// detector (which keeps "device lost from bus!", a kGpuFellOffBus, on its XID 79 path).
// docs/amd.md "Kernel log" gives each rule and why:
//  - uncorrectable RAS errors: UMC (HBM) -> hbm_uncorrectable / reset_gpu; XGMI -> the
//    NVLink-class nvlink_errors; any other block (on-chip SRAM) -> gpu_sram / reset_gpu.
//    Deferred errors and poison consumption (contained, XID 94-like) -> hbm_uncorrectable /
//    restart_job. The fatal ATHUB interrupt (uncontained, XID 95-like) -> hbm_uncorrectable /
//    reset_gpu, attrs.uncontained. Correctable lines make no finding (the driver says no
//    action is needed; the ECC counters judge the trend).
//  - the bad-page threshold exceeded ("RAS records:N exceed threshold:T", "GPU will not be
//    initialized", "consult AMD Service Action Guide") -> hbm_uncorrectable / rma.
//  - ring timeouts: explained by a RAS error on the same GPU within `ras_window_ns` (they
//    join its finding); otherwise a user program's fault (user_application / notify_user,
//    naming the process the driver printed), unless they repeat (`repeat_timeouts` within
//    `repeat_window_ns` with no process named) -> driver_fault / reset_gpu. VM page faults
//    naming a process -> user_application.
//  - a GPU reset that failed -> gpu_fell_off_bus / reboot_node; a failed init -> driver_fault.
//  - resets that succeed, VRAM lost, bad pages saved, ACA dump lines: evidence of the
//    GPU's finding, never a finding of their own.
// Findings are named by bus id (component gpu/<bdf>, key bdf); the isolator's inventory
// turns that into gpu/<index>. Incremental and bounded like the kernel detector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/detect/detector.h"

namespace faultline {

struct AmdDetectorOptions {
  int64_t ras_window_ns = 120LL * 1'000'000'000;      // a ring timeout this close to a RAS error is its echo
  int64_t process_window_ns = 5LL * 1'000'000'000;    // "Process ..." line after its ring timeout
  int repeat_timeouts = 3;                            // unexplained timeouts without a process...
  int64_t repeat_window_ns = 3600LL * 1'000'000'000;  // ...within this window = driver/GPU fault
  size_t max_gpus = 64;                               // GPUs tracked (bus ids; bounded against hostile logs)
  size_t max_evidence = 20;
  size_t max_events_per_gpu = 256;  // ring timeouts / faults remembered per GPU
};

std::unique_ptr<Detector> MakeAmdDetector(const AmdDetectorOptions& options = {});

}  // namespace faultline
