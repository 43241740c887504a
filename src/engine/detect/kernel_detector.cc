#include "engine/detect/kernel_detector.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "parse/xid_catalog.h"

namespace faultline {
namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;

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

// "GPU 3 (0000:b5:00.0, serial 1320220053911)" or "GPU at 0000:b5:00.0".
std::string GpuLabel(const ComponentRef& c) {
  std::string bdf = Key(c, "bdf");
  std::string serial = Key(c, "serial");
  std::string label = c.name == bdf ? "GPU at " + bdf : "GPU " + c.name + " (" + bdf;
  if (c.name != bdf) {
    if (!serial.empty()) label += ", serial " + serial;
    label += ")";
  }
  return label;
}

int64_t LastTime(const Observation& o) {
  const std::string last = Attr(o, "last_sort_ns");
  return last.empty() ? SortTimeNs(o) : std::stoll(last);
}

std::string XidLabel(int64_t code) {
  const XidInfo* info = FindXid(static_cast<int>(code));
  std::string s = "XID " + std::to_string(code);
  if (info) s += " (" + std::string(info->description) + ")";
  return s;
}

// Builds findings; each rule marks the observations it explains so later rules skip them.
class Rules {
 public:
  Rules(const KernelDetectorOptions& options, std::vector<Observation> obs)
      : options_(options), obs_(std::move(obs)), used_(obs_.size(), false) {}

  std::vector<Finding> Run() {
    FellOffBus();
    MemoryXids();
    ProgramXids();
    NvlinkXids();
    OtherXids();
    SympatheticXid45();
    RecoveryAction();
    Aer();
    Sxid();
    HostAndPrograms();
    NicEvents();
    return std::move(findings_);
  }

 private:
  Finding Start(const Observation& first, FaultClass fc, Layer layer, Action action, Severity sev, double conf) {
    Finding f;
    f.layer = layer;
    f.component = first.component;
    f.fault_class = fc;
    f.action = action;
    f.severity = sev;
    f.confidence = conf;
    f.first_ns = SortTimeNs(first);
    f.last_ns = f.first_ns;
    f.count = 0;
    return f;
  }

  void Add(Finding& f, size_t i) {
    const Observation& o = obs_[i];
    used_[i] = true;
    f.count += o.count;
    const int64_t t = SortTimeNs(o);
    f.first_ns = std::min(f.first_ns, t);
    f.last_ns = std::max(f.last_ns, LastTime(o));
    if (f.evidence.size() < options_.max_evidence) f.evidence.push_back(EvidenceFrom(o));
  }

  std::vector<size_t> Select(const std::function<bool(const Observation&)>& pred, bool include_used = false) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < obs_.size(); ++i) {
      if ((include_used || !used_[i]) && pred(obs_[i])) out.push_back(i);
    }
    return out;
  }

  static bool IsXid(const Observation& o, int64_t code) { return o.kind == ObsKind::kXid && o.code == code; }

  void FellOffBus();
  void MemoryXids();
  void ProgramXids();
  void ProgramXidGroup(const std::vector<size_t>& idx, int64_t code);
  bool RepeatsInOneProcess(const std::vector<size_t>& idx, int64_t code) const;
  void NvlinkXids();
  void OtherXids();
  void SympatheticXid45();
  void RecoveryAction();
  void Aer();
  void Sxid();
  void HostAndPrograms();
  void NicEvents();

  const KernelDetectorOptions& options_;
  std::vector<Observation> obs_;
  std::vector<bool> used_;
  std::vector<Finding> findings_;
};

