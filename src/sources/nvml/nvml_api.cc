#include "sources/nvml/nvml_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>

namespace faultline::nvml {
namespace {

struct ErrorName {
  NvmlReturn code;
  std::string_view name;
};

constexpr ErrorName kErrorNames[] = {
    {kSuccess, "SUCCESS"},
    {kErrorUninitialized, "UNINITIALIZED"},
    {kErrorInvalidArgument, "INVALID_ARGUMENT"},
    {kErrorNotSupported, "NOT_SUPPORTED"},
    {kErrorNoPermission, "NO_PERMISSION"},
    {kErrorAlreadyInitialized, "ALREADY_INITIALIZED"},
    {kErrorNotFound, "NOT_FOUND"},
    {kErrorInsufficientSize, "INSUFFICIENT_SIZE"},
    {kErrorInsufficientPower, "INSUFFICIENT_POWER"},
    {kErrorDriverNotLoaded, "DRIVER_NOT_LOADED"},
    {kErrorTimeout, "TIMEOUT"},
    {kErrorIrqIssue, "IRQ_ISSUE"},
    {kErrorLibraryNotFound, "LIBRARY_NOT_FOUND"},
    {kErrorFunctionNotFound, "FUNCTION_NOT_FOUND"},
    {kErrorCorruptedInforom, "CORRUPTED_INFOROM"},
    {kErrorGpuIsLost, "GPU_IS_LOST"},
    {kErrorResetRequired, "RESET_REQUIRED"},
    {kErrorOperatingSystem, "OPERATING_SYSTEM"},
    {kErrorLibRmVersionMismatch, "LIB_RM_VERSION_MISMATCH"},
    {kErrorInUse, "IN_USE"},
    {kErrorMemory, "MEMORY"},
    {kErrorNoData, "NO_DATA"},
    {kErrorUnknown, "UNKNOWN"},
};

template <typename Fn>
void Resolve(void* handle, const char* name, Fn*& slot, std::vector<std::string>& missing) {
  // dlsym returns void*; POSIX guarantees it converts to a function pointer.
  slot = reinterpret_cast<Fn*>(dlsym(handle, name));
  if (slot == nullptr) missing.emplace_back(name);
}

void ResolveRequired(void* handle, NvmlApi& api, std::vector<std::string>& missing) {
  Resolve(handle, "nvmlInit_v2", api.init, missing);
  Resolve(handle, "nvmlShutdown", api.shutdown, missing);
  Resolve(handle, "nvmlDeviceGetCount_v2", api.get_count, missing);
  Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", api.get_handle_by_index, missing);
}

void ResolveIdentityAndMemory(void* handle, NvmlApi& api, std::vector<std::string>& missing) {
  Resolve(handle, "nvmlDeviceGetName", api.get_name, missing);
  Resolve(handle, "nvmlDeviceGetUUID", api.get_uuid, missing);
  Resolve(handle, "nvmlDeviceGetSerial", api.get_serial, missing);
  Resolve(handle, "nvmlDeviceGetPciInfo_v3", api.get_pci_info, missing);
  Resolve(handle, "nvmlDeviceGetTotalEccErrors", api.get_total_ecc_errors, missing);
  Resolve(handle, "nvmlDeviceGetMemoryErrorCounter", api.get_memory_error_counter, missing);
  Resolve(handle, "nvmlDeviceGetRetiredPages", api.get_retired_pages, missing);
  Resolve(handle, "nvmlDeviceGetRetiredPagesPendingStatus", api.get_retired_pages_pending_status, missing);
  Resolve(handle, "nvmlDeviceGetRemappedRows", api.get_remapped_rows, missing);
}

void ResolveThermalPowerFabric(void* handle, NvmlApi& api, std::vector<std::string>& missing) {
  Resolve(handle, "nvmlDeviceGetTemperature", api.get_temperature, missing);
  Resolve(handle, "nvmlDeviceGetTemperatureThreshold", api.get_temperature_threshold, missing);
  Resolve(handle, "nvmlDeviceGetFieldValues", api.get_field_values, missing);
  Resolve(handle, "nvmlDeviceGetPowerUsage", api.get_power_usage, missing);
  Resolve(handle, "nvmlDeviceGetEnforcedPowerLimit", api.get_enforced_power_limit, missing);
  Resolve(handle, "nvmlDeviceGetClockInfo", api.get_clock_info, missing);
  Resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons", api.get_clocks_event_reasons, missing);
  Resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", api.get_clocks_throttle_reasons, missing);
  Resolve(handle, "nvmlDeviceGetPcieReplayCounter", api.get_pcie_replay_counter, missing);
  Resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", api.get_curr_pcie_link_generation, missing);
  Resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", api.get_curr_pcie_link_width, missing);
  Resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", api.get_max_pcie_link_generation, missing);
  Resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", api.get_max_pcie_link_width, missing);
  Resolve(handle, "nvmlDeviceGetNvLinkState", api.get_nvlink_state, missing);
  Resolve(handle, "nvmlDeviceGetNvLinkErrorCounter", api.get_nvlink_error_counter, missing);
  Resolve(handle, "nvmlEventSetCreate", api.event_set_create, missing);
  Resolve(handle, "nvmlEventSetFree", api.event_set_free, missing);
  Resolve(handle, "nvmlDeviceGetSupportedEventTypes", api.get_supported_event_types, missing);
  Resolve(handle, "nvmlDeviceRegisterEvents", api.register_events, missing);
  Resolve(handle, "nvmlEventSetWait_v2", api.event_set_wait, missing);
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string NvmlErrorName(NvmlReturn code) {
  for (const auto& e : kErrorNames) {
    if (e.code == code) return std::string(e.name);
  }
  return "ERROR_" + std::to_string(code);
}

bool ParseNvmlErrorName(std::string_view name, NvmlReturn* code) {
  for (std::string_view prefix : {"NVML_ERROR_", "NVML_"}) {
    if (name.substr(0, prefix.size()) == prefix) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  for (const auto& e : kErrorNames) {
    if (e.name == name) {
      *code = e.code;
      return true;
    }
  }
  return false;
}

std::string ResolveNvmlLibraryPath(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* env = std::getenv("FAULTLINE_NVML_LIB");
  if (env != nullptr && *env != '\0') return env;
  return "libnvidia-ml.so.1";
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status(StatusCode::kUnavailable,
                  "NVML unavailable: cannot load " + path + ": " + (why ? why : "unknown dlopen error"));
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle, path));
  std::vector<std::string> missing_required;
  ResolveRequired(handle, lib->api_, missing_required);
  if (!missing_required.empty()) {
    lib->api_.shutdown = nullptr;  // never initialised
    return Status(StatusCode::kUnavailable,
                  "NVML unavailable: " + path + " does not export " + JoinNames(missing_required));
  }
  ResolveIdentityAndMemory(handle, lib->api_, lib->missing_);
  ResolveThermalPowerFabric(handle, lib->api_, lib->missing_);
  const NvmlReturn rc = lib->api_.init();
  if (rc != kSuccess) {
    lib->api_.shutdown = nullptr;  // nothing to shut down
    const StatusCode code = rc == kErrorNoPermission ? StatusCode::kPermissionDenied : StatusCode::kUnavailable;
    return Status(code, "NVML unavailable: nvmlInit_v2 failed with " + NvmlErrorName(rc) + " (" + path + ")");
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (api_.shutdown != nullptr) api_.shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace faultline::nvml
