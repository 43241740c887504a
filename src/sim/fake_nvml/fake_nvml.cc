// The fake libnvidia-ml.so.1: exports the NVML functions faultline uses, answering from
// the JSON state file named by $FAKE_NVML_STATE (format: fake_nvml_state.h and
// docs/nvml.md). Tests and the simulator load it through the collector's real dlopen
// path, so the code under test is the code that runs on a GPU node.
//
// Why process state: NVML is a C API with no context argument; its callers expect the
// library itself to hold "initialised" and the device list, so this fake keeps one
// FakeProcess per loaded copy, guarded by a mutex (NVML is documented thread-safe).
//
// The state file is re-read when its size, mtime or inode changes, checked whenever the
// caller enumerates devices (nvmlDeviceGetCount_v2 / nvmlDeviceGetHandleByIndex_v2), so
// a test can rewrite it between samples. A file that fails to parse keeps the previous
// state and is reported once on stderr.
//
// Built twice: fake_nvml (everything) and, with FAKE_NVML_LEGACY, fake_nvml_legacy,
// which lacks the functions newer drivers added, to test the older-driver path.
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "sim/fake_nvml/fake_nvml_state.h"
#include "sources/nvml/nvml_abi.h"

namespace {

namespace nv = faultline::nvml;
using faultline::fake_nvml::FakeGpu;
using faultline::fake_nvml::FakeNvmlState;
using nv::NvmlDevice;
using nv::NvmlReturn;

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = -1;
  int64_t mtime_ns = -1;
  bool operator==(const FileId&) const = default;
};

// One slot per possible GPU; a handle is the address of its slot.
struct Slot {
  unsigned index;
};

// An event set: the GPUs registered on it, with their masks, and what it has delivered.
struct FakeEventSet {
  std::map<unsigned, unsigned long long> registered;     // NOLINT(runtime/int): GPU index -> mask
  std::set<unsigned> lost_delivered;                     // GPUs whose XID 79 was delivered
  std::set<std::pair<unsigned, size_t>> xids_delivered;  // (GPU, index into xid_events)
  // The state file's directory, watched from the set's first wait until it is freed:
  // one inotify descriptor per set, not per wait (a caller waits in short slices, and
  // making and closing a watch costs the kernel more than the wait itself), and a rewrite
  // between two waits is still seen by the next. -1: not yet, or inotify cannot.
  int watch = -1;
  bool watch_tried = false;

  FakeEventSet() = default;
  FakeEventSet(const FakeEventSet&) = delete;
  FakeEventSet& operator=(const FakeEventSet&) = delete;
  ~FakeEventSet() {
    if (watch >= 0) close(watch);
  }
};

struct FakeProcess {
  std::mutex mu;
  std::list<FakeEventSet> event_sets;  // stable addresses: a set handle is one's address
  int init_count = 0;
  std::string path;
  FileId file;
  FakeNvmlState state;
  std::chrono::steady_clock::time_point init_time;
  Slot slots[faultline::fake_nvml::kMaxGpus];
};

FakeProcess& Process() {
  static FakeProcess* process = [] {
    auto* p = new FakeProcess;  // never freed: callers may race library unload
    for (unsigned i = 0; i < faultline::fake_nvml::kMaxGpus; ++i) p->slots[i].index = i;
    return p;
  }();
  return *process;
}

bool StatFile(const std::string& path, FileId& id) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  id = FileId{st.st_dev, st.st_ino, st.st_size,
              static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  return true;
}

