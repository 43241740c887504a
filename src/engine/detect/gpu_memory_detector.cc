// Uncorrectable ECC, row remapping and page retirement (layer 2). Facts relied on
// (SIGNALS.md, NVML/DCGM docs): a volatile DBE count is since the last driver load, so
// a non-zero value at first sight is a real recent error; an aggregate count is
// lifetime history and only its increase is news. Remap pending = a reset applies the
// repair; remap failure = a bank ran out of spare rows (drain + RMA). DCGM's health
// limits: 63 retired pages in total, or more than 15 DBE retirements with more than
// one in the last week.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>

#include "engine/detect/gpu_common.h"
#include "engine/detect/gpu_detectors.h"

namespace faultline {
namespace {

constexpr std::string_view kRuleDbe = "ecc_uncorrectable";
constexpr std::string_view kRuleSram = "sram_uncorrectable";
constexpr std::string_view kRuleRemapUnc = "remap_uncorrectable";
constexpr std::string_view kRulePending = "row_remap_pending";
constexpr std::string_view kRuleFailure = "row_remap_failure";
constexpr std::string_view kRuleRetiredPending = "retired_pages_pending";
constexpr std::string_view kRuleRetiredLimit = "retired_pages_limit";
constexpr std::string_view kRuleRetiredDbe = "retired_dbe_recent";

// NVML memory locations that are on-chip SRAM rather than HBM.
bool IsSramLocation(std::string_view loc) {
  return loc == "sram" || loc == "l1" || loc == "l2" || loc == "register_file" || loc == "texture_memory" ||
         loc == "texture_shm" || loc == "cbu";
}

struct GpuState {
  std::map<std::string, GpuCounterSeries> counters;  // by kind/counter/location
  std::map<std::string, double> new_errors;          // accumulated increase per counter
  bool remap_failure = false;
  bool has_dram_location = false;  // per-location DBE counters include HBM
  bool pending = false;
  bool retired_pending = false;
  std::optional<double> retired_sbe;
  std::optional<double> retired_dbe;
  std::deque<std::pair<int64_t, double>> dbe_history;  // (time, DBE retired pages)
  double limit_fired_at = -1;                          // retired total last reported
  double dbe_fired_at = -1;
};

class GpuMemoryDetector final : public Detector {
 public:
  explicit GpuMemoryDetector(const GpuMemoryOptions& options) : options_(options), book_(options.max_evidence) {}
  std::string_view name() const override { return "gpu_memory"; }

  void Observe(const Observation& obs) override {
    if (!IsGpuSample(obs)) return;
    ++revision_;
    GpuState& st = gpus_[obs.component.Id()];
    switch (obs.kind) {
      case ObsKind::kEccDbe:
        OnDbe(obs, st);
        break;
      case ObsKind::kRowRemapUncorrectable:
        OnRemapUncorrectable(obs, st);
        break;
      case ObsKind::kRowRemapPending:
        OnPendingFlag(obs, kRulePending, st.pending);
        break;
      case ObsKind::kRetiredPagesPending:
        OnPendingFlag(obs, kRuleRetiredPending, st.retired_pending);
        break;
      case ObsKind::kRowRemapFailure:
        OnRemapFailure(obs, st);
        break;
      case ObsKind::kRetiredPages:
        OnRetired(obs, st);
        break;
      default:
        break;
    }
  }

  std::optional<uint64_t> Revision() const override { return revision_; }
  std::vector<Finding> Findings() const override {
    std::vector<Finding> out = book_.All();
    for (Finding& f : out) {
      auto it = gpus_.find(f.component.Id());
      const bool failure = it != gpus_.end() && it->second.remap_failure;
      if (failure && f.fault_class == FaultClass::kHbmUncorrectable && f.action == Action::kResetGpu) {
        // A reset cannot repair rows when the spare rows are gone: take the node out.
        f.action = Action::kDrain;
        f.attrs["with"] = "row_remap_failure";
        f.summary += "; row remapping has also failed, so drain instead of resetting";
      }
    }
    return out;
  }

