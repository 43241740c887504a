// Kernel-log text -> KernelLogReader -> observations / the amdgpu detector, for the tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/detect/amd_detector.h"
#include "sources/kmsg/log_reader.h"

namespace faultline::testing_amd {

inline std::vector<Observation> Read(const std::string& log) {
  auto reader = KernelLogReader::Create({});
  EXPECT_TRUE(reader.ok());
  (*reader)->Feed(log);
  (*reader)->Finish();
  return (*reader)->TakeObservations();
}

inline std::vector<Finding> Detect(const std::string& log, AmdDetectorOptions options = {}) {
  auto d = MakeAmdDetector(options);
  for (const Observation& o : Read(log)) d->Observe(o);
  return d->Findings();
}

inline std::vector<Finding> OfClass(const std::vector<Finding>& fs, FaultClass c) {
  std::vector<Finding> out;
  for (const Finding& f : fs) {
    if (f.fault_class == c) out.push_back(f);
  }
  return out;
}

// "[  123.456000] <msg>\n" (dmesg form).
inline std::string Line(double t, const std::string& msg) {
  char ts[32];
  std::snprintf(ts, sizeof ts, "[%12.6f] ", t);
  return ts + msg + "\n";
}

inline std::string Amd(const std::string& bdf, const std::string& text) {
  return "amdgpu " + bdf + ": amdgpu: " + text;
}

}  // namespace faultline::testing_amd