void Rules::FellOffBus() {
  auto events = Select([](const Observation& o) { return o.kind == ObsKind::kGpuFellOffBus || IsXid(o, 79); });
  std::map<std::string, Finding> by_gpu;
  for (size_t i : events) {
    const Observation& o = obs_[i];
    auto [it, fresh] = by_gpu.try_emplace(o.component.Id());
    if (fresh) {
      it->second = Start(o, FaultClass::kGpuFellOffBus, Layer::kOs, Action::kDrain, Severity::kFatal, 0.9);
    }
    Add(it->second, i);
  }
  for (auto& entry : by_gpu) {
    Finding& f = entry.second;  // not a structured binding: lambdas below capture it
    // AER errors on the same link shortly before: on the GPU's function or its upstream port.
    const std::string bdf = Key(f.component, "bdf");
    std::set<std::string> link_devices{bdf};
    for (const Observation& o : obs_) {
      if (o.kind == ObsKind::kPcieAer && o.component.name == bdf && !Attr(o, "reporting_port").empty()) {
        link_devices.insert(Attr(o, "reporting_port"));
      }
    }
    auto aer = Select([&](const Observation& o) {
      return o.kind == ObsKind::kPcieAer && link_devices.count(o.component.name) && SortTimeNs(o) <= f.first_ns &&
             f.first_ns - SortTimeNs(o) <= options_.pair_window_ns;
    });
    std::string label = GpuLabel(f.component);
    if (aer.empty()) {
      f.summary = label +
                  " has fallen off the bus (XID 79) with no PCIe AER errors logged before it: suspect the "
                  "GPU or its power; drain the node, check the BMC power/thermal data, then reseat or RMA the GPU.";
    } else {
      uint64_t errors = 0;
      for (size_t i : aer) errors += obs_[i].count;
      std::string port;
      for (const std::string& d : link_devices) {
        if (d != bdf) port = d;
      }
      // The evidence chain reads oldest first: the link errors, then the loss of the GPU.
      std::vector<Evidence> chain;
      for (size_t i : aer) chain.push_back(EvidenceFrom(obs_[i])), used_[i] = true;
      chain.insert(chain.end(), f.evidence.begin(), f.evidence.end());
      if (chain.size() > options_.max_evidence)
        chain.erase(chain.begin(), chain.end() - static_cast<long>(options_.max_evidence));
      f.evidence = std::move(chain);
      f.first_ns = std::min(f.first_ns, SortTimeNs(obs_[aer.front()]));
      if (!port.empty()) f.component.keys["upstream_port"] = port;
      f.attrs["link_errors_before"] = std::to_string(errors);
      f.attrs["part"] = port.empty() ? "PCIe link of " + bdf : "PCIe link " + port + " -> " + bdf;
      f.summary = label + " fell off the bus after " + std::to_string(errors) + " PCIe AER error(s) on its link" +
                  (port.empty() ? "" : " (upstream port " + port + ")") +
                  ": suspect the PCIe link, riser or slot; drain, then reseat/replace the link before any GPU RMA.";
      f.confidence = 0.85;
    }
    findings_.push_back(std::move(f));
  }
}

void Rules::MemoryXids() {
  std::map<std::string, std::vector<size_t>> by_gpu;
  for (size_t i : Select([](const Observation& o) { return IsXid(o, 48) || IsXid(o, 63) || IsXid(o, 64); })) {
    by_gpu[obs_[i].component.Id()].push_back(i);
  }
  for (auto& [id, idx] : by_gpu) {
    bool dbe = false, remap = false, remap_failed = false;
    for (size_t i : idx) {
      dbe |= obs_[i].code == 48;
      remap |= obs_[i].code == 63;
      remap_failed |= obs_[i].code == 64;
    }
    const std::string label = GpuLabel(obs_[idx.front()].component);
    Finding f;
    if (dbe && (remap || remap_failed)) {
      f = Start(obs_[idx.front()], FaultClass::kHbmUncorrectable, Layer::kGpu, Action::kDrain, Severity::kCritical,
                0.9);
      f.attrs["then"] = "reset_gpu";
      f.summary = label + ": double-bit ECC error (XID 48) with row remapping (XID " +
                  std::string(remap_failed ? "64, remap FAILED" : "63") +
                  "): drain the node, then reset the GPU to apply the remap" +
                  (remap_failed ? "; a remap failure means spare rows are exhausted: confirm with NVML and RMA." : ".");
    } else if (dbe) {
      f = Start(obs_[idx.front()], FaultClass::kHbmUncorrectable, Layer::kGpu, Action::kResetGpu, Severity::kCritical,
                0.85);
      f.summary = label + ": double-bit (uncorrectable) ECC error (XID 48): reset the GPU.";
    } else {
      XidRule r = RuleForXid(remap_failed ? 64 : 63);
      f = Start(obs_[idx.front()], r.fault_class, r.layer, r.action, r.severity, 0.75);
      f.summary = label + (remap_failed ? ": row remapping failure (XID 64): spare rows exhausted; drain, confirm with "
                                          "NVML remapped-rows state, then RMA."
                                        : ": row remap event (XID 63): reset the GPU to apply it.");
    }
    for (size_t i : idx) Add(f, i);
    findings_.push_back(std::move(f));
  }
}

