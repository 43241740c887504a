// Source warnings (one unreadable Redfish resource, one bad line, a ring overrun) logged
// so an operator sees each kind once without a flood: a BMC that answers 404 for one
// sensor on every 30 s sweep would otherwise write 2,880 identical lines a day, and at
// debug level only (as before) nobody saw it at all.
//
// A warning's "shape" is its text with every run of digits replaced by '#', so
// "records 100..200 lost" and "records 300..400 lost" are one kind. The first warning of
// a shape in a window is logged at warn level; repeats are logged at debug and counted;
// when the window ends, each shape that repeated gets one warn line with the count. The
// number of shapes remembered per window is bounded (new shapes past it are counted as
// "other warnings").
//
// Time is the caller's monotonic time (deterministic under a FakeClock). Not
// thread-safe: the agent calls it under its own lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/log.h"

namespace faultline::daemon {

struct WarningLogOptions {
  int64_t window_ns = 3'600'000'000'000;  // one hour
  size_t max_shapes = 256;                // per window, across sources
};

class WarningLog {
 public:
  explicit WarningLog(Logger& logger, WarningLogOptions options = {}) : logger_(logger), options_(options) {}

  // Logs `warnings` of `source` (see the header comment).
  void Report(std::string_view source, const std::vector<std::string>& warnings, int64_t now_mono_ns);
  // Ends the current window now: the repeat counts are logged (at stop, so none is lost).
  void Flush();

 private:
  struct Seen {
    std::string example;  // the first text of this shape in the window
    uint64_t repeats = 0;
  };
  void RollWindow(int64_t now_mono_ns);

  Logger& logger_;
  WarningLogOptions options_;
  bool started_ = false;
  int64_t window_start_ns_ = 0;
  std::map<std::string, Seen> seen_;  // "source\0shape" -> what was seen
  uint64_t overflow_ = 0;             // warnings of shapes past max_shapes
};

// The warning's text with each run of ASCII digits replaced by one '#'.
std::string WarningShape(std::string_view text);

}  // namespace faultline::daemon
