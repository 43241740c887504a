// The fake libamd_smi.so: answers the AMD SMI calls faultline makes from a JSON state file
// named by $FAKE_AMDSMI_STATE (docs/amd.md "Fake AMD SMI"), re-read whenever the file
// changes (checked at amdsmi_get_socket_handles, once per collector sample). Unset
// variable = amdsmi_init answers DRIVER_NOT_LOADED, as on a node without amdgpu.
//
// Handles encode the GPU's position in the file (socket 0x5000 + i, processor 0xA000 + i);
// one socket per GPU, as AMD SMI reports MI300X. A GPU marked "lost" does not enumerate.
// Process state (init, the parsed file) lives in one mutex-guarded object: AMD SMI is a C
// API without a context argument.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "sim/fake_amdsmi/fake_amdsmi_state.h"
#include "sources/amdsmi/amdsmi_abi.h"

namespace {

namespace A = faultline::amdsmi;
namespace F = faultline::fake_amdsmi;

constexpr uintptr_t kSocketBase = 0x5000, kGpuBase = 0xA000;

struct FileId {
  off_t size = -1;
  int64_t mtime_ns = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

class FakeProcess {
 public:
  A::AmdsmiStatus Init() {
    std::lock_guard<std::mutex> lock(mu_);
    const char* path = std::getenv("FAKE_AMDSMI_STATE");
    if (path == nullptr || *path == '\0') return A::kDriverNotLoaded;
    path_ = path;
    loaded_ = false;
    id_ = FileId{};
    if (!ReloadLocked()) return A::kUnknownError;
    if (auto it = state_.errors.find("amdsmi_init"); it != state_.errors.end()) return it->second;
    init_ = true;
    return A::kSuccess;
  }

  A::AmdsmiStatus ShutDown() {
    std::lock_guard<std::mutex> lock(mu_);
    init_ = false;
    return A::kSuccess;
  }

  A::AmdsmiStatus Sockets(uint32_t* count, A::AmdsmiSocketHandle* out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!init_) return A::kNotInit;
    if (count == nullptr) return A::kInval;
    ReloadLocked();
    if (auto it = state_.errors.find("amdsmi_get_socket_handles"); it != state_.errors.end()) return it->second;
    uint32_t n = 0;
    for (size_t i = 0; i < state_.gpus.size(); ++i) {
      if (state_.gpus[i].lost) continue;
      if (out != nullptr && n < *count) out[n] = reinterpret_cast<A::AmdsmiSocketHandle>(kSocketBase + i);
      ++n;
    }
    *count = n;
    return A::kSuccess;
  }

  A::AmdsmiStatus Processors(A::AmdsmiSocketHandle socket, uint32_t* count, A::AmdsmiProcessorHandle* out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!init_) return A::kNotInit;
    if (count == nullptr) return A::kInval;
    const uintptr_t i = reinterpret_cast<uintptr_t>(socket) - kSocketBase;
    if (i >= state_.gpus.size()) return A::kInval;
    if (auto s = ErrorFor(state_.gpus[i], "amdsmi_get_processor_handles"); s != A::kSuccess) return s;
    if (out != nullptr && *count >= 1) out[0] = reinterpret_cast<A::AmdsmiProcessorHandle>(kGpuBase + i);
    *count = 1;
    return A::kSuccess;
  }

  // Runs `fn(gpu)` under the lock after the checks every per-GPU call shares.
  template <typename Fn>
  A::AmdsmiStatus WithGpu(A::AmdsmiProcessorHandle h, const char* call, Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!init_) return A::kNotInit;
    const uintptr_t i = reinterpret_cast<uintptr_t>(h) - kGpuBase;
    if (i >= state_.gpus.size()) return A::kInval;
    const F::FakeGpu& g = state_.gpus[i];
    if (g.lost) return A::kNotFound;
    if (auto s = ErrorFor(g, call); s != A::kSuccess) return s;
    return fn(g);
  }

 private:
  A::AmdsmiStatus ErrorFor(const F::FakeGpu& g, const char* call) const {
    if (auto it = g.errors.find(call); it != g.errors.end()) return it->second;
    if (auto it = state_.errors.find(call); it != state_.errors.end()) return it->second;
    return A::kSuccess;
  }

  // True when the state is usable (the new file, or the previous one kept after a bad file).
  bool ReloadLocked() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return loaded_;
    const FileId id{st.st_size, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, st.st_ino};
    if (loaded_ && id == id_) return true;
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    auto parsed = F::ParseFakeAmdsmiState(text.str());
    if (!parsed.ok()) {
      std::fprintf(stderr, "fake amd_smi: %s: %s\n", path_.c_str(), parsed.status().message().c_str());
      return loaded_;
    }
    state_ = std::move(parsed).value();
    id_ = id;
    loaded_ = true;
    return true;
  }

  std::mutex mu_;
  std::string path_;
  bool init_ = false, loaded_ = false;
  FileId id_;
  F::FakeState state_;
};

FakeProcess& Process() {
  static FakeProcess p;  // the library's process-wide state (see the file comment)
  return p;
}

