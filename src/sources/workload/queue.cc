#include "sources/workload/queue.h"

namespace faultline {

Status ObservationQueue::Push(std::vector<Observation> batch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (items_.size() + batch.size() > capacity_) {
    rejected_ += batch.size();
    return Status(StatusCode::kUnavailable, "workload queue full");
  }
  for (auto& o : batch) items_.push_back(std::move(o));
  return Status::Ok();
}

std::vector<Observation> ObservationQueue::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Observation> out;
  out.swap(items_);
  return out;
}

uint64_t ObservationQueue::rejected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_;
}

}  // namespace faultline
