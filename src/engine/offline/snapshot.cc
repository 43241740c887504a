#include "engine/offline/snapshot.h"

#include "parse/json_log.h"

#include <algorithm>
#include <exception>
#include <optional>

#include "core/json.h"
#include "parse/dcgm_map.h"
#include "parse/json_log.h"
#include "parse/log_line.h"

namespace faultline {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

size_t SkipSpace(std::string_view text, size_t i) {
  while (i < text.size() && IsSpace(text[i])) ++i;
  return i;
}

std::string_view LineAt(std::string_view text, size_t begin) {
  const size_t nl = text.find('\n', begin);
  return text.substr(begin, nl == std::string_view::npos ? std::string_view::npos : nl - begin);
}

// A first line starting with '[' is a JSON array or a kernel log: dmesg stamps
// ("[    1.234567] ", "[Tue Mar 14 10:02:03 2025] ", "[  +0.000844] ", "[Feb23 16:24] "), or
// a bare kernel message such as "[drm] Initialized ...". A JSON array's first element
// starts with one of {["-0-9 or a literal, or the line holds only the bracket.
bool LooksLikeKernelLine(std::string_view line) {
  switch (ParseLogLine(line, 0).format) {
    case LogFormat::kDmesg:
    case LogFormat::kDmesgCtime:
    case LogFormat::kDmesgReltime:
      return true;
    default:
      break;
  }
  size_t i = 1;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  if (i >= line.size()) return false;  // "[" alone: a pretty-printed array
  const char c = line[i];
  if (c == '{' || c == '[' || c == '"' || c == ']' || c == '-' || IsDigit(c)) return false;
  const std::string_view rest = line.substr(i);
  for (std::string_view literal : {"true", "false", "null"}) {
    if (rest.starts_with(literal)) {
      const size_t end = literal.size();
      if (end == rest.size() || rest[end] == ',' || rest[end] == ']' || rest[end] == ' ') return false;
    }
  }
  return true;
}

// Where the object or array starting at text[begin] ends, found without parsing, so
// that over-deep or truncated values are refused before a recursive parser sees them.
struct ValueSpan {
  size_t end = 0;  // one past the closing bracket (text.size() when incomplete)
  int depth = 0;   // deepest nesting
  bool complete = false;
};

ValueSpan ScanValue(std::string_view text, size_t begin) {
  ValueSpan span;
  int depth = 0;
  JsonStructureScanner scan;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (!scan.Structural(c)) continue;
    if (c == '{' || c == '[') {
      span.depth = std::max(span.depth, ++depth);
    } else if ((c == '}' || c == ']') && --depth == 0) {
      span.end = i + 1;
      span.complete = true;
      return span;
    }
  }
  span.end = text.size();
  return span;
}

// Printable, bounded text for a warning: snapshot bytes are untrusted.
std::string Clean(std::string_view text, size_t max_bytes = 240) {
  std::string out;
  for (char c : text.substr(0, max_bytes)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

// The integer fields of an Observation. nlohmann converts a float to an integer with a
// plain cast, undefined for out-of-range values, so a float there is refused up front.
Status CheckIntegerFields(const Json& j) {
  for (const char* key : {"time_ns", "mono_us", "seq", "code", "count"}) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null() && !it->is_number_integer()) {
      return Status(StatusCode::kCorrupt, std::string("\"") + key + "\" is not an integer");
    }
  }
  return Status::Ok();
}

Result<Observation> DecodeObservation(const Json& j) {
  if (!j.is_object()) return Status(StatusCode::kCorrupt, std::string("not an object but ") + j.type_name());
  if (Status st = CheckIntegerFields(j); !st.ok()) return st;
  try {
    return j.get<Observation>();
  } catch (const std::exception& e) {
    return Status(StatusCode::kCorrupt, e.what());
  }
}

// Reads the JSON forms into a Snapshot, keeping everything around damaged parts.
class JsonSnapshotReader {
 public:
  JsonSnapshotReader(const SnapshotOptions& options, Snapshot& out) : options_(options), out_(out) {}

  void Read(std::string_view text) {
    const size_t first = SkipSpace(text, 0);
    if (first >= text.size()) return Warn("no JSON value in the input");
    if (IsJsonLines(text, first)) {
      ReadLines(text);
    } else {
      ReadValues(text, first);
    }
    if (suppressed_ > 0) out_.warnings.push_back(std::to_string(suppressed_) + " more problem(s) not listed");
  }

  bool usable() const { return usable_ > 0; }