uint64_t BlockBit(const std::string& name) {
  constexpr std::pair<const char*, uint64_t> kBits[] = {
      {"umc", A::kBlockUmc},     {"sdma", A::kBlockSdma},
      {"gfx", A::kBlockGfx},     {"mmhub", A::kBlockMmhub},
      {"athub", A::kBlockAthub}, {"pcie_bif", A::kBlockPcieBif},
      {"hdp", A::kBlockHdp},     {"xgmi_wafl", A::kBlockXgmiWafl},
      {"df", A::kBlockDf},       {"smn", A::kBlockSmn},
      {"sem", A::kBlockSem},     {"mp0", A::kBlockMp0},
      {"mp1", A::kBlockMp1},     {"fuse", A::kBlockFuse},
      {"mca", A::kBlockMca},     {"vcn", A::kBlockVcn},
      {"jpeg", A::kBlockJpeg},   {"ih", A::kBlockIh},
      {"mpio", A::kBlockMpio},
  };
  for (const auto& [n, b] : kBits) {
    if (name == n) return b;
  }
  return 0;
}

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT A::AmdsmiStatus amdsmi_init(uint64_t /*flags*/) { return Process().Init(); }
FAKE_EXPORT A::AmdsmiStatus amdsmi_shut_down() { return Process().ShutDown(); }
FAKE_EXPORT A::AmdsmiStatus amdsmi_get_socket_handles(uint32_t* count, A::AmdsmiSocketHandle* out) {
  return Process().Sockets(count, out);
}
FAKE_EXPORT A::AmdsmiStatus amdsmi_get_processor_handles(A::AmdsmiSocketHandle s, uint32_t* count,
                                                         A::AmdsmiProcessorHandle* out) {
  return Process().Processors(s, count, out);
}

