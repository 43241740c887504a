// Shared by the kernel-log reader tests: one reference time for syslog years, and one way
// to run text through KernelLogReader (optionally in chunks, to cross chunk boundaries).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "sources/kmsg/log_reader.h"

namespace faultline::kmsg_test {

inline const int64_t kRef = *ParseIso8601("2025-03-01T00:00:00Z");

// Reads `text` fed in pieces of `chunk` bytes (0 = all at once); fills `stats` when given.
inline std::vector<Observation> Read(const std::string& text, KernelLogStats* stats = nullptr, KernelLogOptions o = {},
                                     size_t chunk = 0) {
  o.reference_ns = kRef;
  auto r = KernelLogReader::Create(o);
  EXPECT_TRUE(r.ok());
  if (chunk == 0) chunk = text.size() + 1;
  for (size_t i = 0; i < text.size(); i += chunk) (*r)->Feed(std::string_view(text).substr(i, chunk));
  (*r)->Finish();
  if (stats) *stats = (*r)->stats();
  return (*r)->TakeObservations();
}

}  // namespace faultline::kmsg_test
