// Kernel-log text -> KernelLogReader -> KernelDetector, for the detector's tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/detect/kernel_detector.h"
#include "sources/kmsg/log_reader.h"

namespace faultline::testing_kernel {

inline std::vector<Observation> Read(const std::string& log) {
  auto reader = KernelLogReader::Create({});
  EXPECT_TRUE(reader.ok());
  (*reader)->Feed(log);
  (*reader)->Finish();
  return (*reader)->TakeObservations();
}

inline std::vector<Finding> Detect(const std::string& log, KernelDetectorOptions options = {}, Inventory inv = {}) {
  KernelDetector detector(options, std::move(inv));
  for (const Observation& o : Read(log)) detector.Observe(o);
  return detector.Findings();
}

inline std::vector<Finding> OfClass(const std::vector<Finding>& fs, FaultClass c) {
  std::vector<Finding> out;
  for (const Finding& f : fs) {
    if (f.fault_class == c) out.push_back(f);
  }
  return out;
}

inline std::string At(double t) {
  char ts[32];
  std::snprintf(ts, sizeof ts, "[%12.6f] ", t);
  return ts;
}

inline std::string Line(double t, const std::string& msg) { return At(t) + msg + "\n"; }

}  // namespace faultline::testing_kernel
