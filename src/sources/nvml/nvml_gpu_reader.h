// Reads one GPU through the NVML function table into a sample (the collector's inner
// loop, kept apart so each field group is one short function). Internal to the nvml
// module; the contract (error handling, observation conventions) is the collector's,
// see nvml_collector.h.
#pragma once

#include <cstdint>

#include "sources/nvml/nvml_api.h"
#include "sources/nvml/nvml_collector.h"

namespace faultline::nvml {

// Appends the observations and errors of GPU `index` (handle `device`) to `out`,
// stamped with `time_ns`. Stops reading the GPU at the first GPU_IS_LOST /
// RESET_REQUIRED, after emitting a kGpuLost observation. `slow`: the slow fields too
// (NvmlOptions::slow_every).
void ReadGpu(const NvmlApi& api, const NvmlOptions& options, int64_t time_ns, unsigned index, NvmlDevice device,
             NvmlSample& out, bool slow = true);

// The kGpuLost observation for GPU `index` (used when even its handle is gone).
Observation GpuLostObservation(const NvmlOptions& options, int64_t time_ns, const ComponentRef& gpu, NvmlReturn code,
                               const char* call);

}  // namespace faultline::nvml