std::string Program(const Observation& o) {
  std::string p = Attr(o, "process");
  return p.empty() ? "pid " + Attr(o, "pid") : p;
}

void Rules::ProgramXids() {
  for (int64_t code : {13, 31}) {
    // Group by GPU and, for 13, by GPC/TPC: the unit a hardware fault would live in.
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t i : Select([&](const Observation& o) { return IsXid(o, code); })) {
      const Observation& o = obs_[i];
      std::string key = o.component.Id();
      if (code == 13) key += "|" + Attr(o, "gpc") + "/" + Attr(o, "tpc");
      groups[key].push_back(i);
    }
    for (auto& [key, idx] : groups) ProgramXidGroup(idx, code);
  }
}

// Did one of this group's processes hit this XID on this GPU more than once (counting its
// faults in every GPC/TPC, not only this group's unit)?
bool Rules::RepeatsInOneProcess(const std::vector<size_t>& idx, int64_t code) const {
  const Observation& first = obs_[idx.front()];
  std::set<std::string> pids;
  for (size_t i : idx) pids.insert(Attr(obs_[i], "pid"));
  std::map<std::string, uint64_t> per_pid;
  for (const Observation& o : obs_) {
    if (!IsXid(o, code) || o.component.Id() != first.component.Id() || !pids.count(Attr(o, "pid"))) continue;
    if ((per_pid[Attr(o, "pid")] += std::max<uint64_t>(1, o.count)) >= 2) return true;
  }
  return false;
}

void Rules::ProgramXidGroup(const std::vector<size_t>& idx, int64_t code) {
  std::set<std::string> pids, names;
  for (size_t i : idx) {
    if (!Attr(obs_[i], "pid").empty()) pids.insert(Attr(obs_[i], "pid"));
    names.insert(Program(obs_[i]));
  }
  const Observation& first = obs_[idx.front()];
  // Does any of these programs hit the same XID on another GPU too? Then the program is
  // the common factor, not this GPU.
  bool program_faults_elsewhere = false;
  for (const Observation& o : obs_) {
    if (IsXid(o, code) && o.component.Id() != first.component.Id() && names.count(Program(o))) {
      program_faults_elsewhere = true;
    }
  }
  // XID 13 names the unit (GPC/TPC), so one unit failing under different processes points
  // at the silicon. XID 31 names no unit: the same program restarted (new pid) faulting
  // again is still the program, so it takes different programs to suspect the GPU.
  // Without a GPC/TPC (an "ESR" exception line) XID 13 names no unit either.
  const bool unit_known = code == 13 && !Attr(first, "gpc").empty();
  const bool several = unit_known ? pids.size() >= 2 : names.size() >= 2;
  const bool suspect_hw = several && !program_faults_elsewhere;
  std::string where = GpuLabel(first.component);
  if (code == 13 && !Attr(first, "gpc").empty()) where += " GPC " + Attr(first, "gpc") + " TPC " + Attr(first, "tpc");
  Finding f;
  if (suspect_hw) {
    f = Start(first, FaultClass::kGpuSram, Layer::kGpu, Action::kDrain, Severity::kCritical, 0.6);
    f.summary = XidLabel(code) + " on " + where + " from " + std::to_string(pids.size()) +
                " different processes: the same unit fails across programs/restarts, so suspect the GPU; drain and "
                "run DCGM diagnostics (level 3) before returning it to service.";
    f.attrs["suspect"] = "hardware";
  } else {
    // One exception from each process is the background of a shared GPU node (a notebook
    // hitting a bad index); a process faulting again and again is an event.
    f = Start(first, FaultClass::kUserApplication, Layer::kOs, Action::kNotifyUser,
              RepeatsInOneProcess(idx, code) ? Severity::kWarning : Severity::kInfo, 0.8);
    std::string who = *names.begin();
    f.summary = XidLabel(code) + " on " + where + " from program " + who +
                (pids.size() == 1 ? " (pid " + *pids.begin() + ")" : "") +
                ": a fault in the program, not the hardware; tell the job owner.";
    f.attrs["process"] = who;
  }
  for (size_t i : idx) Add(f, i);
  findings_.push_back(std::move(f));
}

