#include "api/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace faultline::api {
namespace {

constexpr size_t kMaxLabelValueBytes = 128;
constexpr double kNsPerSecond = 1e9;

using Labels = std::vector<std::pair<std::string_view, std::string>>;

bool ValidLabelValue(std::string_view v) {
  if (v.empty() || v.size() > kMaxLabelValueBytes) return false;
  for (char c : v) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

// Families in the order first declared; each family's samples written together, as the
// format requires, with one HELP and TYPE line.
class Exposition {
 public:
  explicit Exposition(size_t max_series) : max_series_(max_series) {}

  // Older readings of a series already written (or already dropped) are skipped, so each
  // series counts once, kept or dropped.
  void Add(std::string_view name, std::string_view type, std::string_view help, const Labels& labels, double value) {
    std::string key;
    bool valid = true;
    for (const auto& [label, v] : labels) {
      valid = valid && ValidLabelValue(v);
      if (!key.empty()) key += ',';
      key += std::string(label) + "=\"" + EscapeLabelValue(v) + "\"";
    }
    auto [it, inserted] = index_.try_emplace(std::string(name), families_.size());
    if (inserted) families_.push_back(Family{std::string(name), std::string(type), std::string(help), {}, {}});
    Family& f = families_[it->second];
    if (!f.keys.insert(key).second) return;  // the newest reading of a series came first
    if (!valid || series_ >= max_series_) {
      ++dropped_;
      return;
    }
    f.lines += f.name + (key.empty() ? "" : "{" + key + "}") + " " + FormatValue(value) + "\n";
    ++series_;
  }

  // A histogram family: name_bucket{le=...} (cumulative), name_sum, name_count, one TYPE line.
  void AddHistogram(std::string_view name, std::string_view help, const Labels& labels,
                    const daemon::LatencyHistogram& h) {
    auto [it, inserted] = index_.try_emplace(std::string(name), families_.size());
    if (!inserted) return;
    families_.push_back(Family{std::string(name), "histogram", std::string(help), {}, {}});
    Family& f = families_.back();
    std::string key;
    for (const auto& [label, v] : labels) {
      if (!ValidLabelValue(v)) {
        ++dropped_;
        return;
      }
      key += std::string(label) + "=\"" + EscapeLabelValue(v) + "\",";
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.buckets.size(); ++i) {
      cumulative += h.buckets[i];
      f.lines += f.name + "_bucket{" + key + "le=\"" + FormatValue(daemon::LatencyHistogram::kBoundsS[i]) + "\"} " +
                 std::to_string(cumulative) + "\n";
    }
    f.lines += f.name + "_bucket{" + key + "le=\"+Inf\"} " + std::to_string(h.count) + "\n";
    if (!key.empty()) key.pop_back();
    const std::string braces = key.empty() ? "" : "{" + key + "}";
    f.lines += f.name + "_sum" + braces + " " + FormatValue(h.sum_s) + "\n";
    f.lines += f.name + "_count" + braces + " " + std::to_string(h.count) + "\n";
    ++series_;
  }

  size_t series() const { return series_; }
  size_t dropped() const { return dropped_; }

  std::string Text() const {
    std::string out;
    for (const Family& f : families_) {
      if (f.lines.empty()) continue;
      out += "# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.type + "\n" + f.lines;
    }
    return out;
  }

 private:
  struct Family {
    std::string name, type, help;
    std::set<std::string> keys;
    std::string lines;
  };
  size_t max_series_;
  size_t series_ = 0;
  size_t dropped_ = 0;
  std::vector<Family> families_;
  std::map<std::string, size_t> index_;
};

bool PlausibleUuid(std::string_view v) {
  if (v.empty() || v.size() > 64) return false;
  for (char c : v) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
    if (!ok) return false;
  }
  return true;
}

// node and component on every reading; gpu/uuid/port where the component has them.
Labels ReadingLabels(const std::string& node, const ComponentRef& c) {
  Labels labels{{"node", node}, {"component", c.Id()}};
  std::string gpu;
  std::string port;
  const size_t slash = c.name.find('/');
  switch (c.type) {
    case ComponentType::kGpu:
      gpu = c.name;
      break;
    case ComponentType::kNvlink:
      if (slash != std::string::npos) {
        gpu = c.name.substr(0, slash);
        port = c.name.substr(slash + 1);
      }
      break;
    case ComponentType::kIb:
      if (const size_t last = c.name.rfind('/'); last != std::string::npos) port = c.name.substr(last + 1);
      break;
    default:
      if (auto it = c.keys.find("gpu_index"); it != c.keys.end()) gpu = it->second;
      break;
  }
  if (!gpu.empty()) labels.emplace_back("gpu", gpu);
  if (auto it = c.keys.find("uuid"); it != c.keys.end() && PlausibleUuid(it->second)) {
    labels.emplace_back("uuid", it->second);
  }
  if (!port.empty()) labels.emplace_back("port", port);
  return labels;
}

std::optional<double> AttrNumber(const Observation& o, std::string_view key) {
  auto it = o.attrs.find(std::string(key));
  if (it == o.attrs.end()) return std::nullopt;
  double v = 0;
  const std::string& s = it->second;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

bool Matches(const MetricSpec& spec, const Observation& o) {
  if (spec.component_type && o.component.type != *spec.component_type) return false;
  if (!spec.attr_key.empty()) {
    auto it = o.attrs.find(std::string(spec.attr_key));
    if (it == o.attrs.end() || it->second != spec.attr_value) return false;
  }
  if (!spec.absent_attr.empty() && o.attrs.count(std::string(spec.absent_attr)) != 0) return false;
  // Readings a source marked implausible (vendor quirks) and empty bays are not values.
  if (o.attrs.count("quirk") != 0) return false;
  if (auto it = o.attrs.find("present"); it != o.attrs.end() && it->second == "false") return false;
  return true;
}

void AddReading(Exposition& out, const MetricSpec& spec, const std::string& node, const Observation& o) {
  const std::optional<double> raw = spec.value_attr.empty() ? o.value : AttrNumber(o, spec.value_attr);
  if (!raw) return;
  Labels labels = ReadingLabels(node, o.component);
  if (!spec.clock_reason_bits) {
    out.Add(spec.name, spec.type, spec.help, labels, *raw * spec.scale);
    return;
  }
  if (*raw < 0 || *raw > 1.8e19) return;
  const auto mask = static_cast<uint64_t>(*raw);
  for (const ClockReasonBit& bit : ClockReasonBits()) {
    Labels with = labels;
    with.emplace_back("reason", std::string(bit.reason));
    std::ostringstream hex;
    hex << "0x" << std::hex << bit.mask;
    with.emplace_back("bit", hex.str());
    out.Add(spec.name, spec.type, spec.help, with, (mask & bit.mask) != 0 ? 1.0 : 0.0);
  }
}

// The newest rows of each kind in the table, read once per kind.
Status AddReadings(DataProvider& provider, const MetricsOptions& options, int64_t now_ns, Exposition& out) {
  std::map<ObsKind, std::vector<Observation>> by_kind;
  const std::string node = provider.Node();
  for (const MetricSpec& spec : ObservationMetrics()) {
    auto [it, inserted] = by_kind.try_emplace(spec.kind);
    if (inserted) {
      ObservationQuery q;
      q.kind = spec.kind;
      q.since_ns = now_ns - options.window_ns;
      q.until_ns = now_ns;
      q.limit = options.max_rows_per_kind;
      q.newest_first = true;
      auto rows = provider.Observations(q);
      if (!rows.ok()) return rows.status();
      for (auto& row : rows->rows) it->second.push_back(std::move(row.value));
    }
    for (const Observation& o : it->second) {
      if (Matches(spec, o)) AddReading(out, spec, node, o);
    }
  }
  return Status::Ok();
}

Status AddDiagnosis(DataProvider& provider, Exposition& out) {
  auto active = provider.ActiveDiagnosis();
  if (!active.ok()) return active.status();
  const std::string node = provider.Node();
  const bool fault = active->has_value() && (*active)->value.fault_class != FaultClass::kNone;
  out.Add("faultline_diagnosis_active", "gauge", "1 while a diagnosis other than none is in force, else 0.",
          {{"node", node}}, fault ? 1 : 0);
  if (!fault) return Status::Ok();
  const Diagnosis& d = (*active)->value;
  out.Add("faultline_diagnosis_info", "gauge",
          "The diagnosis in force (value 1): fault class, component, recommended action, severity.",
          {{"node", node},
           {"class", std::string(ToString(d.fault_class))},
           {"component", d.component.Id()},
           {"action", std::string(ToString(d.action))},
           {"severity", std::string(ToString(d.severity))}},
          1);
  if (d.first_ns != 0) {
    out.Add("faultline_diagnosis_start_timestamp_seconds", "gauge",
            "When the evidence of the diagnosis in force begins (Unix time).",
            {{"node", node}, {"class", std::string(ToString(d.fault_class))}, {"component", d.component.Id()}},
            static_cast<double>(d.first_ns) / kNsPerSecond);
  }
  return Status::Ok();
}

Status AddSources(DataProvider& provider, int64_t since_ns, Exposition& out) {
  auto sources = provider.Sources(since_ns);
  if (!sources.ok()) return sources.status();
  const std::string node = provider.Node();
  for (const SourceHealth& s : *sources) {
    const Labels labels{{"node", node}, {"source", std::string(ToString(s.source))}};
    if (s.up)
      out.Add("faultline_source_up", "gauge", "1 when the source's last poll succeeded, else 0.", labels, *s.up);
    if (s.last_success_ns) {
      out.Add("faultline_source_last_success_timestamp_seconds", "gauge",
              "Time of the newest observation stored from the source (Unix time).", labels,
              static_cast<double>(*s.last_success_ns) / kNsPerSecond);
    }
    if (s.errors) {
      out.Add("faultline_source_errors_total", "counter", "Failed polls of the source since the agent started.", labels,
              static_cast<double>(*s.errors));
    }
  }
  return Status::Ok();
}

// 1 while the agent is blind (every source failing): its diagnosis in force, "none" or not,
// is not to be trusted. 0 also when the agent recorded no state (it never was blind); NaN when
// its record cannot be read (unknown: an alert on `!= 0` fires, the scrape still answers).
void AddSight(DataProvider& provider, Exposition& out) {
  const auto sight = provider.Sight();
  const std::string node = provider.Node();
  const bool blind = sight.ok() && sight->has_value() && (*sight)->blind;
  const double value = sight.ok() ? (blind ? 1 : 0) : std::nan("");
  out.Add("faultline_agent_blind", "gauge",
          "1 while every source of the agent is failing: no diagnosis, none included, can be trusted.",
          {{"node", node}}, value);
  if (blind) {
    out.Add("faultline_agent_blind_since_timestamp_seconds", "gauge", "When the agent found itself blind (Unix time).",
            {{"node", node}}, static_cast<double>((*sight)->since_ns) / kNsPerSecond);
  }
}

void AddRemediation(const std::string& node, const RemediationCounters& r, Exposition& out) {
  out.Add("faultline_remediation_decisions_total", "counter", "Remediation decision rows the agent stored.",
          {{"node", node}}, static_cast<double>(r.decisions_stored));
  out.Add("faultline_remediation_errors_total", "counter", "Remediation policy calls that failed.", {{"node", node}},
          static_cast<double>(r.errors));
  const std::pair<std::string_view, uint64_t> calls[] = {
      {"queued", r.queued}, {"coalesced", r.coalesced}, {"dropped", r.dropped}, {"abandoned", r.abandoned}};
  for (const auto& [outcome, count] : calls) {
    out.Add("faultline_remediation_worker_calls_total", "counter",
            "Calls to the remediation worker: queued, coalesced into one waiting, dropped from a full queue for a "
            "newer diagnosis, abandoned at shutdown.",
            {{"node", node}, {"outcome", std::string(outcome)}}, static_cast<double>(count));
  }
  out.Add("faultline_remediation_worker_queue_max", "gauge", "The most calls ever waiting for the remediation worker.",
          {{"node", node}}, static_cast<double>(r.max_queued));
}

// XID counts by GPU label and code label, with both label sets capped: the first GPUs and,
// per GPU, the first codes seen keep their own label; later ones count under "other". Fed
// oldest first, so a series keeps its label from one scrape to the next.
class XidTally {
 public:
  XidTally(size_t max_gpus, size_t max_codes) : max_gpus_(max_gpus), max_codes_(max_codes) {}

  void Add(const std::string& gpu, std::optional<int64_t> code, uint64_t count) {
    auto& codes = counts_[Label(counts_, gpu, max_gpus_)];
    codes[Label(codes, code ? std::to_string(*code) : kOther, max_codes_)] += count;
  }
  const std::map<std::string, std::map<std::string, uint64_t>>& counts() const { return counts_; }

 private:
  static constexpr const char* kOther = "other";
  template <typename Map>
  static std::string Label(const Map& seen, const std::string& value, size_t max) {
    const size_t named = seen.size() - seen.count(kOther);
    return seen.count(value) != 0 || named < max ? value : kOther;
  }
  size_t max_gpus_;
  size_t max_codes_;
  std::map<std::string, std::map<std::string, uint64_t>> counts_;
};

// The GPU an XID row names: its index or bus id as stored; "unknown" for a line naming none.
std::string XidGpu(const ComponentRef& c) {
  if (c.type == ComponentType::kGpu && !c.name.empty()) return c.name;
  if (auto it = c.keys.find("gpu_index"); it != c.keys.end()) return it->second;
  return "unknown";
}

// Every XID row the store holds (the newest max_xid_rows per kind), oldest first. DCGM's
// "last XID" is a reading repeated at each scrape, not an event: left out.
Result<std::vector<Observation>> XidEvents(DataProvider& provider, const MetricsOptions& options) {
  std::vector<Observation> events;
  for (ObsKind kind : {ObsKind::kXid, ObsKind::kXidRecoveryAction}) {
    ObservationQuery q;
    q.kind = kind;
    q.limit = options.max_xid_rows;
    q.newest_first = true;
    q.include_seen = false;  // events, never a flat series' "seen" copies
    auto rows = provider.Observations(q);
    if (!rows.ok()) return rows.status();
    for (auto& row : rows->rows) {
      if (row.value.source != Source::kDcgmExporter) events.push_back(std::move(row.value));
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Observation& a, const Observation& b) { return a.time_ns < b.time_ns; });
  return events;
}

Status AddXidEvents(DataProvider& provider, const MetricsOptions& options, Exposition& out) {
  auto events = XidEvents(provider, options);
  if (!events.ok()) return events.status();
  XidTally tally(options.max_xid_gpus, options.max_xid_codes_per_gpu);
  for (const Observation& o : *events) tally.Add(XidGpu(o.component), o.code, o.count);
  const std::string node = provider.Node();
  for (const auto& [gpu, codes] : tally.counts()) {
    for (const auto& [code, count] : codes) {
      out.Add("faultline_xid_events_total", "counter",
              "XID events the store holds for the GPU, by XID code (kernel log; codes past the per-GPU cap under "
              "xid=\"other\").",
              {{"node", node}, {"gpu", gpu}, {"xid", code}}, static_cast<double>(count));
    }
  }
  return Status::Ok();
}

// utime + stime from /proc/self/stat (fields 14 and 15, after the parenthesised name)
// and the resident set from /proc/self/statm.
void AddProcess(const std::string& node, Exposition& out) {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(text.substr(close + 2));
    std::string f;
    double utime = -1;
    double stime = -1;
    for (int i = 3; fields >> f && i <= 15; ++i) {
      if (i == 14) utime = std::atof(f.c_str());
      if (i == 15) stime = std::atof(f.c_str());
    }
    const long ticks = sysconf(_SC_CLK_TCK);
    if (utime >= 0 && stime >= 0 && ticks > 0) {
      out.Add("faultline_process_cpu_seconds_total", "counter", "CPU time (user + system) of this process.",
              {{"node", node}}, (utime + stime) / static_cast<double>(ticks));
    }
  }
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0;
  long pages_resident = 0;
  if (statm >> pages_total >> pages_resident) {
    out.Add("faultline_process_resident_memory_bytes", "gauge", "Resident memory of this process.", {{"node", node}},
            static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)));
  }
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

