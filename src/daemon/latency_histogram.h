// A fixed-bucket histogram of durations (the agent's evaluation latency, exported as a
// Prometheus histogram by the API). Plain data: the owner serializes access.
#pragma once

#include <array>
#include <cstdint>

namespace faultline::daemon {

struct LatencyHistogram {
  // Upper bounds in seconds; an observation above the last counts only in +Inf (count).
  static constexpr std::array<double, 12> kBoundsS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1.0,  2.5,   10.0};
  std::array<uint64_t, kBoundsS.size()> buckets{};  // NOT cumulative: observations in (prev, bound]
  uint64_t count = 0;
  double sum_s = 0;

  void Observe(int64_t ns) {
    const double s = static_cast<double>(ns) / 1e9;
    ++count;
    sum_s += s;
    for (size_t i = 0; i < kBoundsS.size(); ++i) {
      if (s <= kBoundsS[i]) {
        ++buckets[i];
        return;
      }
    }
  }
};

}  // namespace faultline::daemon