 private:
  void OnDbe(const Observation& obs, GpuState& st) {
    const std::string counter(GpuAttrOr(obs, "counter", "volatile"));
    const std::string location(GpuAttrOr(obs, "location", ""));
    const std::string key = "dbe/" + counter + "/" + location;
    GpuCounterSeries::Step step = st.counters[key].Update(*obs.value);
    if (location == "dram" || location == "device_memory") st.has_dram_location = true;
    double fresh = step.delta;
    if (step.first && counter == "volatile") fresh = *obs.value;  // since driver load: recent
    if (fresh <= 0) return;
    // The totals count on-chip SRAM errors too. When the GPU also counts its HBM (dram)
    // errors by location, the per-location counters decide HBM vs SRAM; the total would
    // only repeat one of them (and call an SRAM error an HBM one).
    if (location.empty() && st.has_dram_location) return;
    double& total = st.new_errors[key];
    total += fresh;
    const bool sram = IsSramLocation(location);
    Finding& f = book_.Upsert(sram ? kRuleSram : kRuleDbe, obs);
    f.fault_class = sram ? FaultClass::kGpuSram : FaultClass::kHbmUncorrectable;
    f.severity = Severity::kCritical;
    f.action = Action::kResetGpu;
    f.confidence = 0.9;
    f.attrs["new_errors"] = GpuFormatValue(std::max(total, ParseAttr(f, "new_errors")));
    f.attrs["counter"] = counter;
    if (!location.empty()) f.attrs["location"] = location;
    f.summary = f.attrs["new_errors"] + " uncorrectable ECC error(s) (" + counter +
                (location.empty() ? "" : ", " + location) + ") on " + obs.component.Id() +
                "; reset the GPU so the memory repair takes effect";
  }

  void OnRemapUncorrectable(const Observation& obs, GpuState& st) {
    GpuCounterSeries::Step step = st.counters["remap_unc"].Update(*obs.value);
    if (step.delta <= 0) return;  // first sight is history; only new remaps are news
    Finding& f = book_.Upsert(kRuleRemapUnc, obs);
    f.fault_class = FaultClass::kHbmUncorrectable;
    f.severity = Severity::kCritical;
    f.action = Action::kResetGpu;
    f.confidence = 0.85;
    f.summary = "rows remapped after uncorrectable errors on " + obs.component.Id() + " (now " +
                GpuFormatValue(*obs.value) + "); reset the GPU";
  }

  // Remap pending / retirement pending: 1 opens (or reopens) a finding, 0 clears it.
  void OnPendingFlag(const Observation& obs, std::string_view rule, bool& active) {
    const bool now = *obs.value >= 1;
    if (now && active) return book_.Touch(rule, obs);
    if (!now) {
      Finding* f = book_.Find(obs.component.Id(), rule);
      if (active && f != nullptr) {
        f->attrs["cleared"] = "true";
        f->action = Action::kNone;
        f->severity = Severity::kInfo;
        f->summary = std::string(rule) + " on " + obs.component.Id() + " cleared (the GPU was reset)";
      }
      active = false;
      return;
    }
    active = true;
    Finding& f = book_.Upsert(rule, obs);
    f.attrs.erase("cleared");
    f.fault_class = FaultClass::kRowRemapPending;
    f.severity = Severity::kWarning;
    f.action = Action::kResetGpu;
    f.confidence = 0.9;
    if (rule == kRuleRetiredPending) {
      // A GPU that retires pages has no row remapping: what broke is its HBM (an uncorrectable
      // error), and the reset retires the page. Named row_remap_pending, it would tell the
      // operator of a repair state this GPU does not have (docs/isolator.md: the remap state
      // decides only on GPUs with row remapping).
      f.fault_class = FaultClass::kHbmUncorrectable;
      f.attrs["mechanism"] = "page_retirement";
      f.summary = "uncorrectable HBM error on " + obs.component.Id() +
                  ": pages pending retirement; reset the GPU (or reboot) to retire them";
    } else {
      f.attrs["mechanism"] = "row_remap";
      f.summary = "row remap pending on " + obs.component.Id() + "; reset the GPU to apply it";
    }
  }