 private:
  // One record per line (collect nvml/sysfs --json, JSON lines of observations) when one
  // of the first lines starting with a bracket is a whole value by itself; a pretty-printed
  // value's first line ("{" or "[") never is.
  static bool IsJsonLines(std::string_view text, size_t pos) {
    for (int lines = 0; lines < 3 && pos < text.size(); ++lines) {
      const std::string_view line = LineAt(text, pos);
      if (!line.empty() && (line[0] == '{' || line[0] == '[')) {
        const ValueSpan span = ScanValue(line, 0);
        if (span.complete && SkipSpace(line, span.end) == line.size() && line.size() > 2) return true;
      }
      pos = SkipSpace(text, pos + line.size());
    }
    return false;
  }

  void ReadLines(std::string_view text) {
    size_t pos = 0, line_no = 0;
    while (pos < text.size()) {
      const std::string_view line = LineAt(text, pos);
      ++line_no;
      const size_t start = SkipSpace(line, 0);
      if (start < line.size()) ReadLine(line.substr(start), "line " + std::to_string(line_no));
      pos += line.size() + 1;
    }
  }

  void ReadLine(std::string_view line, const std::string& where) {
    if (line[0] != '{' && line[0] != '[') return Reject(where + ": not JSON: " + Clean(line, 60));
    const ValueSpan span = ScanValue(line, 0);
    if (!span.complete) return Reject(where + ": truncated JSON");
    ReadValue(line, span.depth, where);  // the whole line: text after the value is an error
  }

  void ReadValues(std::string_view text, size_t pos) {
    while (pos < text.size()) {
      const std::string where = "byte " + std::to_string(pos);
      if (text[pos] != '{' && text[pos] != '[') {
        return Reject(where + ": not JSON, the rest of the input is ignored: " + Clean(LineAt(text, pos), 60));
      }
      const ValueSpan span = ScanValue(text, pos);
      if (!span.complete) return Reject(where + ": truncated JSON: the value starting here never ends");
      ReadValue(text.substr(pos, span.end - pos), span.depth, where);
      pos = SkipSpace(text, span.end);
    }
  }

  void ReadValue(std::string_view value, int depth, const std::string& where) {
    ++out_.records;
    if (depth > options_.max_json_depth) {
      return Reject(where + ": JSON nested " + std::to_string(depth) + " levels deep (limit " +
                    std::to_string(options_.max_json_depth) + "): skipped");
    }
    const Json j = Json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Reject(where + ": not valid JSON");
    Record(j, where, /*nested=*/false);
  }

  // One parsed value: a collect snapshot, one observation, or an array of either.
  void Record(const Json& j, const std::string& where, bool nested) {
    if (j.is_object() && j.contains("observations")) return CollectRecord(j, where);
    if (j.is_object() && j.contains("kind")) {
      if (AddObservation(j, "", where)) ++usable_;
      return;
    }
    if (j.is_array() && !nested) {
      if (j.empty()) ++usable_;  // an empty list of observations is valid, just empty
      for (size_t i = 0; i < j.size(); ++i) Record(j[i], where + " element " + std::to_string(i), true);
      return;
    }
    Reject(where + ": not a snapshot (no \"observations\") nor an observation (a JSON " + j.type_name() + ")");
  }

  void CollectRecord(const Json& j, const std::string& where) {
    const Json& list = j["observations"];
    if (!list.is_array()) return Reject(where + ": \"observations\" is not an array");
    ++usable_;
    const std::string node = j.contains("node") && j["node"].is_string() ? j["node"].get<std::string>() : "";
    for (size_t i = 0; i < list.size(); ++i) AddObservation(list[i], node, where + " observation " + std::to_string(i));
    ReportSourceErrors(j, where);
  }

  // The collector's own errors (a BMC resource that failed, an NVML call) explain gaps.
  void ReportSourceErrors(const Json& j, const std::string& where) {
    auto it = j.find("errors");
    if (it == j.end() || !it->is_array()) return;
    for (const Json& e : *it) {
      std::string text = e.is_string() ? e.get<std::string>() : "";
      if (e.is_object() && e.contains("message") && e["message"].is_string()) text = e["message"].get<std::string>();
      if (!text.empty()) Warn(where + ": the collector reported: " + Clean(text));
    }
  }

  bool AddObservation(const Json& j, const std::string& node, const std::string& where) {
    if (out_.observations.size() >= options_.max_observations) {
      ++out_.dropped;  // over the caller's budget: counted, not decoded
      return true;
    }
    Result<Observation> o = DecodeObservation(j);
    if (!o.ok()) {
      Reject(where + ": " + Clean(o.status().message()));
      return false;
    }
    if (o->node.empty()) o->node = node.empty() ? options_.node : node;
    out_.sources.insert(o->source);
    out_.observations.push_back(std::move(*o));
    return true;
  }