void Rules::NvlinkXids() {
  std::map<std::string, Finding> groups;
  for (size_t i : Select([](const Observation& o) {
         return o.kind == ObsKind::kXid && o.code && (*o.code == 74 || (*o.code >= 144 && *o.code <= 150));
       })) {
    const Observation& o = obs_[i];
    const std::string link = Attr(o, "link");
    XidRule rule = RuleForXid(static_cast<int>(*o.code));
    Action action = rule.action;
    Severity sev = rule.severity;
    std::string decoded;
    if (*o.code >= 144 && !Attr(o, "intr_info").empty()) {
      auto d = DecodeNvlinkXid(static_cast<int>(*o.code), static_cast<uint32_t>(std::stoul(Attr(o, "intr_info"))),
                               static_cast<uint32_t>(std::stoul(Attr(o, "error_status"))));
      if (d.matched) {
        decoded = std::string(d.unit) + ", " + std::string(d.severity) + ", " + std::string(d.bucket);
        if (d.bucket == "RESET_GPU" || d.bucket == "XID_154_EVAL")
          action = Action::kResetGpu, sev = Severity::kCritical;
        if (d.bucket == "IGNORE") action = Action::kMonitor, sev = Severity::kInfo;
      }
    }
    if (decoded.empty() && Attr(o, "severity") == "Fatal") action = Action::kResetGpu, sev = Severity::kCritical;
    ComponentRef comp = o.component;
    if (!link.empty() && link != "-1") {
      comp.type = ComponentType::kNvlink;
      comp.name = o.component.name + "/" + link;
      comp.keys["link"] = link;
    }
    auto [it, fresh] = groups.try_emplace(comp.Id() + "|" + std::to_string(*o.code));
    Finding& f = it->second;
    if (fresh) {
      f = Start(o, FaultClass::kNvlinkErrors, Layer::kFabric, action, sev, 0.75);
      f.component = comp;
      f.summary = XidLabel(*o.code) + " on " + GpuLabel(o.component) + (link.empty() ? "" : " link " + link) +
                  (decoded.empty() ? "" : " [" + decoded + "]") +
                  (action >= Action::kResetGpu ? ": reset the GPU; if it recurs on the same link, reseat/replace it."
                                               : ": non-fatal; watch for recurrence.");
    }
    if (action > f.action) f.action = action, f.severity = sev;
    Add(f, i);
  }
  for (auto& [k, f] : groups) {
    if (f.severity > Severity::kInfo) findings_.push_back(std::move(f));
  }
}