  void OnRemapFailure(const Observation& obs, GpuState& st) {
    if (*obs.value < 1) return;
    if (st.remap_failure) return book_.Touch(kRuleFailure, obs);
    st.remap_failure = true;
    Finding& f = book_.Upsert(kRuleFailure, obs);
    f.fault_class = FaultClass::kRowRemapExhausted;
    f.severity = Severity::kFatal;
    f.action = Action::kRma;
    f.confidence = 0.95;
    f.attrs["first"] = "drain";
    f.attrs["then"] = "rma";
    f.summary = "row remapping failed on " + obs.component.Id() +
                " (spare rows exhausted); drain the node first, then RMA the GPU";
  }

  void OnRetired(const Observation& obs, GpuState& st) {
    const bool dbe = GpuAttrOr(obs, "cause", "") == "dbe";
    const int64_t t = SortTimeNs(obs);
    if (dbe) {
      if (st.retired_dbe && *obs.value < *st.retired_dbe) st.dbe_history.clear();  // counter reset
      st.retired_dbe = *obs.value;
      st.dbe_history.emplace_back(t, *obs.value);
      while (!st.dbe_history.empty() && st.dbe_history.front().first < t - options_.retired_dbe_recent_window_ns) {
        st.dbe_history.pop_front();
      }
    } else {
      st.retired_sbe = *obs.value;
    }
    // A source that states the device's own retirement threshold (amdgpu's
    // bad_page_threshold, docs/amd.md) is judged against it; DCGM's limits are NVIDIA's.
    const double own_limit = std::strtod(std::string(GpuAttrOr(obs, "limit", "0")).c_str(), nullptr);
    const double limit = own_limit > 0 ? own_limit : options_.retired_pages_limit;
    CheckRetiredLimit(obs, st, limit);
    if (dbe && own_limit <= 0) CheckRecentDbe(obs, st);
  }

  void CheckRetiredLimit(const Observation& obs, GpuState& st, double limit) {
    const double total = st.retired_sbe.value_or(0) + st.retired_dbe.value_or(0);
    if (total < limit) return;
    if (total <= st.limit_fired_at) return book_.Touch(kRuleRetiredLimit, obs);
    st.limit_fired_at = total;
    Finding& f = book_.Upsert(kRuleRetiredLimit, obs);
    RetirementFinding(f, "retired pages reached " + GpuFormatValue(total) + " (limit " + GpuFormatValue(limit) +
                             ") on " + obs.component.Id());
    f.attrs["retired_total"] = GpuFormatValue(total);
  }

  void CheckRecentDbe(const Observation& obs, GpuState& st) {
    const double dbe = *st.retired_dbe;
    if (dbe <= options_.retired_dbe_limit || st.dbe_history.empty()) return;
    const double recent = dbe - st.dbe_history.front().second;
    if (recent < options_.retired_dbe_recent_min) return;
    if (dbe <= st.dbe_fired_at) return book_.Touch(kRuleRetiredDbe, obs);
    st.dbe_fired_at = dbe;
    Finding& f = book_.Upsert(kRuleRetiredDbe, obs);
    RetirementFinding(f, GpuFormatValue(dbe) + " pages retired for DBEs on " + obs.component.Id() + ", " +
                             GpuFormatValue(recent) + " of them in the last week");
    f.attrs["retired_dbe"] = GpuFormatValue(dbe);
    f.attrs["retired_dbe_recent"] = GpuFormatValue(recent);
  }

  static void RetirementFinding(Finding& f, std::string what) {
    f.fault_class = FaultClass::kHbmUncorrectable;
    f.severity = Severity::kCritical;
    f.action = Action::kRma;
    f.confidence = 0.9;
    f.summary = std::move(what) + "; the GPU's memory is past its repair budget: RMA";
  }

  static double ParseAttr(const Finding& f, const std::string& key) {
    auto it = f.attrs.find(key);
    return it == f.attrs.end() ? 0 : std::strtod(it->second.c_str(), nullptr);
  }

  GpuMemoryOptions options_;
  GpuFindingBook book_;
  std::map<std::string, GpuState> gpus_;
  uint64_t revision_ = 0;
};

}  // namespace

std::unique_ptr<Detector> MakeGpuMemoryDetector(const GpuMemoryOptions& options) {
  return std::make_unique<GpuMemoryDetector>(options);
}

}  // namespace faultline
