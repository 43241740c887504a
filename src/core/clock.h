// The clock as an interface (STYLE.md rule 4): real code reads the system clocks,
// tests and the simulator inject a FakeClock so time-dependent rules are deterministic.
#pragma once

#include <atomic>
#include <cstdint>

namespace faultline {

class Clock {
 public:
  virtual ~Clock() = default;
  // UTC wall-clock time in nanoseconds since the Unix epoch.
  virtual int64_t NowNs() const = 0;
  // CLOCK_MONOTONIC in nanoseconds (never jumps; used for intervals and deadlines).
  virtual int64_t MonotonicNs() const = 0;
  // CLOCK_BOOTTIME in nanoseconds: the kernel log's timestamps count from here.
  virtual int64_t BootTimeNs() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowNs() const override;
  int64_t MonotonicNs() const override;
  int64_t BootTimeNs() const override;
};

// A settable clock for tests. Thread-safe: the value is atomic.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t now_ns = 0, int64_t boot_ns = 0) : now_(now_ns), boot_(boot_ns) {}
  int64_t NowNs() const override { return now_.load(); }
  int64_t MonotonicNs() const override { return boot_.load(); }
  int64_t BootTimeNs() const override { return boot_.load(); }
  void Set(int64_t now_ns) { now_.store(now_ns); }
  void Advance(int64_t delta_ns) {
    now_ += delta_ns;
    boot_ += delta_ns;
  }

 private:
  std::atomic<int64_t> now_;
  std::atomic<int64_t> boot_;
};

}  // namespace faultline
