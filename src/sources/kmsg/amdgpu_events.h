// amdgpu kernel lines (parse/amdgpu_line.h) as Observations, called by the kernel event
// assembler next to the XID forms:
//  - "device lost from bus!" -> kGpuFellOffBus on the GPU (the XID 79 path: the kernel
//    detector walks the PCIe link above it exactly as for an NVIDIA GPU);
//  - every other family -> kAmdgpuEvent on the GPU (component gpu/<bdf>, keys bdf, driver),
//    attrs event (amdgpu_event::*), block / ring / mode, count, process, pid, threshold;
//    judged by the amdgpu detector (engine/detect/amd_detector.h).
// Boot and informational lines (ACA dump details, "Poison is created") are kept as
// events too: they are evidence, and the detector decides they are not findings.
#pragma once

#include <string>

#include "core/types.h"
#include "parse/kernel_line.h"

namespace faultline {

// Fills `o` (the line's base observation) for `ev` (type kAmdgpu); `bdf` is the
// normalized bus id ("" when the line names none). False when nothing is kept.
bool AmdgpuObservation(const KernelEvent& ev, const std::string& bdf, Observation& o);

}  // namespace faultline
