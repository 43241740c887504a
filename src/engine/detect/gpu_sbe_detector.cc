// Correctable (single-bit) ECC accumulation as an aging signal (layer 2). SBEs are
// corrected by hardware and a few per day are normal background; what matters is a
// sustained rate and a rate that keeps rising over days (SIGNALS.md: "an aging signal,
// not an emergency"). So the finding is hbm_sbe_aging with action monitor, and its
// summary says "plan RMA" once the daily trend projects the end-of-life limit within
// the horizon. Only total counters (no "location" attr) are read, so per-location
// counters do not double count.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "engine/detect/gpu_common.h"
#include "engine/detect/gpu_detectors.h"

namespace faultline {
namespace {

constexpr std::string_view kRule = "sbe_aging";

struct DayBucket {
  double count = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};

struct Series {
  GpuCounterSeries counter;
  double accounted = 0;                           // sum of non-negative deltas
  std::deque<std::pair<int64_t, double>> window;  // (time, accounted)
  std::map<int64_t, DayBucket> days;              // by UTC day number
};

struct Trend {
  bool valid = false;
  double latest_per_day = 0;
  double slope_per_day = 0;  // change of the daily rate per day
  std::optional<double> days_to_limit;
};

class GpuSbeDetector final : public Detector {
 public:
  explicit GpuSbeDetector(const GpuSbeOptions& options) : options_(options), book_(options.max_evidence) {}
  std::string_view name() const override { return "gpu_sbe"; }

  void Observe(const Observation& obs) override {
    if (obs.kind != ObsKind::kEccSbe || !IsGpuSample(obs) || obs.attrs.count("location") > 0) return;
    ++revision_;
    const std::string key = obs.component.Id() + "/" + std::string(GpuAttrOr(obs, "counter", "volatile"));
    Series& s = series_[key];
    const int64_t t = SortTimeNs(obs);
    const double delta = s.counter.Update(*obs.value).delta;
    s.accounted += delta;
    RecordWindow(s, t);
    RecordDay(s, t, delta);
    const std::optional<double> rate = HourlyRate(s);
    const Trend trend = FitTrend(s);
    const bool rate_hit = rate && *rate >= options_.rate_per_hour;
    const bool trend_hit = trend.days_to_limit && *trend.days_to_limit <= options_.trend_horizon_days;
    if (!rate_hit && !trend_hit) return;
    if (delta <= 0 && book_.Has(obs.component.Id(), kRule)) return book_.Touch(kRule, obs);
    Finding& f = book_.Upsert(kRule, obs);
    Describe(f, obs, rate, trend, trend_hit);
  }

  std::vector<Finding> Findings() const override { return book_.All(); }
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  void RecordWindow(Series& s, int64_t t) {
    s.window.emplace_back(t, s.accounted);
    // Keep one sample at or before the window start as the rate's anchor.
    while (s.window.size() > 2 && s.window[1].first <= t - options_.rate_window_ns) s.window.pop_front();
  }

  void RecordDay(Series& s, int64_t t, double delta) {
    const int64_t day = t >= 0 ? t / (86400 * kNsPerSec) : -1;
    auto [it, inserted] = s.days.try_emplace(day);
    DayBucket& b = it->second;
    if (inserted) b.first_ns = t;
    b.count += delta;
    b.first_ns = std::min(b.first_ns, t);
    b.last_ns = std::max(b.last_ns, t);
    while (static_cast<int>(s.days.size()) > options_.trend_max_days) s.days.erase(s.days.begin());
  }

  std::optional<double> HourlyRate(const Series& s) const {
    const auto& [t0, c0] = s.window.front();
    const auto& [t1, c1] = s.window.back();
    const int64_t span = t1 - t0;
    if (span < options_.rate_min_span_ns || span <= 0) return std::nullopt;
    if (c1 - c0 < options_.rate_min_count) return std::nullopt;
    return (c1 - c0) / (static_cast<double>(span) / (3600.0 * kNsPerSec));
  }

  // Least-squares line through the daily rates (count scaled to 24 h of coverage) of
  // the days sampled long enough; projects when the rate reaches the daily limit.
  Trend FitTrend(const Series& s) const {
    Trend tr;
    std::vector<std::pair<double, double>> pts;
    for (const auto& [day, b] : s.days) {
      const int64_t covered = b.last_ns - b.first_ns;
      if (covered < options_.trend_min_day_coverage_ns || covered <= 0) continue;
      pts.emplace_back(static_cast<double>(day), b.count * (86400.0 * kNsPerSec) / static_cast<double>(covered));
    }
    if (static_cast<int>(pts.size()) < options_.trend_min_days) return tr;
    double mx = 0, my = 0;
    for (const auto& [x, y] : pts) {
      mx += x;
      my += y;
    }
    mx /= pts.size();
    my /= pts.size();
    double sxy = 0, sxx = 0;
    for (const auto& [x, y] : pts) {
      sxy += (x - mx) * (y - my);
      sxx += (x - mx) * (x - mx);
    }
    tr.valid = true;
    tr.slope_per_day = sxx > 0 ? sxy / sxx : 0;
    tr.latest_per_day = pts.back().second;
    if (tr.latest_per_day >= options_.trend_daily_limit) {
      tr.days_to_limit = 0;
    } else if (tr.slope_per_day > 0) {
      tr.days_to_limit = (options_.trend_daily_limit - tr.latest_per_day) / tr.slope_per_day;
    }
    return tr;
  }

  void Describe(Finding& f, const Observation& obs, const std::optional<double>& rate, const Trend& trend,
                bool plan_rma) const {
    f.fault_class = FaultClass::kHbmSbeAging;
    f.severity = Severity::kWarning;
    f.action = Action::kMonitor;
    f.confidence = plan_rma ? 0.8 : 0.6;
    std::string what = "correctable ECC errors accumulating on " + obs.component.Id();
    if (rate) {
      f.attrs["rate_per_hour"] = GpuFormatValue(*rate);
      what += " at " + GpuFormatValue(*rate) + "/h";
    }
    if (trend.valid) {
      f.attrs["per_day"] = GpuFormatValue(trend.latest_per_day);
      f.attrs["trend_per_day"] = GpuFormatValue(trend.slope_per_day);
    }
    if (plan_rma) {
      f.attrs["plan"] = "rma";
      f.attrs["days_to_limit"] = GpuFormatValue(std::round(*trend.days_to_limit));
      what += "; the daily rate (" + GpuFormatValue(trend.latest_per_day) + "/day, rising " +
              GpuFormatValue(trend.slope_per_day) + "/day each day) reaches " +
              GpuFormatValue(options_.trend_daily_limit) + "/day in about " +
              GpuFormatValue(std::round(*trend.days_to_limit)) + " days: plan RMA";
    } else {
      f.attrs.erase("plan");
      f.attrs.erase("days_to_limit");
      what += "; monitor the trend";
    }
    f.summary = std::move(what);
  }

  GpuSbeOptions options_;
  GpuFindingBook book_;
  std::map<std::string, Series> series_;
  uint64_t revision_ = 0;
};

}  // namespace

std::unique_ptr<Detector> MakeGpuSbeDetector(const GpuSbeOptions& options) {
  return std::make_unique<GpuSbeDetector>(options);
}

}  // namespace faultline