// Reloads the state if the file changed. Returns false when no usable state exists.
bool Refresh(FakeProcess& p, bool first) {
  FileId id;
  if (!StatFile(p.path, id)) {
    if (first) std::fprintf(stderr, "fake_nvml: cannot stat FAKE_NVML_STATE=%s\n", p.path.c_str());
    return !first;
  }
  if (!first && id == p.file) return true;
  p.file = id;
  std::ifstream in(p.path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = faultline::fake_nvml::ParseFakeNvmlState(ss.str());
  if (!parsed.ok()) {
    std::fprintf(stderr, "fake_nvml: %s: %s\n", p.path.c_str(), parsed.status().message().c_str());
    return !first;
  }
  p.state = std::move(parsed).value();
  return true;
}

NvmlReturn InjectedError(const std::map<std::string, int>& errors, const char* call) {
  auto it = errors.find(call);
  return it == errors.end() ? nv::kSuccess : it->second;
}

bool IsLost(const FakeProcess& p, const FakeGpu& g) {
  if (!g.lost_after_s) return false;
  const std::chrono::duration<double> since = std::chrono::steady_clock::now() - p.init_time;
  return since.count() >= *g.lost_after_s;
}

// Runs `fn(gpu)` for a device call after the checks every call shares: initialised,
// a valid handle, the GPU still present and not lost, no injected error.
template <typename Fn>
NvmlReturn WithGpu(const char* call, NvmlDevice device, Fn fn) {
  FakeProcess& p = Process();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.init_count == 0) return nv::kErrorUninitialized;
  const auto* slot = reinterpret_cast<const Slot*>(device);
  if (slot < p.slots || slot >= p.slots + faultline::fake_nvml::kMaxGpus) return nv::kErrorInvalidArgument;
  if (slot->index >= p.state.gpus.size()) return nv::kErrorGpuIsLost;  // gone since the handle was issued
  const FakeGpu& g = p.state.gpus[slot->index];
  if (IsLost(p, g)) return g.lost_code;
  if (NvmlReturn rc = InjectedError(p.state.errors, call); rc != nv::kSuccess) return rc;
  if (NvmlReturn rc = InjectedError(g.errors, call); rc != nv::kSuccess) return rc;
  return fn(g);
}

template <typename T, typename V>
NvmlReturn Put(const std::optional<V>& v, T* out) {
  if (out == nullptr) return nv::kErrorInvalidArgument;
  if (!v) return nv::kErrorNotSupported;
  *out = static_cast<T>(*v);
  return nv::kSuccess;
}

NvmlReturn PutString(const std::optional<std::string>& v, char* out, unsigned int length) {
  if (out == nullptr) return nv::kErrorInvalidArgument;
  if (!v) return nv::kErrorNotSupported;
  if (v->size() + 1 > length) return nv::kErrorInsufficientSize;
  std::memcpy(out, v->c_str(), v->size() + 1);
  return nv::kSuccess;
}

bool ValidEcc(int type, int counter) { return type >= 0 && type < 2 && counter >= 0 && counter < 2; }

}  // namespace

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_NVML_EXPORT NvmlReturn nvmlInit_v2() {
  FakeProcess& p = Process();
  std::lock_guard<std::mutex> lock(p.mu);
  const char* path = std::getenv("FAKE_NVML_STATE");
  if (path == nullptr || *path == '\0') return nv::kErrorDriverNotLoaded;  // as with no driver
  if (p.init_count > 0) {
    ++p.init_count;
    return nv::kSuccess;
  }
  p.path = path;
  p.state = FakeNvmlState{};
  if (!Refresh(p, /*first=*/true)) return nv::kErrorUnknown;
  if (NvmlReturn rc = InjectedError(p.state.errors, "nvmlInit_v2"); rc != nv::kSuccess) return rc;
  p.init_time = std::chrono::steady_clock::now();
  ++p.init_count;
  return nv::kSuccess;
}

