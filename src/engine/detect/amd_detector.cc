#include "engine/detect/amd_detector.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "engine/detect/kernel_state.h"

namespace faultline {
namespace {

using kernel::AddObservation;
using kernel::EvidencePolicy;
using kernel::SetEventKey;
using kernel::StartFinding;

std::string Attr(const Observation& o, const char* key) {
  auto it = o.attrs.find(key);
  return it == o.attrs.end() ? std::string() : it->second;
}

struct Timeout {
  Observation obs;
  std::string process, pid;
};

struct GpuEvents {
  ComponentRef comp;
  std::optional<Finding> hbm, sram, xgmi, contained, threshold, reset_failed, init_failed, eeprom;
  std::optional<int64_t> first_ras_ns, last_ras_ns;  // uncorrectable / fatal RAS errors
  std::deque<Timeout> timeouts;
  std::map<std::string, Finding> vm_faults;  // by process
  std::vector<Observation> context;          // resets, saved pages: evidence for the RAS finding
};

class AmdDetector final : public Detector {
 public:
  explicit AmdDetector(const AmdDetectorOptions& o) : o_(o), policy_{o.max_evidence, 1024} {}
  std::string_view name() const override { return "amdgpu"; }
  std::optional<uint64_t> Revision() const override { return revision_; }

  void Observe(const Observation& obs) override {
    if (obs.kind != ObsKind::kAmdgpuEvent) return;
    ++revision_;
    const std::string key = obs.component.Id();
    if (!gpus_.count(key) && gpus_.size() >= o_.max_gpus) return;  // bounded: a hostile log names thousands
    GpuEvents& g = gpus_[key];
    g.comp = obs.component;
    const std::string ev = Attr(obs, "event");
    if (ev == "ras_ue" || ev == "ras_deferred" || ev == "poison_consumption" || ev == "ras_fatal")
      return Ras(g, obs, ev);
    if (ev == "bad_page_threshold" || ev == "rma_advised") {
      return Grow(g.threshold, obs, FaultClass::kHbmUncorrectable, Layer::kGpu, Action::kRma, Severity::kCritical, 0.9,
                  "bad_page_threshold");
    }
    if (ev == "ring_timeout") return AddTimeout(g, obs);
    if (ev == "ring_process") return AttachProcess(g, obs);
    if (ev == "vm_fault") return VmFault(g, obs);
    if (ev == "reset_failed") {
      return Grow(g.reset_failed, obs, FaultClass::kGpuFellOffBus, Layer::kGpu, Action::kRebootNode, Severity::kFatal,
                  0.85, "reset_failed");
    }
    if (ev == "init_failed") {
      return Grow(g.init_failed, obs, FaultClass::kDriverFault, Layer::kOs, Action::kRebootNode, Severity::kCritical,
                  0.6, "init_failed");
    }
    if (ev == "eeprom_error") {
      return Grow(g.eeprom, obs, FaultClass::kDriverFault, Layer::kOs, Action::kMonitor, Severity::kWarning, 0.5,
                  "eeprom_error");
    }
    // Resets, VRAM lost, saved pages, ACA lines, SMU errors: context for the GPU's finding.
    if (g.context.size() < o_.max_evidence) g.context.push_back(obs);
  }

  std::vector<Finding> Findings() const override {
    std::vector<Finding> out;
    for (const auto& [key, g] : gpus_) {
      for (const std::optional<Finding>* f :
           {&g.hbm, &g.sram, &g.xgmi, &g.contained, &g.threshold, &g.reset_failed, &g.init_failed, &g.eeprom}) {
        if (*f) out.push_back(WithContext(**f, g));
      }
      Timeouts(g, out);
      for (const auto& [process, f] : g.vm_faults) out.push_back(f);
    }
    return out;
  }

 private:
  void Grow(std::optional<Finding>& f, const Observation& obs, FaultClass fc, Layer layer, Action a, Severity s,
            double confidence, std::string_view rule) {
    if (!f) {
      f = StartFinding(obs, fc, layer, a, s, confidence);
      SetEventKey(*f, rule, obs.component.Id(), obs);
      f->attrs["rule"] = std::string(rule);
      f->attrs["vendor"] = "amd";
    }
    AddObservation(*f, obs, policy_);
    f->summary = Summary(*f, obs);
  }

  static std::string Label(const Finding& f) {
    auto it = f.component.keys.find("bdf");
    return "AMD GPU at " + (it == f.component.keys.end() ? f.component.name : it->second);
  }