FAKE_EXPORT A::AmdsmiStatus amdsmi_get_gpu_device_bdf(A::AmdsmiProcessorHandle h, A::AmdsmiBdf* out) {
  return Process().WithGpu(h, "amdsmi_get_gpu_device_bdf", [&](const F::FakeGpu& g) {
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    if (out == nullptr) return A::kInval;
    if (g.bdf.empty() || std::sscanf(g.bdf.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return A::kNotSupported;
    *out = A::AmdsmiBdf::Make(dom, bus, dev, fn);
    return A::kSuccess;
  });
}

FAKE_EXPORT A::AmdsmiStatus amdsmi_get_gpu_device_uuid(A::AmdsmiProcessorHandle h, unsigned int* len, char* uuid) {
  return Process().WithGpu(h, "amdsmi_get_gpu_device_uuid", [&](const F::FakeGpu& g) {
    if (len == nullptr || uuid == nullptr) return A::kInval;
    if (g.uuid.empty()) return A::kNotSupported;
    if (*len <= g.uuid.size()) return A::kInval;
    std::memcpy(uuid, g.uuid.c_str(), g.uuid.size() + 1);
    *len = static_cast<unsigned int>(g.uuid.size());
    return A::kSuccess;
  });
}

FAKE_EXPORT A::AmdsmiStatus amdsmi_get_gpu_total_ecc_count(A::AmdsmiProcessorHandle h, A::AmdsmiErrorCount* ec) {
  return Process().WithGpu(h, "amdsmi_get_gpu_total_ecc_count", [&](const F::FakeGpu& g) {
    if (ec == nullptr) return A::kInval;
    if (!g.has_ecc) return A::kNotSupported;
    *ec = A::AmdsmiErrorCount{};
    for (const auto& [b, c] : g.ecc) {
      ec->correctable_count += c.ce;
      ec->uncorrectable_count += c.ue;
      ec->deferred_count += c.de;
    }
    return A::kSuccess;
  });
}

FAKE_EXPORT A::AmdsmiStatus amdsmi_get_gpu_ecc_enabled(A::AmdsmiProcessorHandle h, uint64_t* mask) {
  return Process().WithGpu(h, "amdsmi_get_gpu_ecc_enabled", [&](const F::FakeGpu& g) {
    if (mask == nullptr) return A::kInval;
    if (!g.has_ecc) return A::kNotSupported;
    *mask = 0;
    for (const auto& [b, c] : g.ecc) *mask |= BlockBit(b);
    return A::kSuccess;
  });
}

FAKE_EXPORT A::AmdsmiStatus amdsmi_get_gpu_ecc_count(A::AmdsmiProcessorHandle h, uint64_t block,
                                                     A::AmdsmiErrorCount* ec) {
  return Process().WithGpu(h, "amdsmi_get_gpu_ecc_count", [&](const F::FakeGpu& g) {
    if (ec == nullptr) return A::kInval;
    for (const auto& [b, c] : g.ecc) {
      if (BlockBit(b) != block) continue;
      *ec = A::AmdsmiErrorCount{c.ce, c.ue, c.de, {}};
      return A::kSuccess;
    }
    return A::kNotSupported;
  });
}

// An "older ROCm" (FAKE_AMDSMI_LEGACY): no bad-page, violation or XGMI status calls.
#ifndef FAKE_AMDSMI_LEGACY
FAKE_EXPORT A::AmdsmiStatus amdsmi_get_gpu_bad_page_info(A::AmdsmiProcessorHandle h, uint32_t* num,
                                                         A::AmdsmiRetiredPageRecord* info) {
  return Process().WithGpu(h, "amdsmi_get_gpu_bad_page_info", [&](const F::FakeGpu& g) {
    if (num == nullptr) return A::kInval;
    if (!g.bad_reserved) return A::kNotSupported;
    const uint64_t total = *g.bad_reserved + *g.bad_pending + *g.bad_unreservable;
    if (info == nullptr) {
      *num = static_cast<uint32_t>(total);
      return A::kSuccess;
    }
    uint32_t n = 0;
    for (uint64_t i = 0; i < total && n < *num; ++i, ++n) {
      info[n].page_address = 0x1000 * (i + 1);
      info[n].page_size = 0x1000;
      info[n].status = i < *g.bad_reserved                    ? A::kPageReserved
                       : i < *g.bad_reserved + *g.bad_pending ? A::kPagePending
                                                              : A::kPageUnreservable;
    }
    *num = n;
    return A::kSuccess;
  });
}

#endif  // FAKE_AMDSMI_LEGACY

FAKE_EXPORT A::AmdsmiStatus amdsmi_get_temp_metric(A::AmdsmiProcessorHandle h, uint32_t type, uint32_t metric,
                                                   int64_t* value) {
  return Process().WithGpu(h, "amdsmi_get_temp_metric", [&](const F::FakeGpu& g) {
    if (value == nullptr) return A::kInval;
    const char* name = type == A::kTempHotspot ? "hotspot"
                       : type == A::kTempVram  ? "memory"
                       : type == A::kTempEdge  ? "edge"
                                               : "";
    auto it = g.temps.find(name);
    if (it == g.temps.end()) return A::kNotSupported;
    std::optional<int64_t> v = metric == A::kTempCurrent     ? std::optional(it->second.current)
                               : metric == A::kTempCritical  ? it->second.critical
                               : metric == A::kTempEmergency ? it->second.emergency
                                                             : std::nullopt;
    if (!v) return A::kNotSupported;
    *value = *v;  // degrees C, as current AMD SMI releases answer
    return A::kSuccess;
  });
}

FAKE_EXPORT A::AmdsmiStatus amdsmi_get_power_info(A::AmdsmiProcessorHandle h, A::AmdsmiPowerInfo* info) {
  return Process().WithGpu(h, "amdsmi_get_power_info", [&](const F::FakeGpu& g) {
    if (info == nullptr) return A::kInval;
    if (!g.power_w && !g.power_limit_w) return A::kNotSupported;
    *info = A::AmdsmiPowerInfo{};
    info->current_socket_power = g.power_w.value_or(UINT32_MAX);
    info->average_socket_power = g.power_w.value_or(UINT32_MAX);
    info->power_limit = g.power_limit_w.value_or(0);
    return A::kSuccess;
  });
}

#ifndef FAKE_AMDSMI_LEGACY
FAKE_EXPORT A::AmdsmiStatus amdsmi_get_violation_status(A::AmdsmiProcessorHandle h, A::AmdsmiViolationStatus* v) {
  return Process().WithGpu(h, "amdsmi_get_violation_status", [&](const F::FakeGpu& g) {
    if (v == nullptr) return A::kInval;
    if (!g.violation) return A::kNotSupported;
    *v = A::AmdsmiViolationStatus{};
    auto flag = [&](const char* k) -> uint8_t {
      auto it = g.violation->find(k);
      return it != g.violation->end() && it->second ? 1 : 0;
    };
    v->active_socket_thrm = flag("socket_thermal");
    v->active_hbm_thrm = flag("hbm_thermal");
    v->active_vr_thrm = flag("vr_thermal");
    v->active_prochot_thrm = flag("prochot");
    v->active_ppt_pwr = flag("ppt");
    return A::kSuccess;
  });
}

FAKE_EXPORT A::AmdsmiStatus amdsmi_gpu_xgmi_error_status(A::AmdsmiProcessorHandle h, uint32_t* status) {
  return Process().WithGpu(h, "amdsmi_gpu_xgmi_error_status", [&](const F::FakeGpu& g) {
    if (status == nullptr) return A::kInval;
    if (!g.xgmi_status) return A::kNotSupported;
    *status = *g.xgmi_status;
    return A::kSuccess;
  });
}

#endif  // FAKE_AMDSMI_LEGACY

FAKE_EXPORT A::AmdsmiStatus amdsmi_get_gpu_pci_replay_counter(A::AmdsmiProcessorHandle h, uint64_t* counter) {
  return Process().WithGpu(h, "amdsmi_get_gpu_pci_replay_counter", [&](const F::FakeGpu& g) {
    if (counter == nullptr) return A::kInval;
    if (!g.pcie_replay) return A::kNotSupported;
    *counter = *g.pcie_replay;
    return A::kSuccess;
  });
}
