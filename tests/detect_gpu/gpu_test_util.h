// Observation builders for the GPU detector tests: realistic NVML-style samples.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/time.h"
#include "core/types.h"
#include "engine/detect/detector.h"

namespace faultline::testing {

constexpr int64_t kT0 = 1'764'400'000LL * kNsPerSec;  // 2025-11-29, a fixed start
constexpr int64_t kMin = 60 * kNsPerSec;
constexpr int64_t kHour = 60 * kMin;
constexpr int64_t kDay = 24 * kHour;

inline Observation GpuObs(ObsKind kind, int gpu, int64_t t_ns, double value,
                          std::map<std::string, std::string> attrs = {}) {
  Observation o;
  o.time_ns = t_ns;
  o.node = "gpu-node-a07";
  o.layer = Layer::kGpu;
  o.component = GpuComponent(std::to_string(gpu));
  o.component.keys["index"] = std::to_string(gpu);
  o.component.keys["uuid"] = "GPU-0000000" + std::to_string(gpu);
  o.kind = kind;
  o.value = value;
  o.source = Source::kNvml;
  o.attrs = std::move(attrs);
  return o;
}

// Findings of `d` with fault class `c`.
inline std::vector<Finding> Of(const Detector& d, FaultClass c) {
  std::vector<Finding> out;
  for (const Finding& f : d.Findings()) {
    if (f.fault_class == c) out.push_back(f);
  }
  return out;
}

inline std::string Attr(const Finding& f, const std::string& k) {
  auto it = f.attrs.find(k);
  return it == f.attrs.end() ? "" : it->second;
}

}  // namespace faultline::testing