const std::vector<ClockReasonBit>& ClockReasonBits() {
  static const std::vector<ClockReasonBit> kBits{
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  };
  return kBits;
}

const std::vector<MetricSpec>& ObservationMetrics() {
  using K = ObsKind;
  using C = ComponentType;
  static const std::vector<MetricSpec> kTable{
      // GPU integrity (NVML)
      {.kind = K::kEccSbe,
       .attr_key = "counter",
       .attr_value = "aggregate",
       .absent_attr = "location",
       .name = "faultline_gpu_ecc_sbe_errors_total",
       .type = "counter",
       .help = "Corrected (single-bit) ECC errors over the GPU's life (NVML aggregate total)."},
      {.kind = K::kEccDbe,
       .attr_key = "counter",
       .attr_value = "aggregate",
       .absent_attr = "location",
       .name = "faultline_gpu_ecc_dbe_errors_total",
       .type = "counter",
       .help = "Uncorrected (double-bit) ECC errors over the GPU's life (NVML aggregate total)."},
      {.kind = K::kEccSbe,
       .attr_key = "counter",
       .attr_value = "volatile",
       .absent_attr = "location",
       .name = "faultline_gpu_ecc_sbe_volatile_errors_total",
       .type = "counter",
       .help = "Corrected ECC errors since the driver last loaded (NVML volatile total)."},
      {.kind = K::kEccDbe,
       .attr_key = "counter",
       .attr_value = "volatile",
       .absent_attr = "location",
       .name = "faultline_gpu_ecc_dbe_volatile_errors_total",
       .type = "counter",
       .help = "Uncorrected ECC errors since the driver last loaded (NVML volatile total)."},
      {.kind = K::kRowRemapPending,
       .name = "faultline_gpu_row_remap_pending",
       .type = "gauge",
       .help = "1 when a row remap waits for a GPU reset."},
      {.kind = K::kRowRemapFailure,
       .name = "faultline_gpu_row_remap_failure",
       .type = "gauge",
       .help = "1 when a row remap failed (no spare rows left)."},
      {.kind = K::kRowRemapCorrectable,
       .name = "faultline_gpu_remapped_rows_correctable",
       .type = "gauge",
       .help = "Rows remapped for correctable errors."},
      {.kind = K::kRowRemapUncorrectable,
       .name = "faultline_gpu_remapped_rows_uncorrectable",
       .type = "gauge",
       .help = "Rows remapped for uncorrectable errors."},
      {.kind = K::kRetiredPages,
       .attr_key = "cause",
       .attr_value = "sbe",
       .name = "faultline_gpu_retired_pages_sbe",
       .type = "gauge",
       .help = "Pages retired for repeated single-bit errors."},
      {.kind = K::kRetiredPages,
       .attr_key = "cause",
       .attr_value = "dbe",
       .name = "faultline_gpu_retired_pages_dbe",
       .type = "gauge",
       .help = "Pages retired for double-bit errors."},
      {.kind = K::kRetiredPagesPending,
       .name = "faultline_gpu_retired_pages_pending",
       .type = "gauge",
       .help = "1 when a page retirement waits for a GPU reset."},
      {.kind = K::kClockThrottle,
       .name = "faultline_gpu_clock_event_reason",
       .type = "gauge",
       .help = "1 while the GPU's clocks are held back for the reason (NVML clocks event reasons, one series per bit).",
       .clock_reason_bits = true},
      {.kind = K::kClock,
       .attr_key = "clock",
       .attr_value = "sm",
       .name = "faultline_gpu_sm_clock_hertz",
       .type = "gauge",
       .help = "SM clock.",
       .scale = 1e6},
      {.kind = K::kClock,
       .attr_key = "clock",
       .attr_value = "mem",
       .name = "faultline_gpu_memory_clock_hertz",
       .type = "gauge",
       .help = "Memory clock.",
       .scale = 1e6},
      {.kind = K::kTemperature,
       .attr_key = "sensor",
       .attr_value = "gpu",
       .component_type = C::kGpu,
       .name = "faultline_gpu_temperature_celsius",
       .type = "gauge",
       .help = "GPU die temperature."},
      {.kind = K::kTemperature,
       .attr_key = "sensor",
       .attr_value = "memory",
       .component_type = C::kGpu,
       .name = "faultline_gpu_memory_temperature_celsius",
       .type = "gauge",
       .help = "GPU memory (HBM) temperature."},
      {.kind = K::kPower,
       .component_type = C::kGpu,
       .name = "faultline_gpu_power_watts",
       .type = "gauge",
       .help = "GPU board power draw."},
      {.kind = K::kPowerLimit,
       .component_type = C::kGpu,
       .name = "faultline_gpu_power_limit_watts",
       .type = "gauge",
       .help = "GPU enforced power limit."},
      {.kind = K::kGpuLost,
       .name = "faultline_gpu_lost",
       .type = "gauge",
       .help = "1 when the GPU stopped answering (GPU_IS_LOST / RESET_REQUIRED) in the window."},
      // Interconnect
      {.kind = K::kPcieReplay,
       .name = "faultline_pcie_replays_total",
       .type = "counter",
       .help = "PCIe replays (NVML replay counter)."},
      {.kind = K::kPcieLinkWidth,
       .name = "faultline_pcie_link_width_lanes",
       .type = "gauge",
       .help = "PCIe link width as trained (0 = link down)."},
      {.kind = K::kPcieLinkWidth,
       .name = "faultline_pcie_link_max_width_lanes",
       .type = "gauge",
       .help = "PCIe link width the link supports.",
       .value_attr = "max"},
      {.kind = K::kPcieLinkSpeed,
       .name = "faultline_pcie_link_speed_transfers_per_second",
       .type = "gauge",
       .help = "PCIe link speed as trained.",
       .scale = 1e9},
      {.kind = K::kPcieLinkSpeed,
       .name = "faultline_pcie_link_max_speed_transfers_per_second",
       .type = "gauge",
       .help = "PCIe link speed the link supports.",
       .scale = 1e9,
       .value_attr = "max"},
      {.kind = K::kPcieLinkGen,
       .name = "faultline_pcie_link_generation",
       .type = "gauge",
       .help = "PCIe generation as trained (NVML)."},
      {.kind = K::kPcieLinkGen,
       .name = "faultline_pcie_link_max_generation",
       .type = "gauge",
       .help = "PCIe generation the link supports (NVML).",
       .value_attr = "max"},
      {.kind = K::kNvlinkState, .name = "faultline_nvlink_up", .type = "gauge", .help = "1 when the NVLink is active."},
      {.kind = K::kNvlinkCrcFlit,
       .name = "faultline_nvlink_crc_flit_errors_total",
       .type = "counter",
       .help = "NVLink flow-control CRC errors."},
      {.kind = K::kNvlinkCrcData,
       .name = "faultline_nvlink_crc_data_errors_total",
       .type = "counter",
       .help = "NVLink data CRC errors."},
      {.kind = K::kNvlinkReplay,
       .name = "faultline_nvlink_replays_total",
       .type = "counter",
       .help = "NVLink replays."},
      {.kind = K::kNvlinkRecovery,
       .name = "faultline_nvlink_recoveries_total",
       .type = "counter",
       .help = "NVLink recoveries."},
      {.kind = K::kIbPortState,
       .name = "faultline_ib_port_state",
       .type = "gauge",
       .help = "InfiniBand port state number (1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE)."},
      {.kind = K::kIbRate,
       .name = "faultline_ib_port_rate_bytes_per_second",
       .type = "gauge",
       .help = "InfiniBand port rate (the kernel reports Gb/s).",
       .scale = 1e9 / 8},
      {.kind = K::kIbSymbolError,
       .name = "faultline_ib_symbol_errors_total",
       .type = "counter",
       .help = "InfiniBand symbol errors (PortCounters, saturates)."},
      {.kind = K::kIbLinkErrorRecovery,
       .name = "faultline_ib_link_error_recoveries_total",
       .type = "counter",
       .help = "InfiniBand link error recoveries (saturates at 255)."},
      {.kind = K::kIbLinkDowned,
       .name = "faultline_ib_link_downed_total",
       .type = "counter",
       .help = "Times the InfiniBand link went down (saturates at 255)."},
      {.kind = K::kIbRcvError,
       .name = "faultline_ib_port_rcv_errors_total",
       .type = "counter",
       .help = "InfiniBand packets received with errors."},
      {.kind = K::kIbLinkIntegrity,
       .name = "faultline_ib_local_link_integrity_errors_total",
       .type = "counter",
       .help = "InfiniBand local link integrity errors (saturates at 15)."},
      {.kind = K::kIbXmitDiscards,
       .name = "faultline_ib_port_xmit_discards_total",
       .type = "counter",
       .help = "InfiniBand outbound packets discarded."},
      // Out of band (BMC)
      {.kind = K::kPsuState,
       .name = "faultline_psu_health",
       .type = "gauge",
       .help = "PSU health as the BMC reports it (0 OK, 1 Warning, 2 Critical, -1 unknown)."},
      {.kind = K::kVoltage,
       .attr_key = "role",
       .attr_value = "input",
       .component_type = C::kPsu,
       .name = "faultline_psu_input_volts",
       .type = "gauge",
       .help = "PSU line input voltage."},
      {.kind = K::kPower,
       .component_type = C::kPsu,
       .name = "faultline_psu_input_power_watts",
       .type = "gauge",
       .help = "PSU input power."},
      {.kind = K::kTemperature,
       .attr_key = "physical_context",
       .attr_value = "Intake",
       .name = "faultline_inlet_temperature_celsius",
       .type = "gauge",
       .help = "Air inlet (intake) temperature."},
      {.kind = K::kCoolantTemp,
       .attr_key = "point",
       .attr_value = "supply",
       .name = "faultline_coolant_supply_temperature_celsius",
       .type = "gauge",
       .help = "Coolant supply temperature."},
      {.kind = K::kCoolantTemp,
       .attr_key = "point",
       .attr_value = "return",
       .name = "faultline_coolant_return_temperature_celsius",
       .type = "gauge",
       .help = "Coolant return temperature."},
      {.kind = K::kCoolantTemp,
       .attr_key = "point",
       .attr_value = "delta",
       .name = "faultline_coolant_delta_temperature_celsius",
       .type = "gauge",
       .help = "Coolant return minus supply temperature."},
      {.kind = K::kCoolantFlow,
       .name = "faultline_coolant_flow_cubic_meters_per_second",
       .type = "gauge",
       .help = "Coolant flow (the BMC reports L/min).",
       .scale = 1.0 / 60000.0},
      {.kind = K::kLeak,
       .name = "faultline_coolant_leak_state",
       .type = "gauge",
       .help = "Leak detector (0 OK, 1 Warning, 2 Critical)."},
      {.kind = K::kPumpState,
       .name = "faultline_coolant_pump_health",
       .type = "gauge",
       .help = "Coolant pump health (0 OK, 1 Warning, 2 Critical, -1 unknown)."},
      {.kind = K::kFanSpeed,
       .attr_key = "units",
       .attr_value = "RPM",
       .name = "faultline_fan_speed_rpm",
       .type = "gauge",
       .help = "Fan speed in revolutions per minute."},
      {.kind = K::kFanSpeed,
       .attr_key = "units",
       .attr_value = "%",
       .name = "faultline_fan_speed_ratio",
       .type = "gauge",
       .help = "Fan speed as a fraction of full speed.",
       .scale = 0.01},
      {.kind = K::kFanState,
       .name = "faultline_fan_health",
       .type = "gauge",
       .help = "Fan health (0 OK, 1 Warning, 2 Critical, -1 unknown)."},
  };
  return kTable;
}