FAKE_NVML_EXPORT NvmlReturn nvmlShutdown() {
  FakeProcess& p = Process();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.init_count == 0) return nv::kErrorUninitialized;
  --p.init_count;
  return nv::kSuccess;
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetCount_v2(unsigned int* count) {
  FakeProcess& p = Process();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.init_count == 0) return nv::kErrorUninitialized;
  if (count == nullptr) return nv::kErrorInvalidArgument;
  Refresh(p, /*first=*/false);
  if (NvmlReturn rc = InjectedError(p.state.errors, "nvmlDeviceGetCount_v2"); rc != nv::kSuccess) return rc;
  *count = static_cast<unsigned int>(p.state.gpus.size());
  return nv::kSuccess;
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetHandleByIndex_v2(unsigned int index, NvmlDevice* device) {
  FakeProcess& p = Process();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (p.init_count == 0) return nv::kErrorUninitialized;
    if (device == nullptr || index >= p.state.gpus.size()) return nv::kErrorInvalidArgument;
    Refresh(p, /*first=*/false);
  }
  NvmlDevice handle = reinterpret_cast<NvmlDevice>(&p.slots[index]);
  NvmlReturn rc = WithGpu("nvmlDeviceGetHandleByIndex_v2", handle, [](const FakeGpu&) { return nv::kSuccess; });
  if (rc == nv::kSuccess) *device = handle;
  return rc;
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetName(NvmlDevice d, char* name, unsigned int length) {
  return WithGpu("nvmlDeviceGetName", d, [&](const FakeGpu& g) { return PutString(g.name, name, length); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetUUID(NvmlDevice d, char* uuid, unsigned int length) {
  return WithGpu("nvmlDeviceGetUUID", d, [&](const FakeGpu& g) { return PutString(g.uuid, uuid, length); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetSerial(NvmlDevice d, char* serial, unsigned int length) {
  return WithGpu("nvmlDeviceGetSerial", d, [&](const FakeGpu& g) { return PutString(g.serial, serial, length); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetPciInfo_v3(NvmlDevice d, nv::NvmlPciInfo* pci) {
  return WithGpu("nvmlDeviceGetPciInfo_v3", d, [&](const FakeGpu& g) {
    if (pci == nullptr) return nv::kErrorInvalidArgument;
    *pci = nv::NvmlPciInfo{};
    if (!g.pci_bus_id) return nv::kErrorNotSupported;
    std::snprintf(pci->bus_id, sizeof(pci->bus_id), "%s", g.pci_bus_id->c_str());
    unsigned int domain = 0, bus = 0, dev = 0;
    if (std::sscanf(g.pci_bus_id->c_str(), "%x:%x:%x", &domain, &bus, &dev) == 3) {
      pci->domain = domain;
      pci->bus = bus;
      pci->device = dev;
    }
    std::snprintf(pci->bus_id_legacy, sizeof(pci->bus_id_legacy), "%04x:%02x:%02x.0", domain & 0xffff, bus & 0xff,
                  dev & 0xff);
    return nv::kSuccess;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetTotalEccErrors(NvmlDevice d, int type, int counter,
                                                        unsigned long long* count) {  // NOLINT(runtime/int)
  return WithGpu("nvmlDeviceGetTotalEccErrors", d, [&](const FakeGpu& g) {
    if (!ValidEcc(type, counter)) return nv::kErrorInvalidArgument;
    return Put(g.ecc[type][counter], count);
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetRetiredPages(NvmlDevice d, int cause, unsigned int* page_count,
                                                      unsigned long long* addresses) {  // NOLINT(runtime/int)
  return WithGpu("nvmlDeviceGetRetiredPages", d, [&](const FakeGpu& g) {
    if (page_count == nullptr || (cause != nv::kRetireMultipleSbe && cause != nv::kRetireDbe)) {
      return nv::kErrorInvalidArgument;
    }
    const auto& pages = cause == nv::kRetireDbe ? g.retired_dbe : g.retired_sbe;
    if (!pages) return nv::kErrorNotSupported;
    const unsigned int room = *page_count;
    *page_count = *pages;
    if (room == 0 || addresses == nullptr) return nv::kSuccess;  // a size query
    if (room < *pages) return nv::kErrorInsufficientSize;
    for (unsigned int i = 0; i < *pages; ++i) addresses[i] = 0x100000ull * (i + 1);  // plausible page addresses
    return nv::kSuccess;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetTemperature(NvmlDevice d, int sensor, unsigned int* temp) {
  return WithGpu("nvmlDeviceGetTemperature", d, [&](const FakeGpu& g) {
    return sensor == nv::kTemperatureGpu ? Put(g.temp_gpu, temp) : nv::kErrorInvalidArgument;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetTemperatureThreshold(NvmlDevice d, int threshold, unsigned int* temp) {
  return WithGpu("nvmlDeviceGetTemperatureThreshold", d, [&](const FakeGpu& g) {
    if (threshold == nv::kThresholdSlowdown) return Put(g.temp_slowdown, temp);
    if (threshold == nv::kThresholdShutdown) return Put(g.temp_shutdown, temp);
    return nv::kErrorNotSupported;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetPowerUsage(NvmlDevice d, unsigned int* mw) {
  return WithGpu("nvmlDeviceGetPowerUsage", d, [&](const FakeGpu& g) { return Put(g.power_mw, mw); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetEnforcedPowerLimit(NvmlDevice d, unsigned int* mw) {
  return WithGpu("nvmlDeviceGetEnforcedPowerLimit", d, [&](const FakeGpu& g) { return Put(g.power_limit_mw, mw); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetClockInfo(NvmlDevice d, int type, unsigned int* mhz) {
  return WithGpu("nvmlDeviceGetClockInfo", d, [&](const FakeGpu& g) {
    if (type == nv::kClockSm || type == nv::kClockGraphics) return Put(g.clock_sm, mhz);
    if (type == nv::kClockMem) return Put(g.clock_mem, mhz);
    return nv::kErrorNotSupported;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetCurrentClocksThrottleReasons(NvmlDevice d,
                                                                      unsigned long long* mask) {  // NOLINT
  return WithGpu("nvmlDeviceGetCurrentClocksThrottleReasons", d,
                 [&](const FakeGpu& g) { return Put(g.clock_event_reasons, mask); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetCurrPcieLinkGeneration(NvmlDevice d, unsigned int* v) {
  return WithGpu("nvmlDeviceGetCurrPcieLinkGeneration", d, [&](const FakeGpu& g) { return Put(g.pcie_gen, v); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetCurrPcieLinkWidth(NvmlDevice d, unsigned int* v) {
  return WithGpu("nvmlDeviceGetCurrPcieLinkWidth", d, [&](const FakeGpu& g) { return Put(g.pcie_width, v); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetMaxPcieLinkGeneration(NvmlDevice d, unsigned int* v) {
  return WithGpu("nvmlDeviceGetMaxPcieLinkGeneration", d, [&](const FakeGpu& g) { return Put(g.pcie_max_gen, v); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetMaxPcieLinkWidth(NvmlDevice d, unsigned int* v) {
  return WithGpu("nvmlDeviceGetMaxPcieLinkWidth", d, [&](const FakeGpu& g) { return Put(g.pcie_max_width, v); });
}

#ifndef FAKE_NVML_LEGACY
// Functions an older driver lacks (the legacy build leaves them out).

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetMemoryErrorCounter(NvmlDevice d, int type, int counter, int location,
                                                            unsigned long long* count) {  // NOLINT(runtime/int)
  return WithGpu("nvmlDeviceGetMemoryErrorCounter", d, [&](const FakeGpu& g) {
    if (!ValidEcc(type, counter)) return nv::kErrorInvalidArgument;
    const auto& by_location = g.ecc_locations[type][counter];
    auto it = by_location.find(location);
    return it == by_location.end() ? nv::kErrorNotSupported : Put(std::optional<uint64_t>(it->second), count);
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetRetiredPagesPendingStatus(NvmlDevice d, int* pending) {
  return WithGpu("nvmlDeviceGetRetiredPagesPendingStatus", d, [&](const FakeGpu& g) {
    if (!g.retired_pending) return nv::kErrorNotSupported;
    return Put(std::optional<int>(*g.retired_pending ? nv::kFeatureEnabled : nv::kFeatureDisabled), pending);
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetRemappedRows(NvmlDevice d, unsigned int* corr, unsigned int* unc,
                                                      unsigned int* pending, unsigned int* failure) {
  return WithGpu("nvmlDeviceGetRemappedRows", d, [&](const FakeGpu& g) {
    if (!corr || !unc || !pending || !failure) return nv::kErrorInvalidArgument;
    if (!g.remapped_rows) return nv::kErrorNotSupported;
    *corr = g.remapped_rows->correctable;
    *unc = g.remapped_rows->uncorrectable;
    *pending = g.remapped_rows->pending ? 1 : 0;
    *failure = g.remapped_rows->failure ? 1 : 0;
    return nv::kSuccess;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetFieldValues(NvmlDevice d, int count, nv::NvmlFieldValue* values) {
  return WithGpu("nvmlDeviceGetFieldValues", d, [&](const FakeGpu& g) {
    if (count <= 0 || values == nullptr) return nv::kErrorInvalidArgument;
    for (int i = 0; i < count; ++i) {
      nv::NvmlFieldValue& f = values[i];
      f.nvml_return = nv::kErrorNotSupported;
      if (f.field_id == nv::kFieldMemoryTemp && g.temp_memory) {
        f.value_type = nv::kValueUnsignedInt;
        f.value.ui_val = *g.temp_memory;
        f.nvml_return = nv::kSuccess;
      }
    }
    return nv::kSuccess;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetCurrentClocksEventReasons(NvmlDevice d, unsigned long long* mask) {  // NOLINT
  return WithGpu("nvmlDeviceGetCurrentClocksEventReasons", d,
                 [&](const FakeGpu& g) { return Put(g.clock_event_reasons, mask); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetPcieReplayCounter(NvmlDevice d, unsigned int* v) {
  return WithGpu("nvmlDeviceGetPcieReplayCounter", d, [&](const FakeGpu& g) { return Put(g.pcie_replay, v); });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetNvLinkState(NvmlDevice d, unsigned int link, int* active) {
  return WithGpu("nvmlDeviceGetNvLinkState", d, [&](const FakeGpu& g) {
    if (active == nullptr || link >= g.nvlinks.size()) return nv::kErrorInvalidArgument;
    *active = g.nvlinks[link].active ? nv::kFeatureEnabled : nv::kFeatureDisabled;
    return nv::kSuccess;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetNvLinkErrorCounter(NvmlDevice d, unsigned int link, int counter,
                                                            unsigned long long* value) {  // NOLINT(runtime/int)
  return WithGpu("nvmlDeviceGetNvLinkErrorCounter", d, [&](const FakeGpu& g) {
    if (value == nullptr || link >= g.nvlinks.size()) return nv::kErrorInvalidArgument;
    const auto& l = g.nvlinks[link];
    switch (counter) {
      case nv::kNvlinkDlReplay:
        *value = l.replay;
        return nv::kSuccess;
      case nv::kNvlinkDlRecovery:
        *value = l.recovery;
        return nv::kSuccess;
      case nv::kNvlinkDlCrcFlit:
        *value = l.crc_flit;
        return nv::kSuccess;
      case nv::kNvlinkDlCrcData:
        *value = l.crc_data;
        return nv::kSuccess;
      default:
        return nv::kErrorNotSupported;
    }
  });
}

// Events. The wait blocks, as a real set's does in the driver, until the state file's
// directory changes (inotify: a test or the simulator rewrites the file to inject), a
// timed event falls due, or the timeout passes; then it re-reads the state and looks
// again. Without inotify it looks every 25 ms. The agent-rest bench runs its agent against
// this library, so a wait that spun would bill the agent for the fake's own checking.
namespace {

constexpr auto kFallbackPoll = std::chrono::milliseconds(25);

FakeEventSet* FindSet(FakeProcess& p, nv::NvmlEventSet set) {
  for (FakeEventSet& s : p.event_sets) {
    if (reinterpret_cast<nv::NvmlEventSet>(&s) == set) return &s;
  }
  return nullptr;
}

double SecondsSinceInit(const FakeProcess& p) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - p.init_time).count();
}

// The next event due on `set`, marked delivered; false when none.
bool NextEvent(FakeProcess& p, FakeEventSet& set, nv::NvmlEventData* out) {
  for (const auto& [index, mask] : set.registered) {
    if (index >= p.state.gpus.size()) continue;
    const FakeGpu& g = p.state.gpus[index];
    if ((mask & nv::kEventXidCritical) == 0) continue;
    NvmlDevice device = reinterpret_cast<NvmlDevice>(&p.slots[index]);
    if (IsLost(p, g) && !set.lost_delivered.count(index)) {
      set.lost_delivered.insert(index);
      *out = nv::NvmlEventData{device, nv::kEventXidCritical, 79, 0xFFFFFFFF, 0xFFFFFFFF};
      return true;
    }
    for (size_t i = 0; i < g.xid_events.size(); ++i) {
      if (g.xid_events[i].at_s > SecondsSinceInit(p) || set.xids_delivered.count({index, i})) continue;
      set.xids_delivered.insert({index, i});
      *out = nv::NvmlEventData{device, nv::kEventXidCritical, g.xid_events[i].xid, 0xFFFFFFFF, 0xFFFFFFFF};
      return true;
    }
  }
  return false;
}

// When the next timed event on `set` falls due (a lost_after_s or an xid_events time still
// ahead); `later` when none is.
std::chrono::steady_clock::time_point NextDue(const FakeProcess& p, const FakeEventSet& set,
                                              std::chrono::steady_clock::time_point later) {
  auto due = later;
  auto at = [&](double s) {
    return p.init_time + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(s));
  };
  for (const auto& [index, mask] : set.registered) {
    if (index >= p.state.gpus.size() || (mask & nv::kEventXidCritical) == 0) continue;
    const FakeGpu& g = p.state.gpus[index];
    if (g.lost_after_s && !set.lost_delivered.count(index)) due = std::min(due, at(*g.lost_after_s));
    for (size_t i = 0; i < g.xid_events.size(); ++i) {
      if (!set.xids_delivered.count({index, i})) due = std::min(due, at(g.xid_events[i].at_s));
    }
  }
  return due;
}

// An inotify descriptor watching the directory of `path` for files written or moved in;
// -1 when inotify cannot (the wait then looks every 25 ms).
int WatchDirectory(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return -1;
  if (inotify_add_watch(fd, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sleeps until `fd` reports a change or `until` passes; drains what it reported.
void SleepUntilChange(int fd, std::chrono::steady_clock::time_point until) {
  const auto now = std::chrono::steady_clock::now();
  if (until <= now) return;
  if (fd < 0) {
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - now, kFallbackPoll));
    return;
  }
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
  pollfd pfd{fd, POLLIN, 0};
  if (poll(&pfd, 1, static_cast<int>(std::min<int64_t>(ms, 1 << 30))) > 0) {
    alignas(inotify_event) char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
  }
}

}  // namespace

FAKE_NVML_EXPORT NvmlReturn nvmlEventSetCreate(nv::NvmlEventSet* set) {
  FakeProcess& p = Process();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.init_count == 0) return nv::kErrorUninitialized;
  if (set == nullptr) return nv::kErrorInvalidArgument;
  if (NvmlReturn rc = InjectedError(p.state.errors, "nvmlEventSetCreate"); rc != nv::kSuccess) return rc;
  if (p.event_sets.size() >= 64) return nv::kErrorMemory;  // bounded, as a real library is
  p.event_sets.emplace_back();
  *set = reinterpret_cast<nv::NvmlEventSet>(&p.event_sets.back());
  return nv::kSuccess;
}

FAKE_NVML_EXPORT NvmlReturn nvmlEventSetFree(nv::NvmlEventSet set) {
  FakeProcess& p = Process();
  std::lock_guard<std::mutex> lock(p.mu);
  for (auto it = p.event_sets.begin(); it != p.event_sets.end(); ++it) {
    if (reinterpret_cast<nv::NvmlEventSet>(&*it) == set) {
      p.event_sets.erase(it);
      return nv::kSuccess;
    }
  }
  return nv::kErrorInvalidArgument;
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceGetSupportedEventTypes(NvmlDevice d, unsigned long long* types) {  // NOLINT
  return WithGpu("nvmlDeviceGetSupportedEventTypes", d, [&](const FakeGpu& g) {
    if (types == nullptr) return nv::kErrorInvalidArgument;
    *types = g.event_types;
    return nv::kSuccess;
  });
}

FAKE_NVML_EXPORT NvmlReturn nvmlDeviceRegisterEvents(NvmlDevice d, unsigned long long types,  // NOLINT
                                                     nv::NvmlEventSet set) {
  const unsigned index = reinterpret_cast<const Slot*>(d) - Process().slots;
  NvmlReturn rc = WithGpu("nvmlDeviceRegisterEvents", d, [&](const FakeGpu& g) {
    return (types & ~g.event_types) != 0 ? nv::kErrorNotSupported : nv::kSuccess;
  });
  if (rc != nv::kSuccess) return rc;
  FakeProcess& p = Process();
  std::lock_guard<std::mutex> lock(p.mu);
  FakeEventSet* s = FindSet(p, set);
  if (s == nullptr) return nv::kErrorInvalidArgument;
  s->registered[index] |= types;
  return nv::kSuccess;
}

FAKE_NVML_EXPORT NvmlReturn nvmlEventSetWait_v2(nv::NvmlEventSet set, nv::NvmlEventData* data,
                                                unsigned int timeout_ms) {
  if (data == nullptr) return nv::kErrorInvalidArgument;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // Watching before the first look: a rewrite between the look and the sleep still wakes it.
  int watch = -1;
  {
    FakeProcess& p = Process();
    std::lock_guard<std::mutex> lock(p.mu);
    FakeEventSet* s = FindSet(p, set);
    if (s != nullptr && timeout_ms > 0 && !s->watch_tried) {
      s->watch_tried = true;
      s->watch = WatchDirectory(p.path);
    }
    if (s != nullptr) watch = s->watch;
  }
  NvmlReturn rc = nv::kErrorTimeout;
  for (;;) {
    auto until = end;
    {
      FakeProcess& p = Process();
      std::lock_guard<std::mutex> lock(p.mu);
      if (p.init_count == 0) {
        rc = nv::kErrorUninitialized;
        break;
      }
      if (rc = InjectedError(p.state.errors, "nvmlEventSetWait_v2"); rc != nv::kSuccess) break;
      FakeEventSet* s = FindSet(p, set);
      if (s == nullptr) {
        rc = nv::kErrorInvalidArgument;
        break;
      }
      Refresh(p, /*first=*/false);  // a test or the simulator rewrites the state to inject
      if (NextEvent(p, *s, data)) break;
      until = NextDue(p, *s, end);
    }
    rc = nv::kErrorTimeout;
    if (std::chrono::steady_clock::now() >= end) break;
    SleepUntilChange(watch, until);
  }
  return rc;
}

#endif  // FAKE_NVML_LEGACY