  void Reject(const std::string& why) {
    ++out_.rejected;
    Warn(why);
  }

  void Warn(const std::string& why) {
    if (out_.warnings.size() < options_.max_warnings) {
      out_.warnings.push_back(why);
    } else {
      ++suppressed_;
    }
  }

  const SnapshotOptions& options_;
  Snapshot& out_;
  size_t usable_ = 0;
  size_t suppressed_ = 0;
};

Result<Snapshot> ParseJson(std::string_view text, const SnapshotOptions& options) {
  Snapshot snap;
  snap.format = SnapshotFormat::kJson;
  if (text.starts_with(kBom)) text.remove_prefix(kBom.size());
  JsonSnapshotReader reader(options, snap);
  reader.Read(text);
  if (!reader.usable()) {
    return Status(StatusCode::kCorrupt, snap.warnings.empty() ? "no usable JSON record" : snap.warnings.front());
  }
  return snap;
}

Result<Snapshot> ParsePrometheus(std::string_view text, const SnapshotOptions& options) {
  Result<PromScrape> scrape = ParsePrometheusText(text, options.prometheus);
  if (!scrape.ok()) return Status(StatusCode::kCorrupt, scrape.status().message());
  Snapshot snap;
  snap.format = SnapshotFormat::kPrometheus;
  snap.records = scrape->samples.size();
  snap.rejected = scrape->error_count;
  auto warn = [&snap, &options](std::string w) {
    if (snap.warnings.size() < options.max_warnings) snap.warnings.push_back(Clean(w));
  };
  for (const PromLineError& e : scrape->errors) warn("line " + std::to_string(e.line) + ": " + e.reason);
  if (scrape->samples.empty()) {
    return Status(StatusCode::kCorrupt, snap.warnings.empty() ? "no Prometheus sample" : snap.warnings.front());
  }
  DcgmMapResult mapped = MapDcgmScrape(*scrape, options.scrape_time_ns, DcgmMapOptions{options.node});
  for (std::string& w : mapped.warnings) warn(std::move(w));
  if (mapped.observations.empty()) warn("no DCGM_FI_DEV_* series faultline reads: not a dcgm-exporter scrape?");
  snap.observations = std::move(mapped.observations);
  if (snap.observations.size() > options.max_observations) {
    snap.dropped = snap.observations.size() - options.max_observations;
    snap.observations.resize(options.max_observations);
  }
  for (const Observation& o : snap.observations) snap.sources.insert(o.source);
  return snap;
}

}  // namespace

std::string_view ToString(SnapshotFormat format) {
  switch (format) {
    case SnapshotFormat::kKernelLog:
      return "kernel_log";
    case SnapshotFormat::kJson:
      return "json";
    case SnapshotFormat::kPrometheus:
      return "prometheus";
    case SnapshotFormat::kJournalJson:
      return "journal_json";
    case SnapshotFormat::kDmesgJson:
      return "dmesg_json";
  }
  return "unknown";
}

SnapshotFormat SniffSnapshot(std::string_view head) {
  if (head.starts_with(kBom)) head.remove_prefix(kBom.size());
  const size_t start = SkipSpace(head, 0);
  if (start >= head.size()) return SnapshotFormat::kKernelLog;
  const std::string_view line = LineAt(head, start);
  if (line[0] == '{' || line[0] == '\x1e') {
    switch (SniffJsonLog(head.substr(start))) {
      case JsonLogForm::kJournal:
        return SnapshotFormat::kJournalJson;
      case JsonLogForm::kDmesg:
        return SnapshotFormat::kDmesgJson;
      case JsonLogForm::kNone:
        break;
    }
    return SnapshotFormat::kJson;
  }
  if (line[0] == '[') return LooksLikeKernelLine(line) ? SnapshotFormat::kKernelLog : SnapshotFormat::kJson;
  if (line.starts_with("# HELP ") || line.starts_with("# TYPE ") || line.starts_with("DCGM_FI_")) {
    return SnapshotFormat::kPrometheus;
  }
  return SnapshotFormat::kKernelLog;
}

Result<Snapshot> ParseSnapshot(std::string_view text, SnapshotFormat format, const SnapshotOptions& options) {
  switch (format) {
    case SnapshotFormat::kJson:
      return ParseJson(text, options);
    case SnapshotFormat::kPrometheus:
      return ParsePrometheus(text, options);
    case SnapshotFormat::kKernelLog:
    case SnapshotFormat::kJournalJson:
    case SnapshotFormat::kDmesgJson:
      break;
  }
  return Status(StatusCode::kInvalidArgument, "kernel logs are read by KernelLogReader, not ParseSnapshot");
}

}  // namespace faultline