Result<std::string> RenderMetrics(DataProvider& provider, const MetricsOptions& options, MetricsStats* stats) {
  auto now = provider.NowNs();
  if (!now.ok()) return now.status();
  Exposition out(options.max_series);
  const std::string node = provider.Node();
  // The diagnosis and housekeeping first, so the series cap only ever cuts readings.
  if (Status s = AddDiagnosis(provider, out); !s.ok()) return s;
  if (Status s = AddSources(provider, *now - options.window_ns, out); !s.ok()) return s;
  AddSight(provider, out);
  auto store = provider.StoreStatistics();
  if (!store.ok()) return store.status();
  out.Add("faultline_store_size_bytes", "gauge", "Size of the store's database file (without its WAL).",
          {{"node", node}}, static_cast<double>(store->file_bytes));
  if (*now != 0) {
    out.Add("faultline_newest_observation_timestamp_seconds", "gauge",
            "Time of the newest observation the metrics are read up to (Unix time).", {{"node", node}},
            static_cast<double>(*now) / kNsPerSecond);
  }
  if (options.process_metrics) AddProcess(node, out);
  if (auto latency = provider.EvaluationLatency()) {
    out.AddHistogram("faultline_evaluation_duration_seconds",
                     "Time of one evaluation (detectors, isolator, stored findings and diagnosis).", {{"node", node}},
                     *latency);
  }
  if (auto remediation = provider.Remediation()) AddRemediation(node, *remediation, out);
  for (const auto& [outcome, count] : provider.AssistantCounters()) {
    out.Add("faultline_assistant_investigations_total", "counter",
            "The agent's model investigations (docs/assistant.md \"In the agent\"), by outcome.",
            {{"node", node}, {"outcome", outcome}}, static_cast<double>(count));
  }
  if (Status s = AddXidEvents(provider, options, out); !s.ok()) return s;
  if (Status s = AddReadings(provider, options, *now, out); !s.ok()) return s;
  // Written last, it counts every series left out of this scrape (never itself cut).
  const size_t dropped = out.dropped();
  std::string text = out.Text();
  text +=
      "# HELP faultline_metrics_series_dropped Series left out of this exposition (a label value too long or "
      "with control characters, or over the series cap).\n# TYPE faultline_metrics_series_dropped gauge\n";
  text += "faultline_metrics_series_dropped";
  if (ValidLabelValue(node)) text += "{node=\"" + EscapeLabelValue(node) + "\"}";
  text += " " + std::to_string(dropped) + "\n";
  if (stats != nullptr) *stats = MetricsStats{out.series(), dropped};
  return text;
}

}  // namespace faultline::api
