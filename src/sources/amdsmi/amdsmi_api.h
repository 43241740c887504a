// The AMD SMI function table and the loader that fills it from libamd_smi.so (the same
// shape as sources/nvml/nvml_api.h). The collector only calls through these pointers, so
// a test can hand it a table of its own functions; the real path (dlopen + dlsym) is the
// one the fake library in src/sim/fake_amdsmi is loaded through.
//
// A null optional pointer means the library does not export that function (an older
// ROCm): the collector skips the fields it provides and says so once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sources/amdsmi/amdsmi_abi.h"

namespace faultline::amdsmi {

using Handle = AmdsmiProcessorHandle;

struct AmdsmiApi {
  // Required: without these the source is unavailable.
  AmdsmiStatus (*init)(uint64_t) = nullptr;                                      // amdsmi_init
  AmdsmiStatus (*shut_down)() = nullptr;                                         // amdsmi_shut_down
  AmdsmiStatus (*get_socket_handles)(uint32_t*, AmdsmiSocketHandle*) = nullptr;  // amdsmi_get_socket_handles
  AmdsmiStatus (*get_processor_handles)(AmdsmiSocketHandle, uint32_t*,
                                        AmdsmiProcessorHandle*) = nullptr;  // amdsmi_get_processor_handles

  // Optional, per GPU.
  AmdsmiStatus (*get_bdf)(Handle, AmdsmiBdf*) = nullptr;                         // amdsmi_get_gpu_device_bdf
  AmdsmiStatus (*get_uuid)(Handle, unsigned int*, char*) = nullptr;              // amdsmi_get_gpu_device_uuid
  AmdsmiStatus (*get_total_ecc)(Handle, AmdsmiErrorCount*) = nullptr;            // amdsmi_get_gpu_total_ecc_count
  AmdsmiStatus (*get_ecc_enabled)(Handle, uint64_t*) = nullptr;                  // amdsmi_get_gpu_ecc_enabled
  AmdsmiStatus (*get_ecc_count)(Handle, uint64_t, AmdsmiErrorCount*) = nullptr;  // amdsmi_get_gpu_ecc_count
  AmdsmiStatus (*get_bad_page_info)(Handle, uint32_t*,
                                    AmdsmiRetiredPageRecord*) = nullptr;            // amdsmi_get_gpu_bad_page_info
  AmdsmiStatus (*get_temp_metric)(Handle, uint32_t, uint32_t, int64_t*) = nullptr;  // amdsmi_get_temp_metric
  AmdsmiStatus (*get_power_info)(Handle, AmdsmiPowerInfo*) = nullptr;               // amdsmi_get_power_info
  AmdsmiStatus (*get_violation_status)(Handle, AmdsmiViolationStatus*) = nullptr;   // amdsmi_get_violation_status
  AmdsmiStatus (*get_xgmi_error_status)(Handle, uint32_t*) = nullptr;               // amdsmi_gpu_xgmi_error_status
  AmdsmiStatus (*get_pci_replay_counter)(Handle, uint64_t*) = nullptr;              // amdsmi_get_gpu_pci_replay_counter
};

// "NOT_SUPPORTED", "BUSY", ... or "STATUS_<n>" for codes this file does not know.
std::string AmdsmiStatusName(AmdsmiStatus code);
// The code named by `name` ("BUSY", "AMDSMI_STATUS_BUSY"), if known.
bool ParseAmdsmiStatusName(std::string_view name, AmdsmiStatus* code);

// `configured` when not empty, else $FAULTLINE_AMDSMI_LIB when set, else "libamd_smi.so"
// (found through the dynamic loader's search path; ROCm installs it in /opt/rocm/lib).
std::string ResolveAmdsmiLibraryPath(const std::string& configured);

// A dlopen'ed and initialised AMD SMI (amdsmi_init(AMDSMI_INIT_AMD_GPUS)); the destructor
// calls amdsmi_shut_down and dlclose. Immutable after Open().
class AmdsmiLibrary {
 public:
  // kUnavailable when the library cannot be loaded, lacks a required symbol or
  // amdsmi_init fails (kPermissionDenied for NO_PERM); the message says which.
  static Result<std::unique_ptr<AmdsmiLibrary>> Open(const std::string& path);

  ~AmdsmiLibrary();
  AmdsmiLibrary(const AmdsmiLibrary&) = delete;
  AmdsmiLibrary& operator=(const AmdsmiLibrary&) = delete;

  const AmdsmiApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  const std::vector<std::string>& missing_symbols() const { return missing_; }

 private:
  AmdsmiLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_ = nullptr;
  std::string path_;
  AmdsmiApi api_;
  std::vector<std::string> missing_;
};

}  // namespace faultline::amdsmi