  std::string Summary(const Finding& f, const Observation& obs) const {
    const std::string rule = f.attrs.count("rule") ? f.attrs.at("rule") : "";
    const std::string block = Attr(obs, "block");
    const std::string n = std::to_string(f.count);
    if (rule == "ras_umc") {
      return Label(f) + ": uncorrectable HBM (UMC) error(s) reported by the amdgpu RAS (" + n +
             " report(s)); the driver retires the page: reset the GPU so the retirement takes effect";
    }
    if (rule == "ras_fatal") {
      return Label(f) + ": fatal uncorrectable error (" + Attr(obs, "block") +
             ", uncontained): the driver resets the GPU (the whole XGMI hive on MI300); reset the GPU and watch for a "
             "repeat";
    }
    if (rule == "ras_onchip") return Label(f) + ": uncorrectable on-chip (" + block + ") RAS error(s): reset the GPU";
    if (rule == "ras_xgmi") return Label(f) + ": uncorrectable XGMI link error(s): the GPU-to-GPU link is failing";
    if (rule == "ras_contained") {
      return Label(f) + ": deferred / poisoned data consumed (" + block +
             ", contained): only the program that read it is hit; restart the job";
    }
    if (rule == "bad_page_threshold") {
      return Label(f) + ": retired (bad) HBM pages exceed the driver's threshold" +
             (f.attrs.count("threshold") ? " (" + f.attrs.at("threshold") + ")" : std::string()) +
             ": the GPU is at end of life for memory repair; drain and RMA it";
    }
    if (rule == "reset_failed") return Label(f) + ": a GPU reset failed: the device did not come back; reboot the node";
    if (rule == "init_failed") return Label(f) + ": the amdgpu driver failed to initialise the GPU";
    if (rule == "eeprom_error") return Label(f) + ": the RAS EEPROM (bad-page table) cannot be read or written";
    return Label(f) + ": " + obs.text;
  }

  void Ras(GpuEvents& g, const Observation& obs, const std::string& ev) {
    if (Attr(obs, "status") == "total") return;  // a running total repeats the "new" line
    const std::string block = Attr(obs, "block");
    const int64_t t = SortTimeNs(obs);
    if (ev == "ras_deferred" || ev == "poison_consumption") {
      Grow(g.contained, obs, FaultClass::kHbmUncorrectable, Layer::kGpu, Action::kRestartJob, Severity::kWarning, 0.7,
           "ras_contained");
      return;
    }
    g.first_ras_ns = std::min(g.first_ras_ns.value_or(t), t);
    g.last_ras_ns = std::max(g.last_ras_ns.value_or(t), t);
    if (ev == "ras_fatal") {
      Grow(g.hbm, obs, FaultClass::kHbmUncorrectable, Layer::kGpu, Action::kResetGpu, Severity::kCritical, 0.8,
           "ras_fatal");
      g.hbm->attrs["uncontained"] = "true";
    } else if (block == "umc") {
      const bool was_fatal = g.hbm && g.hbm->attrs.count("uncontained");
      Grow(g.hbm, obs, FaultClass::kHbmUncorrectable, Layer::kGpu, Action::kResetGpu, Severity::kCritical, 0.9,
           "ras_umc");
      if (!was_fatal) g.hbm->attrs["rule"] = "ras_umc";
    } else if (block == "xgmi_wafl" || block == "xgmi") {
      Grow(g.xgmi, obs, FaultClass::kNvlinkErrors, Layer::kFabric, Action::kResetGpu, Severity::kCritical, 0.8,
           "ras_xgmi");
      g.xgmi->attrs["link_type"] = "xgmi";
    } else {
      Grow(g.sram, obs, FaultClass::kGpuSram, Layer::kGpu, Action::kResetGpu, Severity::kCritical, 0.85, "ras_onchip");
    }
  }

  void AddTimeout(GpuEvents& g, const Observation& obs) {
    if (g.timeouts.size() >= o_.max_events_per_gpu) g.timeouts.pop_front();
    g.timeouts.push_back(Timeout{obs, Attr(obs, "process"), Attr(obs, "pid")});
  }

  // "Process <name> pid <p> ..." follows the timeout it belongs to.
  void AttachProcess(GpuEvents& g, const Observation& obs) {
    const int64_t t = SortTimeNs(obs);
    for (auto it = g.timeouts.rbegin(); it != g.timeouts.rend(); ++it) {
      const int64_t dt = t - SortTimeNs(it->obs);
      if (dt < 0 || dt > o_.process_window_ns) break;
      if (!it->process.empty()) continue;
      it->process = Attr(obs, "process");
      it->pid = Attr(obs, "pid");
      return;
    }
  }

  void VmFault(GpuEvents& g, const Observation& obs) {
    const std::string process = Attr(obs, "process");
    if (process.empty()) {
      if (g.context.size() < o_.max_evidence) g.context.push_back(obs);
      return;
    }
    if (!g.vm_faults.count(process) && g.vm_faults.size() >= o_.max_events_per_gpu) return;
    auto [it, fresh] = g.vm_faults.try_emplace(process);
    Finding& f = it->second;
    if (fresh) {
      f = StartFinding(obs, FaultClass::kUserApplication, Layer::kOs, Action::kNotifyUser, Severity::kWarning, 0.75);
      SetEventKey(f, "vm_fault", obs.component.Id() + "|" + process, obs);
      f.attrs["rule"] = "vm_fault";
      f.attrs["process"] = process;
      f.summary = "program " + process + " made GPU page faults on " + Label(f) +
                  ": a bug in the program (bad address), not the hardware; tell its owner";
    }
    AddObservation(f, obs, policy_);
  }