void Rules::OtherXids() {
  std::map<std::string, Finding> groups;
  for (size_t i : Select([](const Observation& o) { return o.kind == ObsKind::kXid && o.code && *o.code != 45; })) {
    const Observation& o = obs_[i];
    XidRule rule = RuleForXid(static_cast<int>(*o.code));
    if (rule.fault_class == FaultClass::kNone) {
      used_[i] = true;  // NVIDIA: IGNORE; informational
      continue;
    }
    auto [it, fresh] = groups.try_emplace(o.component.Id() + "|" + std::to_string(*o.code));
    Finding& f = it->second;
    if (fresh) {
      f = Start(o, rule.fault_class, rule.layer, rule.action, rule.severity, rule.hardware ? 0.75 : 0.7);
      f.summary = XidLabel(*o.code) + " on " + GpuLabel(o.component);
      if (*o.code == 94)
        f.summary +=
            ": contained memory error; only the faulting program was affected, restart it (never an RMA on its own).";
      if (!Attr(o, "process").empty()) f.attrs["process"] = Attr(o, "process");
    }
    Add(f, i);
  }
  for (auto& [k, f] : groups) findings_.push_back(std::move(f));
}

void Rules::SympatheticXid45() {
  for (size_t i : Select([](const Observation& o) { return IsXid(o, 45); })) {
    const Observation& o = obs_[i];
    const int64_t t = SortTimeNs(o);
    Finding* cause = nullptr;
    for (Finding& f : findings_) {
      const bool same_gpu = Key(f.component, "bdf") == Key(o.component, "bdf");
      if (same_gpu && f.first_ns <= t && t - f.first_ns <= options_.sympathetic_window_ns + (f.last_ns - f.first_ns)) {
        if (!cause || f.severity > cause->severity) cause = &f;
      }
    }
    if (cause) {
      Add(*cause, i);
      cause->attrs["sympathetic_xid45"] = std::to_string(
          std::stoull(cause->attrs["sympathetic_xid45"].empty() ? "0" : cause->attrs["sympathetic_xid45"]) + o.count);
      continue;
    }
    XidRule r = RuleForXid(45);
    Finding f = Start(o, r.fault_class, r.layer, r.action, r.severity, 0.5);
    f.summary = "XID 45 (preemptive cleanup) on " + GpuLabel(o.component) +
                " with no other XID before it: the driver tore down GPU work on its own; restart the job (and the "
                "fabric manager on NVSwitch systems).";
    Add(f, i);
    findings_.push_back(std::move(f));
  }
}

void Rules::RecoveryAction() {
  for (size_t i : Select([](const Observation& o) { return o.kind == ObsKind::kXidRecoveryAction; })) {
    const Observation& o = obs_[i];
    auto action = RecoveryActionFor(o.value ? static_cast<int>(*o.value) : -1);
    if (!action || *action == Action::kNone) {
      used_[i] = true;
      continue;
    }
    Finding* target = nullptr;
    for (Finding& f : findings_) {
      if (Key(f.component, "bdf") == Key(o.component, "bdf") && (!target || f.severity > target->severity)) target = &f;
    }
    if (target) {
      Add(*target, i);
      if (*action > target->action) target->action = *action;
      target->attrs["driver_recovery_action"] = Attr(o, "recovery_action");
      continue;
    }
    Finding f = Start(o, FaultClass::kDriverFault, Layer::kOs, *action, Severity::kCritical, 0.6);
    f.summary = "The driver asks for recovery action '" + Attr(o, "recovery_action") + "' on " + GpuLabel(o.component) +
                " (XID 154) without the XID that caused it in this log.";
    Add(f, i);
    findings_.push_back(std::move(f));
  }
}

