// Clock event reasons and temperatures (layer 2). Facts relied on (NVML
// nvmlClocksEventReasons, SIGNALS.md): HW_SLOWDOWN 0x8 halves the clocks or more and is
// asserted by the GPU's thermal protection, by an external power brake (board / PSU
// signal) or by power fast-trigger; HW_THERMAL 0x40 and HW_POWER_BRAKE 0x80 name the
// first two; SW_THERMAL 0x20 and SW_POWER_CAP 0x4 are the driver's ordinary policy and
// are not faults on their own. A power brake is a symptom the isolator explains from
// layer 1 (PSU, input voltage), so its findings carry attrs {"symptom": "true"}.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>

#include "engine/detect/gpu_common.h"
#include "engine/detect/gpu_detectors.h"

namespace faultline {
namespace {

constexpr uint64_t kSwPowerCap = 0x4;
constexpr uint64_t kHwSlowdown = 0x8;
constexpr uint64_t kSwThermal = 0x20;
constexpr uint64_t kHwThermal = 0x40;
constexpr uint64_t kHwPowerBrake = 0x80;

struct BitEpisode {
  int run = 0;          // consecutive samples with the bit
  bool active = false;  // a finding was opened for this run
};

struct TempState {
  int run = 0;
  bool active = false;
  double last = 0;
  std::optional<double> threshold;  // for the "hot" test (slowdown, else max_op, else default)
};

struct GpuState {
  std::deque<std::pair<int64_t, uint64_t>> masks;  // (time, clock event mask) in the window
  BitEpisode thermal, brake;
  bool slowdown_active = false;
  std::map<std::string, TempState> temps;  // by sensor
};

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

class GpuThrottleDetector final : public Detector {
 public:
  explicit GpuThrottleDetector(const GpuThrottleOptions& options) : options_(options), book_(options.max_evidence) {}
  std::string_view name() const override { return "gpu_throttle"; }

  void Observe(const Observation& obs) override {
    if (!IsGpuSample(obs)) return;
    ++revision_;
    if (obs.kind == ObsKind::kClockThrottle) return OnMask(obs);
    if (obs.kind == ObsKind::kTemperature) return OnTemperature(obs);
  }

  std::vector<Finding> Findings() const override { return book_.All(); }
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  void OnMask(const Observation& obs) {
    const double v = *obs.value;
    if (v < 0 || v > 9007199254740992.0) return;
    const auto mask = static_cast<uint64_t>(v);
    GpuState& st = gpus_[obs.component.Id()];
    OnBit(obs, mask & kHwThermal, st.thermal, "hw_thermal");
    OnBit(obs, mask & kHwPowerBrake, st.brake, "hw_power_brake");
    OnSlowdown(obs, mask, st);
  }

  void OnBit(const Observation& obs, bool set, BitEpisode& ep, std::string_view rule) {
    if (!set) {
      ep = BitEpisode{};
      return;
    }
    if (++ep.run < options_.hw_event_min_samples) return;
    if (ep.active) return book_.Touch(rule, obs);
    ep.active = true;  // a new episode: flapping bits count one episode per rise
    Finding& f = book_.Upsert(rule, obs);
    f.severity = Severity::kWarning;
    f.action = Action::kMonitor;
    f.confidence = 0.9;
    f.attrs["mask"] = Hex(static_cast<uint64_t>(*obs.value));
    f.attrs["episodes"] = std::to_string(f.count);
    if (rule == "hw_thermal") {
      f.fault_class = FaultClass::kGpuThermal;
      f.summary = "HW thermal slowdown (clock event 0x40) on " + obs.component.Id() +
                  ": the GPU's thermal protection cut its clocks; check its cooling";
    } else {
      f.fault_class = FaultClass::kGpuPowerBrake;
      f.attrs["symptom"] = "true";
      f.summary = "HW power brake slowdown (clock event 0x80) on " + obs.component.Id() +
                  ": an external power-brake signal cut the clocks; look at the node's power (layer 1)";
    }
  }

