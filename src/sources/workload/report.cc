#include "sources/workload/report.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/json.h"
#include "core/time.h"
#include "parse/text.h"

namespace faultline {
namespace {

Status Bad(std::string msg) { return Status(StatusCode::kCorrupt, "workload report: " + std::move(msg)); }

// Latest accepted report time (year 2200): beyond it a number is not a timestamp.
constexpr double kMaxUnixSeconds = 7258118400.0;

Status CheckName(std::string_view key, std::string_view v, const WorkloadParseOptions& o) {
  if (v.empty()) return Bad(std::string(key) + " is empty");
  if (v.size() > o.max_field_bytes) return Bad(std::string(key) + " longer than " + std::to_string(o.max_field_bytes));
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f) return Bad(std::string(key) + " contains a control character");
  }
  return Status::Ok();
}

Result<int64_t> IntField(std::string_view key, std::string_view v, int64_t max) {
  auto n = ParseInt(v);
  if (!n || *n < 0 || *n > max) return Bad(std::string(key) + " is not an integer in [0, " + std::to_string(max) + "]");
  return *n;
}

Result<double> PositiveField(std::string_view key, std::string_view v, double max) {
  auto d = ParseDouble(v);
  if (!d || !std::isfinite(*d) || *d <= 0 || *d > max)
    return Bad(std::string(key) + " is not a number in (0, " + std::to_string(max) + "]");
  return *d;
}

Result<int64_t> TimeField(std::string_view v) {
  if (auto iso = ParseIso8601(v)) return *iso;
  auto secs = ParseDouble(v);
  if (!secs || !std::isfinite(*secs) || *secs < 31536000.0 || *secs > kMaxUnixSeconds) {
    return Bad("time is neither ISO 8601 nor Unix seconds after 1971");
  }
  return static_cast<int64_t>(std::llround(*secs * 1e9));
}

// Applies one key/value pair; both input forms end up here.
Status SetField(WorkloadReport& r, std::string_view key, std::string_view v, const WorkloadParseOptions& o) {
  auto store_int = [&](std::optional<int64_t>& out, int64_t max) -> Status {
    auto n = IntField(key, v, max);
    if (!n.ok()) return n.status();
    out = *n;
    return Status::Ok();
  };
  auto store_double = [&](std::optional<double>& out, double max) -> Status {
    auto d = PositiveField(key, v, max);
    if (!d.ok()) return d.status();
    out = *d;
    return Status::Ok();
  };
  if (key == "node" || key == "job") {
    if (auto s = CheckName(key, v, o); !s.ok()) return s;
    (key == "node" ? r.node : r.job) = std::string(v);
    return Status::Ok();
  }
  if (key == "rank") return store_int(r.rank, o.max_rank);
  if (key == "local_rank") return store_int(r.local_rank, o.max_local_rank);
  if (key == "step") return store_int(r.step, INT64_MAX);
  if (key == "step_time_s") return store_double(r.step_time_s, o.max_step_time_s);
  if (key == "samples_per_s") return store_double(r.samples_per_s, o.max_samples_per_s);
  if (key == "time") {
    auto t = TimeField(v);
    if (!t.ok()) return t.status();
    r.time_ns = *t;
  }
  return Status::Ok();  // unknown keys are the job's own business
}

Status CheckComplete(const WorkloadReport& r) {
  if (r.job.empty()) return Bad("missing job");
  if (!r.step_time_s && !r.samples_per_s) return Bad("needs step_time_s or samples_per_s");
  return Status::Ok();
}

// A report is a flat object; rejecting nesting up front also bounds the JSON parser's
// recursion on hostile input like "[[[[...".
Result<WorkloadReport> ParseJson(std::string_view line, const WorkloadParseOptions& o) {
  if (JsonNestingDepth(line) > 1) return Bad("nested JSON values are not accepted");
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("malformed JSON");
  if (!j.is_object()) return Bad("JSON report must be an object");
  WorkloadReport r;
  for (const auto& [key, value] : j.items()) {
    std::string text;
    if (value.is_string())
      text = value.get<std::string>();
    else if (value.is_number())
      text = value.dump();
    else if (value.is_null())
      continue;
    else
      return Bad("field " + key.substr(0, 64) + " must be a string or number");
    if (auto s = SetField(r, key, text, o); !s.ok()) return s;
  }
  if (auto s = CheckComplete(r); !s.ok()) return s;
  return r;
}

Result<WorkloadReport> ParseKeyValue(std::string_view line, const WorkloadParseOptions& o) {
  WorkloadReport r;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t end = i;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    if (end == i) break;
    const std::string_view token = line.substr(i, end - i);
    const size_t eq = token.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Bad("token without key=value: " + std::string(token.substr(0, 64)));
    if (auto s = SetField(r, token.substr(0, eq), token.substr(eq + 1), o); !s.ok()) return s;
    i = end;
  }
  if (auto s = CheckComplete(r); !s.ok()) return s;
  return r;
}

}  // namespace

Result<WorkloadReport> ParseWorkloadReport(std::string_view line, const WorkloadParseOptions& options) {
  if (line.size() > options.max_line_bytes) return Bad("line longer than " + std::to_string(options.max_line_bytes));
  line = Trim(line);
  if (line.empty()) return Bad("empty line");
  const bool json = line.front() == '{' || line.front() == '[';
  return json ? ParseJson(line, options) : ParseKeyValue(line, options);
}

std::vector<Observation> WorkloadObservations(const WorkloadReport& report, std::string_view raw,
                                              const std::string& default_node, int64_t received_ns) {
  Observation base;
  base.time_ns = report.time_ns.value_or(received_ns);
  base.node = report.node.empty() ? default_node : report.node;
  base.layer = Layer::kWorkload;
  base.source = Source::kWorkload;
  base.component = report.local_rank ? GpuComponent(std::to_string(*report.local_rank)) : HostComponent();
  if (report.step) base.seq = static_cast<uint64_t>(*report.step);
  base.raw = std::string(raw);
  base.attrs["job"] = report.job;
  base.attrs["time_source"] = report.time_ns ? "reported" : "received";
  if (report.rank) base.attrs["rank"] = std::to_string(*report.rank);
  if (report.local_rank) base.attrs["local_rank"] = std::to_string(*report.local_rank);
  if (report.step) base.attrs["step"] = std::to_string(*report.step);
  const std::string step_text = report.step ? "step " + std::to_string(*report.step) : "step";
  std::vector<Observation> out;
  if (report.step_time_s) {
    Observation o = base;
    o.kind = ObsKind::kStepTime;
    o.value = *report.step_time_s;
    o.attrs["unit"] = "s";
    o.text = report.job + " " + step_text + " took " + std::to_string(*report.step_time_s) + " s";
    out.push_back(std::move(o));
  }
  if (report.samples_per_s) {
    Observation o = base;
    o.kind = ObsKind::kThroughput;
    o.value = *report.samples_per_s;
    o.attrs["unit"] = "samples/s";
    o.text = report.job + " " + step_text + " at " + std::to_string(*report.samples_per_s) + " samples/s";
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace faultline
