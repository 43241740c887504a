#include "engine/detect/kernel_detector.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "engine/detect/critical.h"  // IsFatalAer: one definition for the detector and the wake-up
#include "engine/detect/gpu_identity.h"
#include "engine/detect/kernel_state.h"
#include "parse/kernel_line.h"
#include "parse/xid_catalog.h"

namespace faultline {

using kernel::AddObservation;
using kernel::BoundedMap;
using kernel::EvidencePolicy;
using kernel::MergeFinding;
using kernel::SetEventKey;
using kernel::StartFinding;

namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;
constexpr size_t kMaxSetEntries = 32;      // pids / names / ports remembered per group
constexpr size_t kMaxStormEntries = 4096;  // corrected-AER window entries per device
constexpr size_t kMaxIndexEntries = 4096;  // pid counts, events, program->GPU index
// Below this (2001-01-01) a line time is kernel monotonic (time since boot), not wall
// clock: the horizon compares each time with the newest of its own base.
constexpr int64_t kWallClockFloorNs = 978'307'200'000'000'000;

// The kernel log's events plus the driver's GPU identity lines (bus id -> UUID, serial).
bool IsKernelKind(ObsKind k) { return IsKernelEventKind(k) || k == ObsKind::kGpuIdentity; }

std::string Attr(const Observation& o, const char* key) {
  auto it = o.attrs.find(key);
  return it == o.attrs.end() ? std::string() : it->second;
}

std::string Key(const ComponentRef& c, const char* key) {
  auto it = c.keys.find(key);
  return it == c.keys.end() ? std::string() : it->second;
}

// The GPU a kernel line names: its normalized bus id ("" for a line with no bus id).
std::string GpuBdf(const Observation& o) {
  std::string bdf = Key(o.component, "bdf");
  return bdf.empty() && o.component.type == ComponentType::kGpu ? o.component.name : bdf;
}

uint32_t ParseU32(const std::string& s) {
  uint32_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

void InsertCapped(std::set<std::string>& set, const std::string& v) {
  if (set.size() < kMaxSetEntries || set.count(v)) set.insert(v);
}

// "GPU 3 (0000:b5:00.0, serial 1320220053911)" or "GPU at 0000:b5:00.0".
std::string GpuLabel(const ComponentRef& c) {
  std::string bdf = Key(c, "bdf");
  if (c.name == bdf) return "GPU at " + bdf;
  std::string label = "GPU " + c.name + " (" + bdf;
  if (std::string serial = Key(c, "serial"); !serial.empty()) label += ", serial " + serial;
  return label + ")";
}

std::string XidLabel(int64_t code) {
  const XidInfo* info = FindXid(static_cast<int>(code));
  std::string s = "XID " + std::to_string(code);
  if (info) s += " (" + std::string(info->description) + ")";
  return s;
}

std::string Program(const Observation& o) {
  std::string p = Attr(o, "process");
  if (!p.empty()) return p;
  std::string pid = Attr(o, "pid");
  return pid.empty() ? std::string() : "pid " + pid;
}

bool IsMemoryXid(int64_t c) { return c == 48 || c == 63 || c == 64; }
bool IsProgramXid(int64_t c) { return c == 13 || c == 31; }
bool IsNvlinkXid(int64_t c) { return c == 74 || (c >= 144 && c <= 150); }

// A NIC health event that means the adapter stopped working.
bool IsNicFatal(const std::string& event, const std::string& detail) {
  if (event == "health_compromised" || event == "hw_error" || event == "fatal_error" || event == "error_state") {
    return true;
  }
  if (event != "syndrome") return false;
  for (const char* word : {"ERROR", "CRIT", "FATAL", "fatal", "internal error", "not responding", "CRC error"}) {
    if (detail.find(word) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

struct KernelDetector::State {
  struct AerDevice {
    ComponentRef comp;
    std::optional<Finding> uncorrected;
    bool fatal = false;      // some uncorrected error on it was fatal
    std::string downstream;  // the GPU that fell off right after its fatal error
    std::optional<Finding> corrected;
    std::deque<std::pair<int64_t, uint64_t>> storm;  // corrected errors inside the storm window
    uint64_t storm_sum = 0;
    uint64_t storm_best = 0;
  };
  struct OffBus {
    Finding f;
    std::string bdf;
    uint64_t link_errors = 0;
    std::string port;        // an upstream port whose errors preceded the fall
    std::string fatal_port;  // the port whose fatal error the fall followed
  };
  struct Memory {
    Finding f;
    std::string bdf;
    bool dbe = false, remap = false, remap_failed = false;
  };
  struct ProgramGroup {
    Finding f;
    std::string bdf;
    int64_t code = 0;
    std::string gpc, tpc;
    std::set<std::string> pids, names;
  };
  struct ProgramEvent {
    int64_t start = 0;
    std::string group;
  };
  struct Nvlink {
    Finding f;
    std::string bdf;
    std::string link;
    int64_t code = 0;
    std::string decoded;
  };
  struct OtherXid {
    Finding f;
    std::string bdf;
    int64_t code = 0;
  };
  struct Recovery {
    Finding f;
    std::string bdf;
    Action action = Action::kNone;
    std::string text;
  };
  struct Sxid {
    Finding f;
    XidRule rule{};
    int64_t code = 0;
    std::string link;
    std::string text;
    std::string printed;
  };
  struct HostMemory {
    Finding f;
    std::string location;
    uint64_t ue = 0, ce = 0, unknown = 0;
  };
  struct Nic {
    ComponentRef comp;
    int downs = 0;
    int64_t last_down = -1, last_up = -1;
    std::optional<Finding> power, module, link, health, cmd, tx, temperature;
    uint64_t cmd_count = 0;
    bool fatal = false;
    std::string power_text, module_text, health_text;
  };

  explicit State(const KernelDetectorOptions& o)
      : aer(o.max_groups),
        gpu_ports(o.max_groups),
        offbus(o.max_groups),
        memory(o.max_groups),
        programs(o.max_groups),
        pid_counts(kMaxIndexEntries),
        program_gpus(kMaxIndexEntries),
        events(kMaxIndexEntries),
        nvlink(o.max_groups),
        other(o.max_groups),
        xid45(o.max_groups),
        recovery(o.max_groups),
        sxid(o.max_groups),
        host_memory(o.max_groups),
        apps(o.max_groups),
        driver_errors(o.max_groups),
        nics(o.max_groups),
        log_ids(kMaxInventoryGpus) {}

  BoundedMap<AerDevice> aer;                       // device bdf
  BoundedMap<std::set<std::string>> gpu_ports;     // GPU bdf -> ports that reported its errors
  BoundedMap<OffBus> offbus;                       // GPU bdf
  BoundedMap<Memory> memory;                       // GPU bdf
  BoundedMap<ProgramGroup> programs;               // bdf|code|unit
  BoundedMap<uint64_t> pid_counts;                 // bdf|code|pid -> lines
  BoundedMap<std::set<std::string>> program_gpus;  // code|program -> GPUs it faulted on
  BoundedMap<ProgramEvent> events;                 // bdf|code|pid -> the exception being printed
  BoundedMap<Nvlink> nvlink;                       // bdf|link|code
  BoundedMap<OtherXid> other;                      // bdf|code
  BoundedMap<Finding> xid45;                       // bdf: XID 45 with no cause before it
  BoundedMap<Recovery> recovery;                   // bdf: XID 154
  BoundedMap<Sxid> sxid;                           // switch|code|link
  BoundedMap<HostMemory> host_memory;              // DIMM location ("" = not named)
  BoundedMap<Finding> apps;                        // process|event
  std::optional<Finding> hangs;
  BoundedMap<Finding> driver_errors;  // event|bdf
  BoundedMap<Nic> nics;               // component id
  BoundedMap<GpuIdentity> log_ids;    // bdf -> the log's own identity lines

  // Calls f on every per-event map (every one but log_ids, which names GPUs): the one
  // list the horizon sweep and StateSize both walk, so a rule's new map joins both.
  // (`s` is a State or a const State.)
  template <typename S, typename F>
  static void ForEachEventMap(S& s, F&& f) {
    f(s.aer), f(s.gpu_ports), f(s.offbus), f(s.memory), f(s.programs), f(s.pid_counts), f(s.program_gpus),
        f(s.events), f(s.nvlink), f(s.other), f(s.xid45), f(s.recovery), f(s.sxid), f(s.host_memory), f(s.apps),
        f(s.driver_errors), f(s.nics);
  }

  // The newest line time seen in each time base (wall clock; kernel monotonic for lines
  // that carry no wall time), and where each stood at the last sweep (horizon_ns).
  int64_t newest_wall = 0, newest_mono = 0;
  int64_t swept_wall = 0, swept_mono = 0;
};

namespace {

using State = KernelDetector::State;

// Observe(): one function per family of observations; each folds the observation into
// its rule's bounded state and never revisits history.
class Folder {
 public:
  Folder(const KernelDetectorOptions& options, State& state)
      : o_(options), s_(state), policy_{options.max_evidence, options.max_evidence_bytes} {}

  void Fold(const Observation& obs) {
    switch (obs.kind) {
      case ObsKind::kGpuIdentity:
        return Identity(obs);
      case ObsKind::kPcieAer:
        return Aer(obs);
      case ObsKind::kGpuFellOffBus:
        return OffBus(obs);
      case ObsKind::kXid:
        return Xid(obs);
      case ObsKind::kXidRecoveryAction:
        return Recovery(obs);
      case ObsKind::kSxid:
        return Sxid(obs);
      case ObsKind::kHostMemoryError:
        return HostMemory(obs);
      case ObsKind::kAppFault:
        return AppFault(obs);
      case ObsKind::kKernelHang:
        return Hang(obs);
      case ObsKind::kDriverError:
        return Group(s_.driver_errors, Attr(obs, "event") + "|" + GpuBdf(obs), obs, FaultClass::kDriverFault,
                     Action::kRebootNode, Severity::kCritical, 0.85);
      case ObsKind::kNicEvent:
        return Nic(obs);
      default:
        return;
    }
  }

 private:
  void Identity(const Observation& obs) {
    GpuIdentity& g = s_.log_ids.Get(obs.component.name, SortTimeNs(obs));
    g.bdf = obs.component.name;
    if (std::string uuid = Attr(obs, "uuid"); !uuid.empty()) g.uuid = uuid;
    if (std::string serial = Attr(obs, "serial"); !serial.empty()) g.serial = serial;
  }

  void Group(BoundedMap<Finding>& map, const std::string& key, const Observation& obs, FaultClass fc, Action action,
             Severity sev, double confidence) {
    bool fresh = false;
    Finding& f = map.Get(key, SortTimeNs(obs), fresh);
    if (fresh) {
      f = StartFinding(obs, fc, Layer::kOs, action, sev, confidence);
      SetEventKey(f, &map == &s_.xid45 ? "xid45" : "driver", key, obs);
    }
    AddObservation(f, obs, policy_);
  }

  void AppFault(const Observation& obs) {
    bool fresh = false;
    Finding& f = s_.apps.Get(Attr(obs, "process") + "|" + Attr(obs, "event"), SortTimeNs(obs), fresh);
    if (fresh) {
      f = StartFinding(obs, FaultClass::kUserApplication, Layer::kOs, Action::kNotifyUser, Severity::kWarning, 0.8);
      SetEventKey(f, "app", Attr(obs, "process") + "|" + Attr(obs, "event"), obs);
      const std::string process = Attr(obs, "process"), pid = Attr(obs, "pid"), lib = Attr(obs, "library");
      f.attrs["process"] = process;
      f.summary = "Program " + (process.empty() ? std::string("(unnamed)") : process) +
                  (pid.empty() ? "" : " (pid " + pid + ")") + ": " + Attr(obs, "event") +
                  (lib.empty() ? "" : " in " + lib) + ": a program fault, not hardware; tell the job owner.";
    }
    AddObservation(f, obs, policy_);
  }

  void Hang(const Observation& obs) {
    if (!s_.hangs) {
      s_.hangs = StartFinding(obs, FaultClass::kDriverFault, Layer::kOs, Action::kMonitor, Severity::kWarning, 0.4);
      SetEventKey(*s_.hangs, "hang", "", obs);
    }
    AddObservation(*s_.hangs, obs, policy_);
  }

  void Aer(const Observation& obs) {
    const int64_t t = SortTimeNs(obs);
    bool fresh = false;
    State::AerDevice& dev = s_.aer.Get(obs.component.name, t, fresh);
    if (fresh) dev.comp = obs.component;
    if (std::string port = Attr(obs, "reporting_port"); !port.empty() && port != obs.component.name) {
      InsertCapped(s_.gpu_ports.Get(obs.component.name, t), port);
    }
    if (Attr(obs, "severity").rfind("Corrected", 0) != 0) {
      if (!dev.uncorrected) {
        dev.uncorrected = StartFinding(obs, FaultClass::kPcieLinkDegraded, Layer::kFabric, Action::kReseatOrReplaceLink,
                                       Severity::kCritical, 0.8);
        SetEventKey(*dev.uncorrected, "aer_uncorrected", obs.component.name, obs);
      }
      AddObservation(*dev.uncorrected, obs, policy_);
      dev.fatal = dev.fatal || IsFatalAer(obs);
      return;
    }
    if (!dev.corrected) {
      dev.corrected =
          StartFinding(obs, FaultClass::kPcieLinkDegraded, Layer::kFabric, Action::kMonitor, Severity::kWarning, 0.7);
      SetEventKey(*dev.corrected, "aer_corrected", obs.component.name, obs);
    }
    AddObservation(*dev.corrected, obs, policy_);
    // Corrected errors inside the storm window: a running sum, the best window kept.
    dev.storm.emplace_back(t, obs.count);
    dev.storm_sum += obs.count;
    while (!dev.storm.empty() && t - dev.storm.front().first > o_.aer_storm_window_ns) {
      dev.storm_sum -= dev.storm.front().second;
      dev.storm.pop_front();
    }
    if (dev.storm.size() > kMaxStormEntries) {  // fold the two oldest: the sum stays exact
      auto first = dev.storm.front();
      dev.storm.pop_front();
      dev.storm.front().second += first.second;
    }
    dev.storm_best = std::max(dev.storm_best, dev.storm_sum);
  }

  void OffBus(const Observation& obs) {
    const std::string bdf = GpuBdf(obs);
    const int64_t t = SortTimeNs(obs);
    bool fresh = false;
    State::OffBus& off = s_.offbus.Get(bdf, t, fresh);
    if (fresh) {
      // NVIDIA's recovery for XID 79 is a restart of the bare-metal node (the policy drains
      // first); CONTACT_SUPPORT when it recurs.
      off.f = StartFinding(obs, FaultClass::kGpuFellOffBus, Layer::kOs, Action::kRebootNode, Severity::kFatal, 0.9);
      SetEventKey(off.f, "offbus", bdf, obs);
      off.bdf = bdf;
      AbsorbLinkErrors(off, t);
      LinkFatalPort(off, t);
    }
    AddObservation(off.f, obs, policy_);
  }

  // AER errors on the GPU's own function or a port that reported them, shortly before
  // the fall, are evidence of it (the link failed), not a separate fault. A port's own
  // fatal error stays a finding on the port (LinkFatalPort).
  void AbsorbLinkErrors(State::OffBus& off, int64_t t) {
    std::set<std::string> devices{off.bdf};
    if (const auto* ports = s_.gpu_ports.Find(off.bdf)) devices.insert(ports->begin(), ports->end());
    std::vector<Evidence> chain;
    for (const std::string& d : devices) {
      State::AerDevice* dev = s_.aer.Find(d);
      if (dev == nullptr) continue;
      const bool own = d == off.bdf;
      if (own || !dev->fatal) Absorb(dev->uncorrected, off, t, chain);
      Absorb(dev->corrected, off, t, chain);
      if (!own && off.link_errors > 0 && off.port.empty()) off.port = d;
    }
    // The newest link errors lead up to the fall; leave room for the fall's own line.
    const size_t room = o_.max_evidence > 0 ? o_.max_evidence - 1 : 0;
    if (chain.size() > room) chain.erase(chain.begin(), chain.end() - static_cast<long>(room));
    off.f.evidence.insert(off.f.evidence.begin(), chain.begin(), chain.end());
    if (off.port.empty() && off.link_errors > 0) {
      if (const auto* ports = s_.gpu_ports.Find(off.bdf); ports && !ports->empty()) off.port = *ports->begin();
    }
  }

  void Absorb(std::optional<Finding>& group, State::OffBus& off, int64_t t, std::vector<Evidence>& chain) {
    if (!group || group->last_ns > t || t - group->last_ns > o_.pair_window_ns) return;
    off.link_errors += group->count;
    chain.insert(chain.end(), group->evidence.begin(), group->evidence.end());
    const bool inside = t - group->first_ns <= o_.pair_window_ns;
    off.f.first_ns = std::min(off.f.first_ns, inside ? group->first_ns : t - o_.pair_window_ns);
    if (inside) group.reset();  // wholly explained by the fall; an older episode stays its own
  }

  // A fatal error on a port just before the GPU fell off: the port's link failed and the
  // GPU is its consequence. The port is the GPU's reporting port when the log said so,
  // else (topology unknown) the most recent port with a fatal error in the window.
  void LinkFatalPort(State::OffBus& off, int64_t t) {
    const auto* ports = s_.gpu_ports.Find(off.bdf);
    std::string best;
    int64_t best_t = 0;
    for (auto& [name, entry] : s_.aer.entries()) {
      State::AerDevice& dev = entry.value;
      if (name == off.bdf || !dev.fatal || !dev.uncorrected) continue;
      const int64_t last = dev.uncorrected->last_ns;
      if (last > t || t - last > o_.fatal_link_window_ns) continue;
      const bool known = ports && ports->count(name);
      const bool unknown_topology = (!ports || ports->empty()) && Key(dev.comp, "driver") == "pcieport";
      if (!known && !unknown_topology) continue;
      if (best.empty() || last > best_t) best = name, best_t = last;
    }
    if (best.empty()) return;
    off.fatal_port = best;
    State::AerDevice* dev = s_.aer.Find(best);
    if (dev->downstream.empty()) dev->downstream = off.bdf;
  }

  void Xid(const Observation& obs) {
    if (!obs.code) return;
    const int64_t code = *obs.code;
    if (code == 79) return OffBus(obs);
    if (code == 45) return Xid45(obs);
    if (IsMemoryXid(code)) return MemoryXid(obs);
    if (IsProgramXid(code)) return ProgramXid(obs);
    if (IsNvlinkXid(code)) return NvlinkXid(obs);
    OtherXid(obs);
  }

  void MemoryXid(const Observation& obs) {
    const std::string bdf = GpuBdf(obs);
    bool fresh = false;
    State::Memory& m = s_.memory.Get(bdf, SortTimeNs(obs), fresh);
    if (fresh) {
      m.f = StartFinding(obs, FaultClass::kHbmUncorrectable, Layer::kGpu, Action::kResetGpu, Severity::kCritical, 0.85);
      SetEventKey(m.f, "memory", bdf, obs);
      m.bdf = bdf;
    }
    m.dbe |= *obs.code == 48;
    m.remap |= *obs.code == 63;
    m.remap_failed |= *obs.code == 64;
    AddObservation(m.f, obs, policy_);
  }

  void ProgramXid(const Observation& obs) {
    const std::string bdf = GpuBdf(obs);
    const int64_t code = *obs.code;
    const int64_t t = SortTimeNs(obs);
    const std::string pid = Attr(obs, "pid");
    const std::string prefix = bdf + "|" + std::to_string(code) + "|";
    // The lines one exception prints (GPC/TPC line, ESR line) from one pid join one group.
    std::string group_key = prefix + (code == 13 ? Attr(obs, "gpc") + "/" + Attr(obs, "tpc") : "");
    if (!pid.empty()) {
      State::ProgramEvent& ev = s_.events.Get(prefix + pid, t);
      if (!ev.group.empty() && t >= ev.start && t - ev.start <= o_.event_window_ns && s_.programs.Find(ev.group)) {
        group_key = ev.group;
      } else {
        ev = {t, group_key};
      }
      s_.pid_counts.Get(prefix + pid, t) += std::max<uint64_t>(1, obs.count);
    }
    bool fresh = false;
    State::ProgramGroup& g = s_.programs.Get(group_key, t, fresh);
    if (fresh) {
      g.f = StartFinding(obs, FaultClass::kUserApplication, Layer::kOs, Action::kNotifyUser, Severity::kWarning, 0.8);
      // The group (GPU, code, unit) and the time of its first line: the ESR line that
      // joins it, or a second process on the same unit, never changes the identity.
      SetEventKey(g.f, "program", group_key, obs);
      g.bdf = bdf;
      g.code = code;
      g.gpc = Attr(obs, "gpc");
      g.tpc = Attr(obs, "tpc");
    }
    if (!pid.empty()) InsertCapped(g.pids, pid);
    const std::string name = Program(obs);
    InsertCapped(g.names, name);
    InsertCapped(s_.program_gpus.Get(std::to_string(code) + "|" + name, t), bdf);
    AddObservation(g.f, obs, policy_);
  }

  void NvlinkXid(const Observation& obs) {
    const int64_t code = *obs.code;
    const std::string bdf = GpuBdf(obs);
    const std::string link = Attr(obs, "link");
    XidRule rule = RuleForXid(static_cast<int>(code));
    Action action = rule.action;
    Severity sev = rule.severity;
    std::string decoded;
    bool awaits154 = false;
    if (code >= 144 && !Attr(obs, "intr_info").empty()) {
      auto d = DecodeNvlinkXid(static_cast<int>(code), ParseU32(Attr(obs, "intr_info")),
                               ParseU32(Attr(obs, "error_status")));
      if (d.matched) {
        decoded = std::string(d.unit) + ", " + std::string(d.severity) + ", " + std::string(d.bucket);
        if (d.bucket == "RESET_GPU") action = Action::kResetGpu, sev = Severity::kCritical;
        // NVIDIA: "evaluate the following XID 154": the driver decides; until it does,
        // the job is what the error hit (the XID 154 rule raises it when it arrives).
        if (d.bucket == "XID_154_EVAL") action = Action::kRestartJob, sev = Severity::kWarning, awaits154 = true;
        if (d.bucket == "IGNORE") action = Action::kMonitor, sev = Severity::kInfo;
      }
    }
    if (decoded.empty() && Attr(obs, "severity") == "Fatal") action = Action::kResetGpu, sev = Severity::kCritical;
    bool fresh = false;
    State::Nvlink& n = s_.nvlink.Get(bdf + "|" + link + "|" + std::to_string(code), SortTimeNs(obs), fresh);
    if (fresh) {
      n.f = StartFinding(obs, FaultClass::kNvlinkErrors, Layer::kFabric, action, sev, 0.75);
      SetEventKey(n.f, "nvlink", bdf + "|" + link + "|" + std::to_string(code), obs);
      n.bdf = bdf;
      n.link = link;
      n.code = code;
      n.decoded = decoded;
    }
    if (action > n.f.action) n.f.action = action, n.f.severity = sev;
    if (awaits154) n.f.attrs["awaits_xid154"] = "true";
    AddObservation(n.f, obs, policy_);
  }

  void OtherXid(const Observation& obs) {
    const XidRule rule = RuleForXid(static_cast<int>(*obs.code));
    if (rule.fault_class == FaultClass::kNone) return;  // NVIDIA: IGNORE; informational
    const std::string bdf = GpuBdf(obs);
    bool fresh = false;
    State::OtherXid& x = s_.other.Get(bdf + "|" + std::to_string(*obs.code), SortTimeNs(obs), fresh);
    if (fresh) {
      x.f = StartFinding(obs, rule.fault_class, rule.layer, rule.action, rule.severity, rule.hardware ? 0.75 : 0.7);
      SetEventKey(x.f, "xid", bdf + "|" + std::to_string(*obs.code), obs);
      x.bdf = bdf;
      x.code = *obs.code;
      if (std::string p = Attr(obs, "process"); !p.empty()) x.f.attrs["process"] = p;
    }
    AddObservation(x.f, obs, policy_);
  }

  // The most severe finding in the making on this GPU whose span covers t (+ window).
  Finding* CauseFor45(const std::string& bdf, int64_t t) {
    Finding* best = nullptr;
    auto consider = [&](Finding& f) {
      if (f.first_ns <= t && t <= f.last_ns + o_.sympathetic_window_ns && (!best || f.severity > best->severity)) {
        best = &f;
      }
    };
    if (auto* off = s_.offbus.Find(bdf)) consider(off->f);
    if (auto* m = s_.memory.Find(bdf)) consider(m->f);
    const std::string prefix = bdf + "|";
    auto scan = [&](auto& map) {
      auto& entries = map.entries();
      for (auto it = entries.lower_bound(prefix); it != entries.end() && it->first.rfind(prefix, 0) == 0; ++it) {
        consider(it->second.value.f);
      }
    };
    scan(s_.programs);
    scan(s_.nvlink);
    scan(s_.other);
    return best;
  }

  void Xid45(const Observation& obs) {
    const std::string bdf = GpuBdf(obs);
    if (Finding* cause = CauseFor45(bdf, SortTimeNs(obs))) {
      AddObservation(*cause, obs, policy_);
      std::string& n = cause->attrs["sympathetic_xid45"];
      n = std::to_string((n.empty() ? 0 : std::stoull(n)) + obs.count);
      return;
    }
    const XidRule r = RuleForXid(45);
    Group(s_.xid45, bdf, obs, r.fault_class, r.action, r.severity, 0.5);
  }

  void Recovery(const Observation& obs) {
    // The driver prints small codes; anything else (hostile, corrupt) is no action.
    const double v = obs.value.value_or(-1);
    auto action = RecoveryActionFor(v >= 0 && v <= 255 ? static_cast<int>(v) : -1);
    if (!action || *action == Action::kNone) return;
    const std::string bdf = GpuBdf(obs);
    bool fresh = false;
    State::Recovery& r = s_.recovery.Get(bdf, SortTimeNs(obs), fresh);
    if (fresh) {
      r.f = StartFinding(obs, FaultClass::kDriverFault, Layer::kOs, *action, Severity::kCritical, 0.6);
      SetEventKey(r.f, "recovery", bdf, obs);
      r.bdf = bdf;
    }
    r.action = std::max(r.action, *action);
    r.text = Attr(obs, "recovery_action");
    AddObservation(r.f, obs, policy_);
  }

  void Sxid(const Observation& obs) {
    if (!obs.code) return;
    const std::string printed = Attr(obs, "severity");
    const XidRule rule = RuleForSxid(static_cast<int>(*obs.code), printed);
    if (rule.fault_class == FaultClass::kNone) return;  // NVIDIA: corrected / safe to ignore
    const std::string link = Attr(obs, "link");
    bool fresh = false;
    State::Sxid& x =
        s_.sxid.Get(obs.component.Id() + "|" + std::to_string(*obs.code) + "|" + link, SortTimeNs(obs), fresh);
    if (fresh) {
      x.f = StartFinding(obs, rule.fault_class, rule.layer, rule.action, rule.severity, 0.75);
      SetEventKey(x.f, "sxid", obs.component.Id() + "|" + std::to_string(*obs.code) + "|" + link, obs);
      if (!link.empty() && link != "-1") x.f.component.keys["link"] = link;
      x.rule = rule;
      x.code = *obs.code;
      x.link = link;
      x.text = obs.text;
      x.printed = printed;
    }
    AddObservation(x.f, obs, policy_);
  }

  void HostMemory(const Observation& obs) {
    // EDAC and firmware-first (GHES) records carry their severity and DIMM in the line.
    const bool edac = Attr(obs, "event") == "edac" || Attr(obs, "event") == "ghes";
    const std::string sev = edac ? Attr(obs, "severity") : std::string(McaSeverity(obs.text));
    const std::string location = edac ? std::string(MemoryErrorLocation(obs.text)) : std::string();
    bool fresh = false;
    State::HostMemory& h = s_.host_memory.Get(location, SortTimeNs(obs), fresh);
    if (fresh) {
      h.f = StartFinding(obs, FaultClass::kHostMemory, Layer::kOs, Action::kMonitor, Severity::kWarning, 0.8);
      SetEventKey(h.f, "host_memory", location, obs);
      h.location = location;
    }
    // The EDAC line's own count ("3 CE"), kept sane whatever the input says.
    const double v = obs.value.value_or(1.0);
    const double printed = v >= 1.0 ? std::min(v, 1e6) : 1.0;  // NaN and nonsense count once
    const uint64_t errors = static_cast<uint64_t>(printed) * obs.count;
    if (sev == "UE") {
      h.ue += obs.count;
    } else if (sev == "CE") {
      h.ce += errors;
    } else {
      h.unknown += obs.count;
    }
    AddObservation(h.f, obs, policy_);
  }

  void Nic(const Observation& obs) {
    const int64_t t = SortTimeNs(obs);
    bool fresh = false;
    State::Nic& nic = s_.nics.Get(obs.component.Id(), t, fresh);
    if (fresh) nic.comp = obs.component;
    const std::string ev = Attr(obs, "event");
    const std::string detail = Attr(obs, "detail");
    auto grow = [&](std::optional<Finding>& f, FaultClass fc, Action a, Severity s) {
      if (!f) {
        f = StartFinding(obs, fc, Layer::kFabric, a, s, 0.7);
        SetEventKey(*f, "nic_" + ev, obs.component.Id(), obs);
      }
      AddObservation(*f, obs, policy_);
    };
    if (ev == "slot_power") {
      if (!nic.power) nic.power_text = Attr(obs, "power");
      grow(nic.power, FaultClass::kPowerInsufficient, Action::kReseatOrReplaceLink, Severity::kCritical);
    } else if (ev == "module") {
      // "Cable plugged" is a cable coming back, not a fault.
      if (detail.find("plugged") != std::string::npos && detail.find("unplugged") == std::string::npos) return;
      if (!nic.module) nic.module_text = detail;
      // A module pulled out leaves no link: named as errors, the port would get the plan of a
      // noisy link until the port-state poll caught up.
      const bool unplugged = detail.find("unplugged") != std::string::npos;
      grow(nic.module, unplugged ? FaultClass::kIbLinkDown : FaultClass::kIbLinkErrors, Action::kReseatOrReplaceLink,
           Severity::kWarning);
      if (unplugged) nic.module->fault_class = FaultClass::kIbLinkDown;
    } else if (ev == "link_down" || ev == "link_up") {
      if (ev == "link_down") nic.downs += static_cast<int>(obs.count), nic.last_down = kernel::LastTimeOf(obs);
      if (ev == "link_up") nic.last_up = kernel::LastTimeOf(obs);
      grow(nic.link, FaultClass::kIbLinkDown, Action::kMonitor, Severity::kWarning);
    } else if (ev == "fw_cmd_timeout") {
      nic.cmd_count += obs.count;
      grow(nic.cmd, FaultClass::kDriverFault, Action::kMonitor, Severity::kWarning);
    } else if (ev == "tx_timeout") {
      grow(nic.tx, FaultClass::kIbLinkErrors, Action::kMonitor, Severity::kWarning);
    } else if (ev == "temperature") {
      grow(nic.temperature, FaultClass::kCoolingDegraded, Action::kMonitor, Severity::kWarning);
    } else if (IsNicFatal(ev, detail)) {
      if (!nic.fatal) nic.health_text = detail;
      nic.fatal = true;
      grow(nic.health, FaultClass::kIbLinkDown, Action::kRebootNode, Severity::kCritical);
    } else if (nic.health && (ev == "syndrome" || ev == "fw_state")) {
      AddObservation(*nic.health, obs, policy_);  // the health report's detail lines
    }
  }

  const KernelDetectorOptions& o_;
  State& s_;
  EvidencePolicy policy_;
};

// Findings(): turns the state into findings. Pure: reads the state, builds new values.
class Assembler {
 public:
  Assembler(const KernelDetectorOptions& options, const State& state, const Inventory& inv)
      : o_(options), s_(state), inv_(inv), policy_{options.max_evidence, options.max_evidence_bytes} {}

  std::vector<Finding> Run() {
    OffBus();
    Memory();
    Programs();
    Nvlink();
    Other();
    Xid45();
    Recovery();
    Aer();
    Sxid();
    HostMemory();
    AppsHangsDrivers();
    Nics();
    return Unique(std::move(out_));
  }

 private:
  // The inventory's name for a GPU, with the finding's own extra keys kept.
  ComponentRef Gpu(const std::string& bdf, const ComponentRef& seen) const {
    if (bdf.empty()) return seen;
    ComponentRef ref = inv_.GpuAt(bdf);
    for (const auto& [k, v] : seen.keys) ref.keys.emplace(k, v);
    return ref;
  }

  // Evidence lines name the GPU as the inventory does, like the finding.
  static void RenameEvidence(Finding& f, const std::string& seen_id) {
    const std::string id = f.component.Id();
    if (id == seen_id) return;
    for (Evidence& e : f.evidence) {
      if (e.component == seen_id) e.component = id;
    }
  }

  Finding OnGpu(const Finding& acc, const std::string& bdf) const {
    Finding f = acc;
    const std::string seen = f.component.Id();
    f.component = Gpu(bdf, f.component);
    RenameEvidence(f, seen);
    return f;
  }

  void OffBus() {
    for (const auto& [bdf, entry] : s_.offbus.entries()) {
      const State::OffBus& off = entry.value;
      Finding f = OnGpu(off.f, off.bdf);
      const std::string label = GpuLabel(f.component);
      if (!off.fatal_port.empty()) {
        f.component.keys.emplace("upstream_port", off.fatal_port);
        f.attrs["link_fault"] = off.fatal_port;
        f.action = Action::kDrain;  // the link is the part to fix, not a restart
        f.confidence = 0.85;
        f.summary = label + " fell off the bus right after a fatal PCIe error on its upstream port " + off.fatal_port +
                    ": the link failed and the GPU is its consequence; drain, then reseat/replace the link (riser, "
                    "slot, cable) before any GPU RMA.";
      } else if (off.link_errors == 0) {
        f.summary = label +
                    " has fallen off the bus (XID 79) with no PCIe AER errors logged before it: suspect the GPU or "
                    "its power; drain and restart the node (NVIDIA's recovery for XID 79), check the BMC "
                    "power/thermal data, and reseat or RMA the GPU if it falls off again.";
      } else {
        if (!off.port.empty()) f.component.keys["upstream_port"] = off.port;
        f.attrs["link_errors_before"] = std::to_string(off.link_errors);
        f.attrs["part"] = off.port.empty() ? "PCIe link of " + off.bdf : "PCIe link " + off.port + " -> " + off.bdf;
        f.action = Action::kDrain;
        f.summary = label + " fell off the bus after " + std::to_string(off.link_errors) +
                    " PCIe AER error(s) on its link" + (off.port.empty() ? "" : " (upstream port " + off.port + ")") +
                    ": suspect the PCIe link, riser or slot; drain, then reseat/replace the link before any GPU RMA.";
        f.confidence = 0.85;
      }
      out_.push_back(std::move(f));
    }
  }

  void Memory() {
    for (const auto& [bdf, entry] : s_.memory.entries()) {
      const State::Memory& m = entry.value;
      Finding f = OnGpu(m.f, m.bdf);
      const std::string label = GpuLabel(f.component);
      if (m.dbe && (m.remap || m.remap_failed)) {
        f.fault_class = FaultClass::kHbmUncorrectable, f.layer = Layer::kGpu, f.action = Action::kDrain;
        f.severity = Severity::kCritical, f.confidence = 0.9;
        f.attrs["then"] = "reset_gpu";
        f.summary =
            label + ": double-bit ECC error (XID 48) with row remapping (XID " +
            std::string(m.remap_failed ? "64, remap FAILED" : "63") +
            "): drain the node, then reset the GPU to apply the remap" +
            (m.remap_failed ? "; a remap failure means spare rows are exhausted: confirm with NVML and RMA." : ".");
      } else if (m.dbe) {
        f.summary = label + ": double-bit (uncorrectable) ECC error (XID 48): reset the GPU.";
      } else {
        const XidRule r = RuleForXid(m.remap_failed ? 64 : 63);
        f.fault_class = r.fault_class, f.layer = r.layer, f.action = r.action, f.severity = r.severity;
        f.confidence = 0.75;
        f.summary = label + (m.remap_failed ? ": row remapping failure (XID 64): spare rows exhausted; drain, confirm "
                                              "with NVML remapped-rows state, then RMA."
                                            : ": row remap event (XID 63): reset the GPU to apply it.");
      }
      out_.push_back(std::move(f));
    }
  }

  bool RepeatsInOneProcess(const State::ProgramGroup& g) const {
    const std::string prefix = g.bdf + "|" + std::to_string(g.code) + "|";
    for (const std::string& pid : g.pids) {
      if (const uint64_t* n = s_.pid_counts.Find(prefix + pid); n && *n >= 2) return true;
    }
    return false;
  }

  bool FaultsElsewhere(const State::ProgramGroup& g) const {
    for (const std::string& name : g.names) {
      const auto* gpus = s_.program_gpus.Find(std::to_string(g.code) + "|" + name);
      if (gpus && (gpus->size() > 1 || (gpus->size() == 1 && !gpus->count(g.bdf)))) return true;
    }
    return false;
  }

  void Programs() {
    for (const auto& [key, entry] : s_.programs.entries()) {
      const State::ProgramGroup& g = entry.value;
      Finding f = OnGpu(g.f, g.bdf);
      // XID 13 names the unit (GPC/TPC): one unit failing under different processes points
      // at the silicon. XID 31 (or 13 without a unit) names none: the same program
      // restarted is still the program, so it takes different programs.
      const bool unit_known = g.code == 13 && !g.gpc.empty();
      const bool several = unit_known ? g.pids.size() >= 2 : g.names.size() >= 2;
      std::string where = GpuLabel(f.component);
      if (unit_known) where += " GPC " + g.gpc + " TPC " + g.tpc;
      if (several && !FaultsElsewhere(g)) {
        f.fault_class = FaultClass::kGpuSram, f.layer = Layer::kGpu, f.action = Action::kDrain;
        f.severity = Severity::kCritical, f.confidence = 0.6;
        f.attrs["suspect"] = "hardware";
        f.summary = XidLabel(g.code) + " on " + where + " from " + std::to_string(g.pids.size()) +
                    " different processes: the same unit fails across programs/restarts, so suspect the GPU; drain "
                    "and run DCGM diagnostics (level 3) before returning it to service.";
      } else {
        // One exception from each process is the background of a shared node; a process
        // faulting again and again is an event.
        f.severity = RepeatsInOneProcess(g) ? Severity::kWarning : Severity::kInfo;
        const std::string who = g.names.empty() ? std::string() : *g.names.begin();
        const bool named = !who.empty();
        f.summary = XidLabel(g.code) + " on " + where + (named ? " from program " + who : "") +
                    (g.pids.size() == 1 && who.rfind("pid ", 0) != 0 ? " (pid " + *g.pids.begin() + ")" : "") +
                    ": a fault in the program, not the hardware; tell the job owner.";
        if (named) f.attrs["process"] = who;
      }
      out_.push_back(std::move(f));
    }
  }

  void Nvlink() {
    for (const auto& [key, entry] : s_.nvlink.entries()) {
      const State::Nvlink& n = entry.value;
      if (n.f.severity <= Severity::kInfo) continue;
      Finding f = OnGpu(n.f, n.bdf);
      const ComponentRef gpu = f.component;
      if (!n.link.empty() && n.link != "-1") {
        f.component.type = ComponentType::kNvlink;
        f.component.name = gpu.name + "/" + n.link;
        f.component.keys["link"] = n.link;
      }
      const bool awaits = f.attrs.count("awaits_xid154") > 0;
      f.summary = XidLabel(n.code) + " on " + GpuLabel(gpu) + (n.link.empty() ? "" : " link " + n.link) +
                  (n.decoded.empty() ? "" : " [" + n.decoded + "]") +
                  (f.action >= Action::kResetGpu ? ": reset the GPU; if it recurs on the same link, reseat/replace it."
                   : awaits ? ": the job on this GPU is affected; NVIDIA's decode defers the recovery to the XID 154 "
                              "that follows."
                            : ": non-fatal; watch for recurrence.");
      out_.push_back(std::move(f));
    }
  }

  void Other() {
    for (const auto& [key, entry] : s_.other.entries()) {
      const State::OtherXid& x = entry.value;
      Finding f = OnGpu(x.f, x.bdf);
      f.summary = XidLabel(x.code) + " on " + GpuLabel(f.component);
      if (x.code == 94) {
        f.summary +=
            ": contained memory error; only the faulting program was affected, restart it (never an RMA on "
            "its own).";
      }
      out_.push_back(std::move(f));
    }
  }

  void Xid45() {
    for (const auto& [bdf, entry] : s_.xid45.entries()) {
      Finding f = OnGpu(entry.value, bdf);
      f.summary = "XID 45 (preemptive cleanup) on " + GpuLabel(f.component) +
                  " with no other XID before it: the driver tore down GPU work on its own; restart the job (and the "
                  "fabric manager on NVSwitch systems).";
      out_.push_back(std::move(f));
    }
  }

  void Recovery() {
    for (const auto& [bdf, entry] : s_.recovery.entries()) {
      const State::Recovery& r = entry.value;
      const std::string gpu_bdf = Key(Gpu(r.bdf, r.f.component), "bdf");
      Finding* target = nullptr;
      for (Finding& f : out_) {
        if (Key(f.component, "bdf") == gpu_bdf && (!target || f.severity > target->severity)) target = &f;
      }
      if (target) {
        MergeFinding(*target, r.f, policy_);
        target->action = std::max(target->action, r.action);
        target->attrs["driver_recovery_action"] = r.text;
        continue;
      }
      Finding f = OnGpu(r.f, r.bdf);
      f.action = r.action;
      f.summary = "The driver asks for recovery action '" + r.text + "' on " + GpuLabel(f.component) +
                  " (XID 154) without the XID that caused it in this log.";
      out_.push_back(std::move(f));
    }
  }

  ComponentRef Pcie(const ComponentRef& seen) const {
    ComponentRef c = seen;
    if (auto g = inv_.FindByBdf(c.name)) AttachGpuKeys(*g, c);
    return c;
  }

  void Aer() {
    for (const auto& [name, entry] : s_.aer.entries()) {
      const State::AerDevice& dev = entry.value;
      const ComponentRef comp = Pcie(dev.comp);
      const std::string port = Key(comp, "upstream_port");
      const std::string who = comp.name + (Key(comp, "driver").empty() ? "" : " (" + Key(comp, "driver") + ")");
      const std::string part = port.empty() ? "PCIe link of " + comp.name : "PCIe link " + port + " -> " + comp.name;
      if (dev.uncorrected) {
        Finding f = *dev.uncorrected;
        f.component = comp;
        f.attrs["part"] = part;
        if (dev.fatal)
          FatalLink(f, dev, who);
        else
          f.summary = "Uncorrected PCIe AER error(s) on " + who + (port.empty() ? "" : ", reported by port " + port) +
                      ": the link is failing; reseat/replace the link (riser, slot, cable) and check the device.";
        out_.push_back(std::move(f));
      }
      if (dev.corrected && dev.storm_best >= o_.aer_storm_count) {
        Finding f = *dev.corrected;
        f.component = comp;
        f.attrs["part"] = part;
        f.summary = "Corrected PCIe AER error storm on " + who + ": " + std::to_string(dev.storm_best) +
                    " errors within " + std::to_string(o_.aer_storm_window_ns / kNsPerSec) +
                    " s; the link retrains/replays and loses bandwidth. Schedule a reseat of " + part + ".";
        out_.push_back(std::move(f));
      }
    }
  }

  // A fatal error on a port (or a device the AER core could not recover): the link below
  // it is gone. It names the port; the GPU that fell off after it is attached to it.
  static void FatalLink(Finding& f, const State::AerDevice& dev, const std::string& who) {
    f.severity = Severity::kFatal;
    f.action = Action::kDrain;
    f.confidence = 0.85;
    f.attrs["then"] = "reseat_or_replace_link";
    if (!dev.downstream.empty()) {
      f.component.keys.emplace("downstream_bdf", dev.downstream);
      f.attrs["part"] = "PCIe link " + f.component.name + " -> " + dev.downstream;
    }
    f.summary = "Fatal PCIe error on " + who +
                (dev.downstream.empty() ? "" : " (upstream port of the GPU at " + dev.downstream + ")") +
                ": the link failed (surprise down / completion timeout / recovery failed); drain, then reseat or "
                "replace the link (riser, slot, cable) before replacing the device behind it.";
  }

  void Sxid() {
    for (const auto& [key, entry] : s_.sxid.entries()) {
      const State::Sxid& x = entry.value;
      Finding f = x.f;
      const SxidInfo* info = FindSxid(static_cast<int>(x.code));
      const bool fatal = x.rule.fault_class == FaultClass::kNvswitchFault;
      const bool repeated = f.count >= o_.sxid_link_repeat;
      if (!fatal && x.rule.fault_class == FaultClass::kNvlinkErrors && repeated) {
        f.action = std::max(f.action, Action::kReseatOrReplaceLink);
      }
      const std::string name = info ? std::string(info->name) : x.text;
      const std::string on_link = x.link.empty() || x.link == "-1" ? "" : " on link " + x.link;
      std::string advice;
      if (fatal) {
        advice =
            "; fatal to the traffic on that port: drain, reset the GPUs and NVSwitch (restart the guest VM on "
            "virtualized systems); if the same SXid returns, inspect the NVSwitch.";
        if (info && info->severity == SxidSeverity::kAlwaysFatal) {
          advice = "; fatal to the whole NVLink fabric: drain and restart the host.";
        }
      } else if (info && info->recovery == SxidRecovery::kRestartGuestVm) {
        advice = "; the GPUs using this port lose their NVLink traffic: reset them (restart the guest VM).";
      } else if (info && info->recovery == SxidRecovery::kCheckLink) {
        advice = "; unless the node was shut down uncleanly, check the link's mechanical connection.";
      } else if (info && info->recovery == SxidRecovery::kCheckCooling) {
        advice = "; the NVSwitch ran hot: check the system cooling.";
      } else {
        advice = repeated ? "; repeated on one port: reseat or replace that link." : "; non-fatal: watch the link.";
      }
      f.summary = "NVSwitch " + f.component.name + " SXid " + std::to_string(x.code) + " (" + name + ", " +
                  (x.printed.empty() ? "no severity printed" : x.printed) + ")" + on_link + advice;
      out_.push_back(std::move(f));
    }
  }

  void HostMemory() {
    const State::HostMemory* unnamed = s_.host_memory.Find("");
    Finding* worst = nullptr;
    for (const auto& [location, entry] : s_.host_memory.entries()) {
      if (location.empty()) continue;
      if (auto f = MemoryFinding(entry.value)) {
        out_.push_back(std::move(*f));
        if (!worst || out_.back().severity > worst->severity) worst = &out_.back();
      }
    }
    if (unnamed == nullptr) return;
    if (worst != nullptr) {  // "Machine check events logged", "HANDLING MCE MEMORY ERROR": context
      MergeFinding(*worst, unnamed->f, policy_);
      return;
    }
    if (auto f = MemoryFinding(*unnamed)) out_.push_back(std::move(*f));
  }

  std::optional<Finding> MemoryFinding(const State::HostMemory& h) const {
    const bool ue = h.ue > 0;
    const bool ce = h.ce >= o_.edac_ce_count;
    if (!ue && !ce && (h.unknown == 0 || !h.location.empty())) return std::nullopt;
    Finding f = h.f;
    f.component = HostComponent(h.location);
    const std::string where = h.location.empty() ? "" : " on " + h.location;
    if (!h.location.empty()) f.component.keys["dimm"] = h.location;
    if (ue) {
      f.action = Action::kDrain, f.severity = Severity::kCritical;
      f.summary = "Host machine-check / uncorrected memory error" + where +
                  ": drain the node and replace the DIMM named in the EDAC/MCE lines; this is not a GPU fault.";
    } else if (ce) {
      f.summary = "Host corrected memory errors (" + std::to_string(h.ce) + ")" + where +
                  ": a DIMM is degrading; plan a replacement.";
    } else {
      f.confidence = 0.5;
      f.summary =
          "Host machine-check events were logged without their decode in this log: read them with "
          "rasdaemon/mcelog before acting; this is not a GPU fault.";
    }
    return f;
  }

  void AppsHangsDrivers() {
    for (const auto& [key, entry] : s_.apps.entries()) out_.push_back(entry.value);
    if (s_.hangs) {
      Finding f = *s_.hangs;
      f.summary = "Soft lockups / hung tasks (" + std::to_string(f.count) +
                  "): the kernel stalled; correlate with driver and GPU errors before acting.";
      out_.push_back(std::move(f));
    }
    for (const auto& [key, entry] : s_.driver_errors.entries()) {
      Finding f = entry.value;
      const bool mismatch = key.rfind("driver_mismatch|", 0) == 0;
      const std::string bdf = key.substr(key.find('|') + 1);
      if (!bdf.empty() && f.component.type == ComponentType::kGpu) f = OnGpu(f, bdf);
      if (mismatch) f.action = Action::kDriverUpgrade;
      f.summary = mismatch ? "NVIDIA driver API mismatch (user-space and kernel module versions differ): reinstall a "
                             "consistent driver."
                           : "RmInitAdapter failed on " + GpuLabel(f.component) +
                                 ": the driver could not initialize the GPU; reboot, and if it persists check the GPU.";
      out_.push_back(std::move(f));
    }
  }

  void Nics() {
    for (const auto& [id, entry] : s_.nics.entries()) {
      const State::Nic& nic = entry.value;
      std::string name = nic.comp.name;
      if (std::string netdev = Key(nic.comp, "netdev"); !netdev.empty()) name = netdev + " (" + nic.comp.name + ")";
      NicPower(nic, name);
      NicModule(nic, name);
      NicLink(nic, name);
      NicHealth(nic, name);
    }
  }

  Finding OnNic(const Finding& acc, const State::Nic& nic, const std::string& part) const {
    Finding f = acc;
    f.component = nic.comp;
    f.attrs["part"] = part;
    return f;
  }

  void NicPower(const State::Nic& nic, const std::string& name) {
    if (!nic.power) return;
    Finding f = OnNic(*nic.power, nic, "PCIe slot of NIC " + name);
    f.confidence = 0.8;
    f.layer = Layer::kOob;
    f.summary = "NIC " + name + " reports insufficient power on its PCIe slot (" + nic.power_text +
                "): check the riser/slot power cabling.";
    out_.push_back(std::move(f));
  }

  void NicModule(const State::Nic& nic, const std::string& name) {
    if (!nic.module) return;
    Finding f = OnNic(*nic.module, nic, "transceiver/cable on NIC " + name);
    f.summary = "NIC " + name + " port module event: " + nic.module_text + ": reseat or replace the transceiver/cable.";
    out_.push_back(std::move(f));
  }

  void NicLink(const State::Nic& nic, const std::string& name) {
    if (!nic.link) return;
    const bool down_now = nic.last_down > nic.last_up;
    const bool flapping = nic.downs >= o_.link_flap_count;
    if (!down_now && !flapping) return;
    Finding f = OnNic(*nic.link, nic, "cable/transceiver on NIC " + name);
    f.action = flapping ? Action::kReseatOrReplaceLink : Action::kMonitor;
    f.severity = down_now ? Severity::kCritical : Severity::kWarning;
    f.summary = "NIC " + name +
                (flapping ? " link flapping (" + std::to_string(nic.downs) + " downs)" : std::string(" link down")) +
                (down_now ? ", still down at the end of the log" : "") + ".";
    out_.push_back(std::move(f));
  }

  void NicHealth(const State::Nic& nic, const std::string& name) {
    if (nic.health) {
      Finding f = OnNic(*nic.health, nic, "NIC " + name);
      if (nic.cmd) MergeFinding(f, *nic.cmd, policy_);
      f.summary = "NIC " + name + " stopped working (" + nic.health_text +
                  "): its ports carry no traffic; reset the adapter (driver reload or reboot) and replace the NIC if "
                  "it recurs. Not a GPU fault.";
      out_.push_back(std::move(f));
    } else if (nic.cmd) {
      Finding f = OnNic(*nic.cmd, nic, "NIC " + name);
      const bool many = nic.cmd_count >= o_.nic_cmd_timeout_count;
      f.action = many ? Action::kRebootNode : Action::kMonitor;
      f.severity = many ? Severity::kCritical : Severity::kWarning;
      f.summary = "NIC " + name + " firmware did not answer " + std::to_string(nic.cmd_count) +
                  " command(s) in time and the driver leaked their resources" +
                  (many ? ": reset the adapter (driver reload or reboot) and update its firmware."
                        : ": watch it; repeated timeouts need an adapter reset.");
      out_.push_back(std::move(f));
    }
    if (nic.tx) {
      Finding f = OnNic(*nic.tx, nic, "NIC " + name);
      f.summary = "NIC " + name + " transmit queue timed out: the link or the adapter stalled; watch for repeats.";
      out_.push_back(std::move(f));
    }
    if (nic.temperature) {
      Finding f = OnNic(*nic.temperature, nic, "NIC " + name);
      f.summary = "NIC " + name + " reports high temperature: check the airflow over the adapter.";
      out_.push_back(std::move(f));
    }
  }

  // Findings with one identity (layer, class, component and event key: Finding::key)
  // are one event reached twice: merged, so no key collides. Distinct events that began
  // in the same instant (two processes' exceptions on two units) have distinct event keys
  // and stay distinct findings.
  std::vector<Finding> Unique(std::vector<Finding> in) const {
    std::vector<Finding> out;
    std::map<std::string, size_t> seen;
    for (Finding& f : in) {
      const std::string key = std::string(ToString(f.layer)) + "|" + std::string(ToString(f.fault_class)) + "|" +
                              f.component.Id() + "|" + std::to_string(f.key.size()) + ":" + f.key + "|" +
                              (f.key.empty() ? std::to_string(f.first_ns) : "");
      auto [it, fresh] = seen.emplace(key, out.size());
      if (fresh) {
        out.push_back(std::move(f));
        continue;
      }
      Finding& into = out[it->second];
      MergeFinding(into, f, policy_);
      into.severity = std::max(into.severity, f.severity);
      into.action = std::max(into.action, f.action);
      into.confidence = std::max(into.confidence, f.confidence);
      for (const auto& [k, v] : f.attrs) into.attrs.emplace(k, v);
    }
    return out;
  }

  const KernelDetectorOptions& o_;
  const State& s_;
  const Inventory& inv_;
  EvidencePolicy policy_;
  std::vector<Finding> out_;
};

}  // namespace

KernelDetector::KernelDetector(KernelDetectorOptions options, Inventory inventory, const Inventory* shared)
    : options_(options), inventory_(std::move(inventory)), shared_(shared), state_(std::make_unique<State>(options_)) {}

KernelDetector::~KernelDetector() = default;
KernelDetector::KernelDetector(KernelDetector&&) noexcept = default;
KernelDetector& KernelDetector::operator=(KernelDetector&&) noexcept = default;

void KernelDetector::Observe(const Observation& obs) {
  if (obs.source != Source::kKmsg || !IsKernelKind(obs.kind)) return;
  ++revision_;
  Folder(options_, *state_).Fold(obs);
  if (options_.horizon_ns > 0) ForgetOldEvents(SortTimeNs(obs));
}

void KernelDetector::ForgetOldEvents(int64_t t) {
  State& s = *state_;
  const bool wall = t >= kWallClockFloorNs;
  int64_t& newest = wall ? s.newest_wall : s.newest_mono;
  int64_t& swept = wall ? s.swept_wall : s.swept_mono;
  newest = std::max(newest, t);
  if (newest - swept < std::max<int64_t>(options_.horizon_ns / 8, 1)) return;
  swept = newest;
  const int64_t wall_cut = s.newest_wall - options_.horizon_ns;
  const int64_t mono_cut = s.newest_mono - options_.horizon_ns;
  auto stale = [&](int64_t touched) { return touched < (touched >= kWallClockFloorNs ? wall_cut : mono_cut); };
  State::ForEachEventMap(s, [&stale](auto& m) { m.ForgetIf(stale); });
  if (s.hangs && stale(s.hangs->last_ns)) s.hangs.reset();
}

std::vector<Finding> KernelDetector::Findings() const {
  // Identity first: the shared inventory, then the log's own "GPU at PCI:" / serial lines.
  Inventory inv = inventory_;
  if (shared_ != nullptr) {
    for (const GpuIdentity& g : shared_->gpus()) inv.AddGpu(g);
  }
  for (const auto& [bdf, entry] : state_->log_ids.entries()) inv.AddGpu(entry.value);
  return Assembler(options_, *state_, inv).Run();
}

size_t KernelDetector::StateSize() const {
  const State& s = *state_;
  size_t n = s.log_ids.size() + (s.hangs ? 1 : 0);
  State::ForEachEventMap(s, [&n](const auto& m) { n += m.size(); });
  for (const auto& [k, e] : s.aer.entries()) n += e.value.storm.size();
  for (const auto& [k, e] : s.programs.entries()) n += e.value.pids.size() + e.value.names.size();
  for (const auto& [k, e] : s.program_gpus.entries()) n += e.value.size();
  for (const auto& [k, e] : s.gpu_ports.entries()) n += e.value.size();
  return n;
}

}  // namespace faultline
