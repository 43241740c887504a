#include "sources/amdsmi/amdsmi_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>

namespace faultline::amdsmi {
namespace {

struct StatusName {
  AmdsmiStatus code;
  std::string_view name;
};

constexpr StatusName kStatusNames[] = {
    {kSuccess, "SUCCESS"},
    {kInval, "INVAL"},
    {kNotSupported, "NOT_SUPPORTED"},
    {kNotYetImplemented, "NOT_YET_IMPLEMENTED"},
    {kNoPerm, "NO_PERM"},
    {kBusy, "BUSY"},
    {kNotFound, "NOT_FOUND"},
    {kNotInit, "NOT_INIT"},
    {kDriverNotLoaded, "DRIVER_NOT_LOADED"},
    {kNoData, "NO_DATA"},
    {kUnknownError, "UNKNOWN_ERROR"},
};

template <typename Fn>
void Resolve(void* handle, const char* name, Fn*& slot, std::vector<std::string>& missing) {
  // dlsym returns void*; POSIX guarantees it converts to a function pointer.
  slot = reinterpret_cast<Fn*>(dlsym(handle, name));
  if (slot == nullptr) missing.emplace_back(name);
}

void ResolveRequired(void* h, AmdsmiApi& api, std::vector<std::string>& missing) {
  Resolve(h, "amdsmi_init", api.init, missing);
  Resolve(h, "amdsmi_shut_down", api.shut_down, missing);
  Resolve(h, "amdsmi_get_socket_handles", api.get_socket_handles, missing);
  Resolve(h, "amdsmi_get_processor_handles", api.get_processor_handles, missing);
}

void ResolveOptional(void* h, AmdsmiApi& api, std::vector<std::string>& missing) {
  Resolve(h, "amdsmi_get_gpu_device_bdf", api.get_bdf, missing);
  Resolve(h, "amdsmi_get_gpu_device_uuid", api.get_uuid, missing);
  Resolve(h, "amdsmi_get_gpu_total_ecc_count", api.get_total_ecc, missing);
  Resolve(h, "amdsmi_get_gpu_ecc_enabled", api.get_ecc_enabled, missing);
  Resolve(h, "amdsmi_get_gpu_ecc_count", api.get_ecc_count, missing);
  Resolve(h, "amdsmi_get_gpu_bad_page_info", api.get_bad_page_info, missing);
  Resolve(h, "amdsmi_get_temp_metric", api.get_temp_metric, missing);
  Resolve(h, "amdsmi_get_power_info", api.get_power_info, missing);
  Resolve(h, "amdsmi_get_violation_status", api.get_violation_status, missing);
  Resolve(h, "amdsmi_gpu_xgmi_error_status", api.get_xgmi_error_status, missing);
  Resolve(h, "amdsmi_get_gpu_pci_replay_counter", api.get_pci_replay_counter, missing);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string AmdsmiStatusName(AmdsmiStatus code) {
  for (const auto& e : kStatusNames) {
    if (e.code == code) return std::string(e.name);
  }
  return "STATUS_" + std::to_string(code);
}

bool ParseAmdsmiStatusName(std::string_view name, AmdsmiStatus* code) {
  constexpr std::string_view kPrefix = "AMDSMI_STATUS_";
  if (name.substr(0, kPrefix.size()) == kPrefix) name.remove_prefix(kPrefix.size());
  for (const auto& e : kStatusNames) {
    if (e.name == name) {
      *code = e.code;
      return true;
    }
  }
  return false;
}

std::string ResolveAmdsmiLibraryPath(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* env = std::getenv("FAULTLINE_AMDSMI_LIB");
  if (env != nullptr && *env != '\0') return env;
  return "libamd_smi.so";
}

Result<std::unique_ptr<AmdsmiLibrary>> AmdsmiLibrary::Open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status(StatusCode::kUnavailable,
                  "AMD SMI unavailable: cannot load " + path + ": " + (why ? why : "unknown dlopen error"));
  }
  std::unique_ptr<AmdsmiLibrary> lib(new AmdsmiLibrary(handle, path));
  std::vector<std::string> missing_required;
  ResolveRequired(handle, lib->api_, missing_required);
  if (!missing_required.empty()) {
    lib->api_.shut_down = nullptr;  // never initialised
    return Status(StatusCode::kUnavailable,
                  "AMD SMI unavailable: " + path + " does not export " + Join(missing_required));
  }
  ResolveOptional(handle, lib->api_, lib->missing_);
  const AmdsmiStatus rc = lib->api_.init(kInitAmdGpus);
  if (rc != kSuccess) {
    lib->api_.shut_down = nullptr;
    const StatusCode code = rc == kNoPerm ? StatusCode::kPermissionDenied : StatusCode::kUnavailable;
    return Status(code, "AMD SMI unavailable: amdsmi_init failed with " + AmdsmiStatusName(rc) + " (" + path + ")");
  }
  return lib;
}

AmdsmiLibrary::~AmdsmiLibrary() {
  if (api_.shut_down != nullptr) api_.shut_down();
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace faultline::amdsmi