void Rules::Aer() {
  std::map<std::string, std::vector<size_t>> by_device;
  for (size_t i : Select([](const Observation& o) { return o.kind == ObsKind::kPcieAer; })) {
    by_device[obs_[i].component.Id()].push_back(i);
  }
  for (auto& [id, idx] : by_device) {
    std::vector<size_t> uncorrected, corrected;
    for (size_t i : idx) (Attr(obs_[i], "severity").rfind("Corrected", 0) == 0 ? corrected : uncorrected).push_back(i);
    const ComponentRef& comp = obs_[idx.front()].component;
    const std::string port = Key(comp, "upstream_port");
    const std::string who = comp.name + (Key(comp, "driver").empty() ? "" : " (" + Key(comp, "driver") + ")");
    if (!uncorrected.empty()) {
      Finding f = Start(obs_[uncorrected.front()], FaultClass::kPcieLinkDegraded, Layer::kFabric,
                        Action::kReseatOrReplaceLink, Severity::kCritical, 0.8);
      for (size_t i : uncorrected) Add(f, i);
      f.attrs["part"] = port.empty() ? "PCIe link of " + comp.name : "PCIe link " + port + " -> " + comp.name;
      f.summary = "Uncorrected PCIe AER error(s) on " + who + (port.empty() ? "" : ", reported by port " + port) +
                  ": the link is failing; reseat/replace the link (riser, slot, cable) and check the device.";
      findings_.push_back(std::move(f));
    }
    // Corrected errors: a storm is a degrading link; a handful is noise.
    uint64_t best = 0;
    for (size_t a = 0, b = 0; b < corrected.size(); ++b) {
      while (SortTimeNs(obs_[corrected[b]]) - SortTimeNs(obs_[corrected[a]]) > options_.aer_storm_window_ns) ++a;
      uint64_t n = 0;
      for (size_t k = a; k <= b; ++k) n += obs_[corrected[k]].count;
      best = std::max(best, n);
    }
    if (best >= options_.aer_storm_count) {
      Finding f = Start(obs_[corrected.front()], FaultClass::kPcieLinkDegraded, Layer::kFabric, Action::kMonitor,
                        Severity::kWarning, 0.7);
      for (size_t i : corrected) Add(f, i);
      f.attrs["part"] = port.empty() ? "PCIe link of " + comp.name : "PCIe link " + port + " -> " + comp.name;
      f.summary = "Corrected PCIe AER error storm on " + who + ": " + std::to_string(best) + " errors within " +
                  std::to_string(options_.aer_storm_window_ns / kNsPerSec) +
                  " s; the link retrains/replays and loses bandwidth. Schedule a reseat of " + f.attrs["part"] + ".";
      findings_.push_back(std::move(f));
    } else {
      for (size_t i : corrected) used_[i] = true;
    }
  }
}

void Rules::Sxid() {
  std::map<std::string, Finding> groups;
  for (size_t i : Select([](const Observation& o) { return o.kind == ObsKind::kSxid; })) {
    const Observation& o = obs_[i];
    const bool fatal = Attr(o, "severity") == "Fatal";
    const std::string link = Attr(o, "link");
    auto [it, fresh] = groups.try_emplace(o.component.Id() + "|" + std::to_string(*o.code) + "|" + link);
    Finding& f = it->second;
    if (fresh) {
      f = Start(o, fatal ? FaultClass::kNvswitchFault : FaultClass::kNvlinkErrors, Layer::kFabric,
                fatal ? Action::kDrain : Action::kMonitor, fatal ? Severity::kCritical : Severity::kWarning, 0.75);
      if (!link.empty()) f.component.keys["link"] = link;
      f.summary = "NVSwitch " + o.component.name + " SXid " + std::to_string(*o.code) + " (" +
                  (Attr(o, "severity").empty() ? "no severity" : Attr(o, "severity")) + ")" +
                  (link.empty() || link == "-1" ? "" : " on link " + link) + ": " + o.text +
                  (fatal ? "; drain and reset the NVSwitch/GPUs (fabric manager restart)." : "; watch the link.");
    }
    Add(f, i);
  }
  for (auto& [k, f] : groups) findings_.push_back(std::move(f));
}

