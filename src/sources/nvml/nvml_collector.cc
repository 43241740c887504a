#include "sources/nvml/nvml_collector.h"

#include <thread>
#include <utility>

#include "sources/nvml/nvml_gpu_reader.h"

namespace faultline::nvml {
namespace {

// What each optional function provides, for the "older driver" note.
std::string MissingNote(const std::string& symbol) {
  return symbol + " is not exported by this NVML library (older driver?): its fields are not collected";
}

std::vector<std::string> NotesFor(const std::vector<std::string>& missing) {
  std::vector<std::string> notes;
  for (const auto& m : missing) {
    // The throttle-reasons call is only a fallback for the event-reasons one.
    if (m == "nvmlDeviceGetCurrentClocksThrottleReasons") continue;
    notes.push_back(MissingNote(m));
  }
  return notes;
}

}  // namespace

Result<std::unique_ptr<NvmlCollector>> NvmlCollector::Open(NvmlOptions options) {
  auto lib = NvmlLibrary::Open(ResolveNvmlLibraryPath(options.library_path));
  if (!lib.ok()) return lib.status();
  return std::unique_ptr<NvmlCollector>(new NvmlCollector(std::move(lib).value(), std::move(options)));
}

NvmlCollector::NvmlCollector(std::unique_ptr<NvmlLibrary> library, NvmlOptions options)
    : NvmlCollector(library->api(), std::move(options), library->missing_symbols()) {
  library_ = std::move(library);
}

NvmlCollector::NvmlCollector(const NvmlApi& api, NvmlOptions options, std::vector<std::string> missing)
    : api_(api), options_(std::move(options)), pending_notes_(NotesFor(missing)) {
  if (options_.clock == nullptr) {
    own_clock_ = std::make_unique<SystemClock>();
    options_.clock = own_clock_.get();
  }
}

NvmlCollector::~NvmlCollector() = default;

NvmlSample NvmlCollector::Sample() {
  NvmlSample sample;
  sample.time_ns = options_.clock->NowNs();
  sample.notes = std::move(pending_notes_);
  pending_notes_.clear();
  unsigned int count = 0;
  const NvmlReturn rc = api_.get_count(&count);
  if (rc != kSuccess) {
    sample.errors.push_back(NvmlError{-1, "nvmlDeviceGetCount_v2", rc, "nvmlDeviceGetCount_v2: " + NvmlErrorName(rc)});
    return sample;
  }
  sample.gpu_count = static_cast<int>(count);
  // A GPU come or gone starts the slow fields' cadence over: read them all now.
  if (sample.gpu_count != last_count_) samples_ = 0;
  last_count_ = sample.gpu_count;
  const bool slow = options_.slow_every <= 1 || samples_++ % static_cast<uint64_t>(options_.slow_every) == 0;
  for (unsigned int i = 0; i < count; ++i) {
    NvmlDevice device = nullptr;
    const NvmlReturn hrc = api_.get_handle_by_index(i, &device);
    if (hrc == kErrorGpuIsLost || hrc == kErrorResetRequired) {
      ComponentRef gpu = GpuComponent(std::to_string(i));
      gpu.keys["index"] = gpu.name;
      sample.observations.push_back(
          GpuLostObservation(options_, sample.time_ns, gpu, hrc, "nvmlDeviceGetHandleByIndex_v2"));
      continue;
    }
    if (hrc != kSuccess) {
      sample.errors.push_back(
          NvmlError{static_cast<int>(i), "nvmlDeviceGetHandleByIndex_v2", hrc,
                    "gpu " + std::to_string(i) + ": nvmlDeviceGetHandleByIndex_v2: " + NvmlErrorName(hrc)});
      continue;
    }
    ReadGpu(api_, options_, sample.time_ns, i, device, sample, slow);
  }
  return sample;
}

void NvmlCollector::Run(int count, std::chrono::nanoseconds interval, const NvmlSink& sink) {
  const auto sleep = options_.sleep ? options_.sleep
                                    : std::function<void(std::chrono::nanoseconds)>(
                                          [](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); });
  for (int n = 0; count == 0 || n < count; ++n) {
    const int64_t start = options_.clock->MonotonicNs();
    if (!sink(Sample())) return;
    if (count != 0 && n + 1 == count) return;
    // Keep a steady cadence: the time a sample took comes off the wait.
    const auto spent = std::chrono::nanoseconds(options_.clock->MonotonicNs() - start);
    if (spent < interval) sleep(interval - spent);
  }
}

}  // namespace faultline::nvml