  // Time-weighted share of the window with HW_SLOWDOWN asserted: each sample's state
  // holds until the next sample, at most max_hold (a gap longer than that is unknown).
  void OnSlowdown(const Observation& obs, uint64_t mask, GpuState& st) {
    const int64_t t = SortTimeNs(obs);
    st.masks.emplace_back(t, mask);
    const int64_t start = t - options_.slowdown_window_ns;
    while (st.masks.size() > 1 && st.masks[1].first <= start) st.masks.pop_front();
    int64_t covered = 0, asserted = 0;
    for (size_t i = 0; i + 1 < st.masks.size(); ++i) {
      const int64_t a = std::max(st.masks[i].first, start);
      const int64_t b = std::min(st.masks[i + 1].first, st.masks[i].first + options_.max_hold_ns);
      if (b <= a) continue;
      covered += b - a;
      if (st.masks[i].second & kHwSlowdown) asserted += b - a;
    }
    const bool sustained = covered >= options_.slowdown_min_span_ns &&
                           asserted >= options_.slowdown_min_fraction * options_.slowdown_window_ns;
    if (!sustained) {
      st.slowdown_active = false;
      return;
    }
    auto [cls, why] = SlowdownCause(st);
    const std::string rule = cls == FaultClass::kGpuThermal ? "hw_slowdown_thermal" : "hw_slowdown_power";
    if (st.slowdown_active) return book_.Touch(rule, obs);
    st.slowdown_active = true;
    Finding& f = book_.Upsert(rule, obs);
    f.fault_class = cls;
    f.severity = Severity::kWarning;
    f.action = Action::kMonitor;
    f.confidence = 0.75;
    f.attrs["cause"] = why;
    f.attrs["asserted_s"] = std::to_string(asserted / kNsPerSec);
    if (cls == FaultClass::kGpuPowerBrake) f.attrs["symptom"] = "true";
    f.summary = "HW slowdown (clock event 0x8) held " + std::to_string(asserted / kNsPerSec) + " s of the last " +
                std::to_string(options_.slowdown_window_ns / kNsPerSec) + " s on " + obs.component.Id() + " (" + why +
                ")";
  }

  // Which protection asserted HW_SLOWDOWN: the named bits first, then temperatures; with
  // neither, the remaining causes (external power brake, power fast-trigger) are both
  // power, hence gpu_power_brake (a symptom for layer 1 to explain).
  std::pair<FaultClass, std::string> SlowdownCause(const GpuState& st) const {
    uint64_t seen = 0;
    for (const auto& [t, m] : st.masks) {
      if (m & kHwSlowdown) seen |= m;
    }
    if (seen & kHwThermal) return {FaultClass::kGpuThermal, "with HW_THERMAL"};
    if (seen & kHwPowerBrake) return {FaultClass::kGpuPowerBrake, "with HW_POWER_BRAKE"};
    if (seen & kSwThermal) return {FaultClass::kGpuThermal, "with SW_THERMAL"};
    for (const auto& [sensor, ts] : st.temps) {
      if (ts.threshold && ts.last >= *ts.threshold - options_.hot_margin_c) {
        return {FaultClass::kGpuThermal, sensor + " temperature " + GpuFormatValue(ts.last) + " C near slowdown " +
                                             GpuFormatValue(*ts.threshold) + " C"};
      }
    }
    const char* why = (seen & kSwPowerCap) ? "no thermal cause; with SW_POWER_CAP" : "no thermal cause; power inferred";
    return {FaultClass::kGpuPowerBrake, why};
  }

  void OnTemperature(const Observation& obs) {
    const std::string sensor(GpuAttrOr(obs, "sensor", "gpu"));
    TempState& ts = gpus_[obs.component.Id()].temps[sensor];
    ts.last = *obs.value;
    std::optional<double> slowdown = ParseNum(GpuAttrOr(obs, "slowdown", ""));
    if (!slowdown && sensor == "memory") slowdown = options_.memory_slowdown_c;
    ts.threshold = slowdown ? slowdown : ParseNum(GpuAttrOr(obs, "max_op", ""));
    if (!slowdown || *obs.value < *slowdown) {
      ts.run = 0;
      ts.active = false;
      return;
    }
    const std::string rule = "temperature_" + sensor;
    if (++ts.run < options_.temp_min_samples) return;
    if (ts.active) return book_.Touch(rule, obs);
    ts.active = true;
    Finding& f = book_.Upsert(rule, obs);
    f.fault_class = FaultClass::kGpuThermal;
    f.severity = Severity::kWarning;
    f.action = Action::kMonitor;
    f.confidence = 0.8;
    f.attrs["sensor"] = sensor;
    f.attrs["celsius"] = GpuFormatValue(*obs.value);
    f.attrs["slowdown_c"] = GpuFormatValue(*slowdown);
    f.summary = (sensor == "memory" ? "HBM" : "GPU") + std::string(" temperature ") + GpuFormatValue(*obs.value) +
                " C at or above its slowdown threshold " + GpuFormatValue(*slowdown) + " C on " + obs.component.Id();
  }

  static std::optional<double> ParseNum(std::string_view s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    const std::string copy(s);
    double v = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  }

  GpuThrottleOptions options_;
  GpuFindingBook book_;
  std::map<std::string, GpuState> gpus_;
  uint64_t revision_ = 0;
};

}  // namespace

std::unique_ptr<Detector> MakeGpuThrottleDetector(const GpuThrottleOptions& options) {
  return std::make_unique<GpuThrottleDetector>(options);
}

}  // namespace faultline
