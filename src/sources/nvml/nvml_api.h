// The NVML function table and the loader that fills it from libnvidia-ml.so.1.
//
// NvmlApi is the narrow interface between the collector and the library (STYLE.md
// rule 4): the collector only ever calls through these pointers, so a test can hand it a
// table of its own functions, and the real path (dlopen + dlsym) is the same one the
// fake library in src/sim/fake_nvml is loaded through.
//
// A null pointer means the library does not export that function (an older driver);
// the collector then skips the fields it provides.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sources/nvml/nvml_abi.h"

namespace faultline::nvml {

struct NvmlApi {
  // Required: without these the layer is unavailable.
  NvmlReturn (*init)() = nullptr;                                          // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;                                      // nvmlShutdown
  NvmlReturn (*get_count)(unsigned int*) = nullptr;                        // nvmlDeviceGetCount_v2
  NvmlReturn (*get_handle_by_index)(unsigned int, NvmlDevice*) = nullptr;  // nvmlDeviceGetHandleByIndex_v2

  // Optional, per device.
  NvmlReturn (*get_name)(NvmlDevice, char*, unsigned int) = nullptr;    // nvmlDeviceGetName
  NvmlReturn (*get_uuid)(NvmlDevice, char*, unsigned int) = nullptr;    // nvmlDeviceGetUUID
  NvmlReturn (*get_serial)(NvmlDevice, char*, unsigned int) = nullptr;  // nvmlDeviceGetSerial
  NvmlReturn (*get_pci_info)(NvmlDevice, NvmlPciInfo*) = nullptr;       // nvmlDeviceGetPciInfo_v3
  // (device, nvmlMemoryErrorType_t, nvmlEccCounterType_t, count)
  NvmlReturn (*get_total_ecc_errors)(NvmlDevice, int, int, unsigned long long*) = nullptr;  // NOLINT(runtime/int)
  // (device, error type, counter type, nvmlMemoryLocation_t, count)
  NvmlReturn (*get_memory_error_counter)(NvmlDevice, int, int, int, unsigned long long*) = nullptr;  // NOLINT
  // (device, nvmlPageRetirementCause_t, page count in/out, addresses or null)
  NvmlReturn (*get_retired_pages)(NvmlDevice, int, unsigned int*, unsigned long long*) = nullptr;  // NOLINT
  NvmlReturn (*get_retired_pages_pending_status)(NvmlDevice, int*) = nullptr;  // nvmlEnableState_t out
  // (device, correctable rows, uncorrectable rows, is pending, failure occurred)
  NvmlReturn (*get_remapped_rows)(NvmlDevice, unsigned int*, unsigned int*, unsigned int*, unsigned int*) = nullptr;
  NvmlReturn (*get_temperature)(NvmlDevice, int, unsigned int*) = nullptr;            // sensor, degC
  NvmlReturn (*get_temperature_threshold)(NvmlDevice, int, unsigned int*) = nullptr;  // threshold, degC
  NvmlReturn (*get_field_values)(NvmlDevice, int, NvmlFieldValue*) = nullptr;
  NvmlReturn (*get_power_usage)(NvmlDevice, unsigned int*) = nullptr;                    // milliwatts
  NvmlReturn (*get_enforced_power_limit)(NvmlDevice, unsigned int*) = nullptr;           // milliwatts
  NvmlReturn (*get_clock_info)(NvmlDevice, int, unsigned int*) = nullptr;                // nvmlClockType_t, MHz
  NvmlReturn (*get_clocks_event_reasons)(NvmlDevice, unsigned long long*) = nullptr;     // NOLINT(runtime/int)
  NvmlReturn (*get_clocks_throttle_reasons)(NvmlDevice, unsigned long long*) = nullptr;  // NOLINT(runtime/int)
  NvmlReturn (*get_pcie_replay_counter)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*get_curr_pcie_link_generation)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*get_curr_pcie_link_width)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*get_max_pcie_link_generation)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*get_max_pcie_link_width)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*get_nvlink_state)(NvmlDevice, unsigned int, int*) = nullptr;  // link, nvmlEnableState_t out
  // (device, link, nvmlNvLinkErrorCounter_t, value)
  NvmlReturn (*get_nvlink_error_counter)(NvmlDevice, unsigned int, int, unsigned long long*) = nullptr;  // NOLINT

  // Optional, events (nvml_events.h): all five or the poll is not woken early.
  NvmlReturn (*event_set_create)(NvmlEventSet*) = nullptr;                                // nvmlEventSetCreate
  NvmlReturn (*event_set_free)(NvmlEventSet) = nullptr;                                   // nvmlEventSetFree
  NvmlReturn (*get_supported_event_types)(NvmlDevice, unsigned long long*) = nullptr;     // NOLINT(runtime/int)
  NvmlReturn (*register_events)(NvmlDevice, unsigned long long, NvmlEventSet) = nullptr;  // NOLINT(runtime/int)
  NvmlReturn (*event_set_wait)(NvmlEventSet, NvmlEventData*, unsigned int) = nullptr;     // nvmlEventSetWait_v2
};

// The NVML identifier of a return code ("GPU_IS_LOST"), or "ERROR_<n>" for codes this
// file does not know.
std::string NvmlErrorName(NvmlReturn code);
// The return code named by `name` ("GPU_IS_LOST", "NVML_ERROR_GPU_IS_LOST"), if known.
bool ParseNvmlErrorName(std::string_view name, NvmlReturn* code);

// The library path to load: `configured` when not empty, else $FAULTLINE_NVML_LIB when
// set, else "libnvidia-ml.so.1" (found through the dynamic loader's search path).
std::string ResolveNvmlLibraryPath(const std::string& configured);

// A dlopen'ed and initialised NVML. Open() calls nvmlInit_v2; the destructor calls
// nvmlShutdown and dlclose. Not copyable. The api() table is valid for the object's
// lifetime. Thread-safety: NVML itself is thread-safe; this object is immutable after
// Open().
class NvmlLibrary {
 public:
  // Fails with kUnavailable when the library cannot be loaded, lacks a required symbol
  // (nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2)
  // or nvmlInit_v2 fails (no driver, no permission); the message says which.
  static Result<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);

  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  // Optional NVML functions the library does not export, by NVML name.
  const std::vector<std::string>& missing_symbols() const { return missing_; }

 private:
  NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_ = nullptr;
  std::string path_;
  NvmlApi api_;
  std::vector<std::string> missing_;
};

}  // namespace faultline::nvml
