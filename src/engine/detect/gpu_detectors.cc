#include "engine/detect/gpu_detectors.h"

namespace faultline {

std::vector<std::unique_ptr<Detector>> MakeGpuDetectors(const GpuDetectorOptions& options) {
  std::vector<std::unique_ptr<Detector>> out;
  out.push_back(MakeGpuMemoryDetector(options.memory));
  out.push_back(MakeGpuSbeDetector(options.sbe));
  out.push_back(MakeGpuThrottleDetector(options.throttle));
  out.push_back(MakeGpuLostDetector(options.lost));
  return out;
}

}  // namespace faultline
