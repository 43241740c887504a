#include "core/clock.h"

#include <ctime>

namespace faultline {
namespace {
int64_t Read(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t SystemClock::NowNs() const { return Read(CLOCK_REALTIME); }
int64_t SystemClock::MonotonicNs() const { return Read(CLOCK_MONOTONIC); }
int64_t SystemClock::BootTimeNs() const { return Read(CLOCK_BOOTTIME); }

}  // namespace faultline
