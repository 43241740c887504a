#include "sources/nvml/nvml_events.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace faultline::nvml {
namespace {

// How soon a Cancel (the agent stopping) is seen. Each slice is a wake-up of the NVML
// thread at rest (an ioctl into the driver): one a second, not five.
constexpr unsigned int kSliceMs = 1000;
constexpr size_t kMaxEventsPerWait = 64;

bool HasEventApi(const NvmlApi& api) {
  return api.event_set_create && api.event_set_free && api.get_supported_event_types && api.register_events &&
         api.event_set_wait && api.get_count && api.get_handle_by_index;
}

}  // namespace

Result<std::unique_ptr<NvmlEventWatch>> NvmlEventWatch::Create(const NvmlApi& api) {
  if (!HasEventApi(api)) return Status(StatusCode::kUnavailable, "nvml: this library has no event API");
  NvmlEventSet set = nullptr;
  if (NvmlReturn rc = api.event_set_create(&set); rc != kSuccess || set == nullptr) {
    return Status(StatusCode::kUnavailable, "nvml: nvmlEventSetCreate returned " + NvmlErrorName(rc));
  }
  std::unique_ptr<NvmlEventWatch> watch(new NvmlEventWatch(api, set));
  unsigned int count = 0;
  if (NvmlReturn rc = api.get_count(&count); rc != kSuccess) {
    return Status(StatusCode::kUnavailable, "nvml: nvmlDeviceGetCount_v2 returned " + NvmlErrorName(rc));
  }
  for (unsigned int i = 0; i < count; ++i) {
    NvmlDevice d = nullptr;
    if (api.get_handle_by_index(i, &d) != kSuccess) continue;  // a lost GPU: the poll reports it
    unsigned long long supported = 0;                          // NOLINT(runtime/int)
    if (api.get_supported_event_types(d, &supported) != kSuccess) continue;
    const unsigned long long wanted = supported & kWatchedEvents;  // NOLINT(runtime/int)
    if (wanted == 0 || api.register_events(d, wanted, set) != kSuccess) continue;
    watch->devices_.push_back(d);
    watch->indexes_.push_back(static_cast<int>(i));
  }
  if (watch->devices_.empty()) return Status(StatusCode::kUnavailable, "nvml: no GPU supports the watched events");
  return watch;
}

NvmlEventWatch::~NvmlEventWatch() {
  if (set_ != nullptr) api_.event_set_free(set_);
}

NvmlEvent NvmlEventWatch::ToEvent(const NvmlEventData& d, NvmlReturn rc) const {
  NvmlEvent e;
  e.code = rc;
  if (rc != kSuccess) return e;
  e.type = d.event_type;
  e.data = d.event_data;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == d.device) e.gpu = indexes_[i];
  }
  return e;
}

std::vector<NvmlEvent> NvmlEventWatch::Wait(int64_t max_wait_ns) {
  std::vector<NvmlEvent> out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(std::max<int64_t>(max_wait_ns, 0));
  while (!cancel_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0 && out.empty()) break;
    // Once one event came, what is already queued is taken without waiting.
    const unsigned int slice = out.empty() ? static_cast<unsigned int>(std::min<int64_t>(left.count(), kSliceMs)) : 0;
    NvmlEventData d{};
    NvmlReturn rc = api_.event_set_wait(set_, &d, slice);
    // A set with a lost GPU may answer GPU_IS_LOST at every call from then on: news once.
    if (rc == kErrorGpuIsLost && lost_reported_) rc = kErrorUnknown;
    if (rc == kErrorGpuIsLost) lost_reported_ = true;
    if (rc == kSuccess || rc == kErrorGpuIsLost) {
      out.push_back(ToEvent(d, rc));
      if (rc == kErrorGpuIsLost || out.size() >= kMaxEventsPerWait) break;
      continue;
    }
    if (!out.empty()) break;  // the queue is drained
    if (rc != kErrorTimeout) {
      // An error the wait cannot recover from: sleep out the slice instead of spinning.
      std::this_thread::sleep_for(std::chrono::milliseconds(slice));
    }
  }
  return out;
}

}  // namespace faultline::nvml