void Rules::HostAndPrograms() {
  // Host memory: uncorrected errors / machine checks drain; corrected ones only in numbers.
  auto mem = Select([](const Observation& o) { return o.kind == ObsKind::kHostMemoryError; });
  std::vector<size_t> ue, ce;
  for (size_t i : mem) (Attr(obs_[i], "severity") == "CE" ? ce : ue).push_back(i);
  uint64_t ce_count = 0;
  for (size_t i : ce) ce_count += static_cast<uint64_t>(obs_[i].value.value_or(1)) * obs_[i].count;
  if (!ue.empty() || ce_count >= options_.edac_ce_count) {
    const bool bad = !ue.empty();
    Finding f = Start(obs_[bad ? ue.front() : ce.front()], FaultClass::kHostMemory, Layer::kOs,
                      bad ? Action::kDrain : Action::kMonitor, bad ? Severity::kCritical : Severity::kWarning, 0.8);
    for (size_t i : mem) Add(f, i);
    f.summary = bad ? "Host machine-check / uncorrected memory error: drain the node and replace the DIMM named in the "
                      "EDAC/MCE lines; this is not a GPU fault."
                    : "Host corrected memory errors (" + std::to_string(ce_count) +
                          "): a DIMM is degrading; plan a "
                          "replacement.";
    findings_.push_back(std::move(f));
  }
  // Program faults: segfaults, traps, OOM kills, grouped by program.
  std::map<std::string, Finding> programs;
  for (size_t i : Select([](const Observation& o) { return o.kind == ObsKind::kAppFault; })) {
    const Observation& o = obs_[i];
    auto [it, fresh] = programs.try_emplace(Attr(o, "process") + "|" + Attr(o, "event"));
    if (fresh) {
      it->second = Start(o, FaultClass::kUserApplication, Layer::kOs, Action::kNotifyUser, Severity::kWarning, 0.8);
      const std::string lib = Attr(o, "library");
      it->second.summary = "Program " + Attr(o, "process") + " (pid " + Attr(o, "pid") + "): " + Attr(o, "event") +
                           (lib.empty() ? "" : " in " + lib) + ": a program fault, not hardware; tell the job owner.";
      it->second.attrs["process"] = Attr(o, "process");
    }
    Add(it->second, i);
  }
  for (auto& [k, f] : programs) findings_.push_back(std::move(f));
  auto hangs = Select([](const Observation& o) { return o.kind == ObsKind::kKernelHang; });
  if (!hangs.empty()) {
    Finding f =
        Start(obs_[hangs.front()], FaultClass::kDriverFault, Layer::kOs, Action::kMonitor, Severity::kWarning, 0.4);
    for (size_t i : hangs) Add(f, i);
    f.summary = "Soft lockups / hung tasks (" + std::to_string(f.count) +
                "): the kernel stalled; correlate with driver "
                "and GPU errors before acting.";
    findings_.push_back(std::move(f));
  }
  for (size_t i : Select([](const Observation& o) { return o.kind == ObsKind::kDriverError; })) {
    const Observation& o = obs_[i];
    const bool mismatch = Attr(o, "event") == "driver_mismatch";
    Finding f = Start(o, FaultClass::kDriverFault, Layer::kOs, mismatch ? Action::kDriverUpgrade : Action::kRebootNode,
                      Severity::kCritical, 0.85);
    f.summary = mismatch ? "NVIDIA driver API mismatch (user-space and kernel module versions differ): reinstall a "
                           "consistent driver."
                         : "RmInitAdapter failed on " + GpuLabel(o.component) +
                               ": the driver could not initialize the GPU; reboot, and if it persists check the GPU.";
    Add(f, i);
    findings_.push_back(std::move(f));
  }
}

