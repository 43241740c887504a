// The amdgpu driver's kernel-log lines (SIGNALS-ethernet-amd.md B3), classified next to
// the NVIDIA XID forms by ClassifyKernelMessage: RAS error reports (correctable,
// uncorrectable, deferred/poison, the fatal ATHUB interrupt), bad-page retirement and its
// threshold, GPU resets and their outcome, ring timeouts and the process they name, VM
// page faults, and the GPU dropping off the bus.
//
// Both print forms are read: "amdgpu <bdf>: [amdgpu: ][{<n>}][socket: S, die: D, ]<text>"
// (dev_* prefix, newer kernels add the event id and socket/die) and the BDF-less
// "[drm:<function> [amdgpu]] *ERROR* <text>" of older kernels. Pure and allocation-free:
// views into the caller's text; `event` is a static constant, and so is `detail`
// ("umc") for the CPU-attached "Uncorrectable error detected in UMC" form, which names no block. Nothing here throws.
#pragma once

#include <string_view>

#include "parse/kernel_line.h"

namespace faultline {

// `event` values (KernelEvent::event) for type kAmdgpu.
namespace amdgpu_event {
inline constexpr std::string_view kRasCe = "ras_ce";                       // detail = block, code = count
inline constexpr std::string_view kRasUe = "ras_ue";                       // detail = block, code = count
inline constexpr std::string_view kRasDeferred = "ras_deferred";           // UMC deferred errors
inline constexpr std::string_view kPoisonConsumed = "poison_consumption";  // detail = block
inline constexpr std::string_view kPoisonCreated = "poison_created";
inline constexpr std::string_view kRasFatal = "ras_fatal";             // ERREVENT_ATHUB_INTERRUPT: the hive resets
inline constexpr std::string_view kAca = "aca";                        // MI300 ACA dump lines after a fatal error
inline constexpr std::string_view kBadPagesSaved = "bad_pages_saved";  // code = pages
inline constexpr std::string_view kBadPageThreshold = "bad_page_threshold";  // code = records, detail = threshold
inline constexpr std::string_view kEepromError = "eeprom_error";
inline constexpr std::string_view kRmaAdvised = "rma_advised";  // "consult AMD Service Action Guide"
inline constexpr std::string_view kResetBegin = "reset_begin";
inline constexpr std::string_view kResetMode = "reset_mode";  // detail = MODE1 / MODE2 / BACO
inline constexpr std::string_view kResetSucceeded = "reset_succeeded";
inline constexpr std::string_view kResetFailed = "reset_failed";
inline constexpr std::string_view kVramLost = "vram_lost";
inline constexpr std::string_view kRingTimeout = "ring_timeout";  // detail = ring
inline constexpr std::string_view kRingProcess = "ring_process";  // process / pid of the timed-out job
inline constexpr std::string_view kRingReset = "ring_reset";      // detail = ring; severity = started/succeeded/failed
inline constexpr std::string_view kVmFault = "vm_fault";          // process / pid when printed
inline constexpr std::string_view kDeviceLost = "device_lost";    // "device lost from bus!"
inline constexpr std::string_view kSmuBusError = "smu_bus_error";
inline constexpr std::string_view kInitFailed = "init_failed";
}  // namespace amdgpu_event

// `rest`: the message after "amdgpu <bdf>:" (SplitDevicePrefix has set driver/device).
// True (ev.type = kAmdgpu) for a recognized form.
bool ParseAmdgpu(std::string_view rest, KernelEvent& ev);

// "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, ..." (whole message).
bool ParseAmdgpuDrm(std::string_view msg, KernelEvent& ev);

}  // namespace faultline
