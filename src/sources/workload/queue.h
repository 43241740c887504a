// A bounded, thread-safe hand-over of observations from producer threads (the HTTP
// server's handler threads) to the one consumer that writes the store. Bounded so a
// job flooding the endpoint cannot grow the agent's memory: when full, Push refuses
// the whole batch (kUnavailable -> HTTP 503, the job may retry) and counts it.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace faultline {

class ObservationQueue {
 public:
  explicit ObservationQueue(size_t capacity = 100000) : capacity_(capacity) {}

  Status Push(std::vector<Observation> batch);
  // Takes everything queued (possibly nothing), oldest first.
  std::vector<Observation> Drain();
  uint64_t rejected() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::vector<Observation> items_;
  uint64_t rejected_ = 0;
};

}  // namespace faultline