void Rules::NicEvents() {
  std::map<std::string, std::vector<size_t>> by_nic;
  for (size_t i : Select([](const Observation& o) { return o.kind == ObsKind::kNicEvent; })) {
    by_nic[obs_[i].component.Id()].push_back(i);
  }
  for (auto& [id, idx] : by_nic) {
    // Repeated identical lines arrive folded (count, last time), so count copies and
    // compare the last down with the last up.
    int downs = 0;
    int64_t last_down = -1, last_up = -1;
    std::vector<size_t> power, module, link;
    for (size_t i : idx) {
      const std::string ev = Attr(obs_[i], "event");
      if (ev == "slot_power") power.push_back(i);
      if (ev == "module") module.push_back(i);
      if (ev == "link_down") downs += static_cast<int>(obs_[i].count), last_down = LastTime(obs_[i]), link.push_back(i);
      if (ev == "link_up") last_up = LastTime(obs_[i]), link.push_back(i);
    }
    const bool down_now = last_down > last_up;
    const std::string nic = obs_[idx.front()].component.name;
    if (!power.empty()) {
      Finding f = Start(obs_[power.front()], FaultClass::kPowerInsufficient, Layer::kOob, Action::kReseatOrReplaceLink,
                        Severity::kCritical, 0.8);
      for (size_t i : power) Add(f, i);
      f.attrs["part"] = "PCIe slot of NIC " + nic;
      f.summary = "NIC " + nic + " reports insufficient power on its PCIe slot (" + Attr(obs_[power.front()], "power") +
                  "): check the riser/slot power cabling.";
      findings_.push_back(std::move(f));
    }
    if (!module.empty()) {
      Finding f = Start(obs_[module.front()], FaultClass::kIbLinkErrors, Layer::kFabric, Action::kReseatOrReplaceLink,
                        Severity::kWarning, 0.7);
      for (size_t i : module) Add(f, i);
      f.attrs["part"] = "transceiver/cable on NIC " + nic;
      f.summary = "NIC " + nic + " port module event: " + Attr(obs_[module.front()], "detail") +
                  ": reseat or replace the transceiver/cable.";
      findings_.push_back(std::move(f));
    }
    if (down_now || downs >= options_.link_flap_count) {
      Finding f = Start(obs_[link.front()], FaultClass::kIbLinkDown, Layer::kFabric,
                        downs >= options_.link_flap_count ? Action::kReseatOrReplaceLink : Action::kMonitor,
                        down_now ? Severity::kCritical : Severity::kWarning, 0.7);
      for (size_t i : link) Add(f, i);
      f.attrs["part"] = "cable/transceiver on NIC " + nic;
      f.summary =
          "NIC " + nic +
          (downs >= options_.link_flap_count ? " link flapping (" + std::to_string(downs) + " downs)" : " link down") +
          (down_now ? ", still down at the end of the log" : "") + ".";
      findings_.push_back(std::move(f));
    } else {
      for (size_t i : link) used_[i] = true;
    }
  }
}

}  // namespace

KernelDetector::KernelDetector(KernelDetectorOptions options, Inventory inventory)
    : options_(options), inventory_(std::move(inventory)) {}

void KernelDetector::Observe(const Observation& obs) {
  if (obs.source == Source::kKmsg && IsKernelKind(obs.kind)) observations_.push_back(obs);
}

std::vector<Finding> KernelDetector::Findings() const {
  // Identity first: the log's own "GPU at PCI:" and serial lines join the inventory.
  Inventory inv = inventory_;
  for (const Observation& o : observations_) {
    if (o.kind != ObsKind::kGpuIdentity) continue;
    GpuIdentity g;
    g.bdf = o.component.name;
    g.uuid = Attr(o, "uuid");
    g.serial = Attr(o, "serial");
    inv.AddGpu(g);
  }
  std::vector<Observation> resolved;
  for (const Observation& o : observations_) {
    if (o.kind == ObsKind::kGpuIdentity) continue;
    Observation r = o;
    const std::string bdf = Key(o.component, "bdf");
    if (o.component.type == ComponentType::kGpu && !bdf.empty()) {
      r.component = inv.GpuAt(bdf);
    } else if (o.component.type == ComponentType::kPcie) {
      if (auto g = inv.FindByBdf(o.component.name)) AttachGpuKeys(*g, r.component);
    }
    resolved.push_back(std::move(r));
  }
  std::stable_sort(resolved.begin(), resolved.end(),
                   [](const Observation& a, const Observation& b) { return SortTimeNs(a) < SortTimeNs(b); });
  return Rules(options_, std::move(resolved)).Run();
}

}  // namespace faultline