  bool NearRas(const GpuEvents& g, int64_t t) const {
    if (!g.first_ras_ns) return false;
    return t >= *g.first_ras_ns - o_.ras_window_ns && t <= *g.last_ras_ns + o_.ras_window_ns;
  }

  // The GPU's RAS finding with the resets, saved pages and the timeouts it explains.
  Finding WithContext(Finding f, const GpuEvents& g) const {
    if (f.fault_class != FaultClass::kHbmUncorrectable && f.fault_class != FaultClass::kGpuSram &&
        f.fault_class != FaultClass::kNvlinkErrors && f.fault_class != FaultClass::kGpuFellOffBus) {
      return f;
    }
    for (const Observation& c : g.context) AddObservation(f, c, policy_);
    if (f.attrs.count("rule") && f.attrs.at("rule").rfind("ras_", 0) == 0) {
      for (const Timeout& t : g.timeouts) {
        if (NearRas(g, SortTimeNs(t.obs))) AddObservation(f, t.obs, policy_);
      }
    }
    return f;
  }

  void Timeouts(const GpuEvents& g, std::vector<Finding>& out) const {
    std::map<std::string, Finding> by_process;  // user-program timeouts, one finding per program
    std::vector<const Timeout*> anonymous;
    for (const Timeout& t : g.timeouts) {
      if (NearRas(g, SortTimeNs(t.obs))) continue;  // the RAS error's echo (joined its finding)
      if (t.process.empty()) {
        anonymous.push_back(&t);
        continue;
      }
      auto [it, fresh] = by_process.try_emplace(t.process);
      Finding& f = it->second;
      if (fresh) {
        f = StartFinding(t.obs, FaultClass::kUserApplication, Layer::kOs, Action::kNotifyUser, Severity::kWarning, 0.7);
        SetEventKey(f, "ring_timeout_program", t.obs.component.Id() + "|" + t.process, t.obs);
        f.attrs["rule"] = "ring_timeout_program";
        f.attrs["process"] = t.process;
        if (!t.pid.empty()) f.attrs["pid"] = t.pid;
        f.attrs["ring"] = Attr(t.obs, "ring");
        f.summary =
            "a job of program " + t.process + (t.pid.empty() ? "" : " (pid " + t.pid + ")") + " hung the " +
            Attr(t.obs, "ring") + " ring on " + Label(f) +
            " (ring timeout, no RAS error): a program bug or a hung kernel, not the hardware; the driver resets "
            "the GPU; tell the job's owner";
      }
      AddObservation(f, t.obs, policy_);
    }
    for (auto& [p, f] : by_process) out.push_back(std::move(f));
    if (anonymous.empty()) return;
    // Without a process: one is the driver's business (a timeout it recovered); a run of
    // them within the window is a GPU or driver that keeps hanging.
    size_t best_start = 0, best_len = 0;
    for (size_t i = 0, j = 0; i < anonymous.size(); ++i) {
      while (SortTimeNs(anonymous[i]->obs) - SortTimeNs(anonymous[j]->obs) > o_.repeat_window_ns) ++j;
      if (i - j + 1 > best_len) best_len = i - j + 1, best_start = j;
    }
    const bool repeat = static_cast<int>(best_len) >= o_.repeat_timeouts;
    const Timeout& first = *anonymous[repeat ? best_start : 0];
    Finding f = repeat ? StartFinding(first.obs, FaultClass::kDriverFault, Layer::kOs, Action::kResetGpu,
                                      Severity::kCritical, 0.6)
                       : StartFinding(first.obs, FaultClass::kUserApplication, Layer::kOs, Action::kNotifyUser,
                                      Severity::kWarning, 0.4);
    SetEventKey(f, repeat ? "ring_timeout_repeat" : "ring_timeout", first.obs.component.Id(), first.obs);
    f.attrs["rule"] = repeat ? "ring_timeout_repeat" : "ring_timeout";
    for (const Timeout* t : anonymous) AddObservation(f, t->obs, policy_);
    f.summary = repeat ? Label(f) + ": " + std::to_string(anonymous.size()) +
                             " ring timeouts with no program named and no RAS error: the GPU or its driver keeps "
                             "hanging; reset the GPU and check the driver/firmware"
                       : Label(f) +
                             ": a ring timeout with no RAS error (a job that hung the GPU, recovered by a "
                             "reset): not a hardware fault unless it repeats";
    out.push_back(std::move(f));
  }

  AmdDetectorOptions o_;
  EvidencePolicy policy_;
  std::map<std::string, GpuEvents> gpus_;
  uint64_t revision_ = 0;
};

}  // namespace

std::unique_ptr<Detector> MakeAmdDetector(const AmdDetectorOptions& options) {
  return std::make_unique<AmdDetector>(options);
}

}  // namespace faultline
