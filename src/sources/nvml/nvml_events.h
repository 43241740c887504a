// NVML's event API, so the agent's NVML poll runs the moment a GPU reports trouble instead
// of at its next 10 s tick (docs/nvml.md "Events"): critical XIDs (the driver's XID 79
// "fallen off the bus", 48 DBE, 94/95 contained/uncontained ECC, ...), double-bit ECC
// errors and "GPU unavailable", registered on one event set for every GPU that supports
// them. A wait that returns GPU_IS_LOST is itself such news (once: a set with a lost GPU
// may say so at every call after).
//
// The watch only says when to look: the poll that follows reads every GPU as usual (the
// lost GPU answers GPU_IS_LOST there and becomes a kGpuLost observation, which wakes the
// evaluation). The XID itself reaches the engine from the kernel log, so nothing here is
// counted twice.
//
// Thread-safety: Wait from one thread; Cancel from any (NVML is thread-safe; the wait runs
// in slices of at most 1 s so a cancel is seen that quickly).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "sources/nvml/nvml_api.h"

namespace faultline::nvml {

struct NvmlEvent {
  int gpu = -1;                 // index of the GPU, -1 when the library did not say
  unsigned long long type = 0;  // NOLINT(runtime/int): kEvent* bit
  unsigned long long data = 0;  // NOLINT(runtime/int): the XID for kEventXidCritical
  NvmlReturn code = kSuccess;   // kErrorGpuIsLost when the wait itself said a GPU is gone
};

// The event types watched (those a GPU supports are registered).
inline constexpr unsigned long long kWatchedEvents =  // NOLINT(runtime/int)
    kEventXidCritical | kEventDoubleBitEcc | kEventGpuUnavailable;

class NvmlEventWatch {
 public:
  // Registers every GPU's supported watched events on one set. kUnavailable when the
  // library lacks the event API or no GPU supports a watched event. `api` must outlive the
  // watch (and NVML stay initialised).
  static Result<std::unique_ptr<NvmlEventWatch>> Create(const NvmlApi& api);
  ~NvmlEventWatch();  // frees the set
  NvmlEventWatch(const NvmlEventWatch&) = delete;
  NvmlEventWatch& operator=(const NvmlEventWatch&) = delete;

  // Waits up to `max_wait_ns` for an event; returns those that came (more already queued
  // are taken too, up to 64), empty on timeout or Cancel.
  std::vector<NvmlEvent> Wait(int64_t max_wait_ns);
  void Cancel() { cancel_ = true; }
  size_t registered_gpus() const { return devices_.size(); }

 private:
  NvmlEventWatch(const NvmlApi& api, NvmlEventSet set) : api_(api), set_(set) {}
  NvmlEvent ToEvent(const NvmlEventData& d, NvmlReturn rc) const;

  const NvmlApi& api_;
  NvmlEventSet set_;
  std::vector<NvmlDevice> devices_;  // by GPU index (registered ones)
  std::vector<int> indexes_;
  std::atomic<bool> cancel_{false};
  bool lost_reported_ = false;  // a GPU_IS_LOST from the wait was returned once
};

}  // namespace faultline::nvml
