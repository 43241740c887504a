#include "parse/prometheus.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "parse/text.h"

namespace faultline {
namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

Status Bad(std::string reason) { return Status(StatusCode::kCorrupt, std::move(reason)); }

// A left-to-right reader over one line; every method leaves `pos_` after what it consumed.
class LineReader {
 public:
  explicit LineReader(std::string_view s) : s_(s) {}

  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return AtEnd() ? '\0' : s_[pos_]; }
  void SkipBlanks() {
    while (!AtEnd() && IsBlank(s_[pos_])) ++pos_;
  }
  bool Consume(char c) {
    if (Peek() != c || AtEnd()) return false;
    ++pos_;
    return true;
  }

  // Metric names also allow ':' (recording rules); label names do not.
  std::string_view Name(bool allow_colon) {
    size_t start = pos_;
    auto ok_start = [&](char c) { return IsNameStart(c) || (allow_colon && c == ':'); };
    auto ok_char = [&](char c) { return IsNameChar(c) || (allow_colon && c == ':'); };
    if (AtEnd() || !ok_start(s_[pos_])) return {};
    while (!AtEnd() && ok_char(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  // The body of a quoted label value, unescaped; the opening quote is already consumed.
  Result<std::string> QuotedValue() {
    std::string out;
    while (!AtEnd()) {
      char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (AtEnd()) break;
      char e = s_[pos_++];
      if (e == '\\' || e == '"') {
        out.push_back(e);
      } else if (e == 'n') {
        out.push_back('\n');
      } else {
        return Bad(std::string("invalid escape \\") + e + " in label value");
      }
    }
    return Bad("unterminated label value (missing closing quote)");
  }

  std::string_view Rest() const { return AtEnd() ? std::string_view() : s_.substr(pos_); }

  // The next blank-separated token.
  std::string_view Token() {
    size_t start = pos_;
    while (!AtEnd() && !IsBlank(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// Prometheus values go through Go's ParseFloat: decimal, exponent, NaN and +/-Inf in
// any case. from_chars is locale-independent (strtod is not) but rejects a leading '+'.
std::optional<double> ParseValue(std::string_view t) {
  if (t.empty() || t.size() > 128) return std::nullopt;
  bool negative = false;
  if (t[0] == '+' || t[0] == '-') {
    negative = t[0] == '-';
    t.remove_prefix(1);
    if (t.empty() || t[0] == '+' || t[0] == '-') return std::nullopt;
  }
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (p != t.data() + t.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    v = std::numeric_limits<double>::infinity();  // "1e999" is +Inf to Go as well
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

Status ParseLabels(LineReader& r, const PromParseOptions& options, PromSample& sample) {
  while (true) {
    r.SkipBlanks();
    if (r.Consume('}')) return Status::Ok();
    std::string_view key = r.Name(/*allow_colon=*/false);
    if (key.empty()) return Bad("expected a label name or '}'");
    r.SkipBlanks();
    if (!r.Consume('=')) return Bad("expected '=' after label " + std::string(key));
    r.SkipBlanks();
    if (!r.Consume('"')) return Bad("expected '\"' to open the value of label " + std::string(key));
    Result<std::string> value = r.QuotedValue();
    if (!value.ok()) return value.status();
    if (sample.Label(key) != nullptr) return Bad("duplicate label " + std::string(key));
    if (sample.labels.size() >= options.max_labels) return Bad("too many labels");
    sample.labels.emplace_back(std::string(key), std::move(*value));
    r.SkipBlanks();
    if (r.Consume('}')) return Status::Ok();
    if (!r.Consume(',')) return Bad("expected ',' or '}' after label " + std::string(key));
  }
}

// "# HELP name doc" / "# TYPE name type"; other comments are ignored.
Status ParseComment(std::string_view line, PromScrape& out) {
  LineReader r(line.substr(1));
  r.SkipBlanks();
  std::string_view keyword = r.Token();
  if (keyword != "HELP" && keyword != "TYPE") return Status::Ok();
  r.SkipBlanks();
  std::string_view name = r.Name(/*allow_colon=*/true);
  if (name.empty()) return Bad(std::string(keyword) + " line without a metric name");
  if (!r.AtEnd() && !IsBlank(r.Peek())) return Bad("invalid metric name in " + std::string(keyword) + " line");
  r.SkipBlanks();
  PromMetadata& meta = out.metadata[std::string(name)];
  if (keyword == "TYPE") {
    std::string_view type = Trim(r.Token());
    if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" && type != "untyped") {
      return Bad("unknown metric type '" + std::string(type.substr(0, 32)) + "'");
    }
    meta.type = std::string(type);
    return Status::Ok();
  }
  std::string help;
  std::string_view rest = Trim(r.Rest());
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '\\' && i + 1 < rest.size() && (rest[i + 1] == '\\' || rest[i + 1] == 'n')) {
      help.push_back(rest[i + 1] == 'n' ? '\n' : '\\');
      ++i;
    } else {
      help.push_back(rest[i]);
    }
  }
  meta.help = std::move(help);
  return Status::Ok();
}

void AddError(PromScrape& out, const PromParseOptions& options, size_t line, const Status& status) {
  ++out.error_count;
  if (out.errors.size() < options.max_errors) out.errors.push_back({line, status.message()});
}

}  // namespace

const std::string* PromSample::Label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

Result<PromSample> ParsePrometheusSample(std::string_view line, const PromParseOptions& options) {
  if (line.size() > options.max_line_bytes) return Bad("line longer than " + std::to_string(options.max_line_bytes));
  LineReader r(line);
  r.SkipBlanks();
  PromSample sample;
  sample.name = std::string(r.Name(/*allow_colon=*/true));
  if (sample.name.empty()) return Bad("expected a metric name");
  if (!r.AtEnd() && !IsBlank(r.Peek()) && r.Peek() != '{') return Bad("invalid character in metric name");
  r.SkipBlanks();
  if (r.Consume('{')) {
    Status s = ParseLabels(r, options, sample);
    if (!s.ok()) return s;
  }
  r.SkipBlanks();
  std::string_view value_text = r.Token();
  std::optional<double> value = ParseValue(value_text);
  if (!value) return Bad("invalid sample value '" + std::string(value_text.substr(0, 32)) + "'");
  sample.value = *value;
  r.SkipBlanks();
  if (!r.AtEnd()) {
    std::string_view ts_text = r.Token();
    std::optional<int64_t> ts = ParseInt(ts_text);
    if (!ts) return Bad("invalid timestamp '" + std::string(ts_text.substr(0, 32)) + "'");
    sample.timestamp_ms = *ts;
    r.SkipBlanks();
    if (!r.AtEnd()) return Bad("unexpected text after timestamp");
  }
  sample.raw = std::string(line.substr(0, options.max_raw_bytes));
  return sample;
}

Result<PromScrape> ParsePrometheusText(std::string_view text, const PromParseOptions& options) {
  if (text.size() > options.max_input_bytes) {
    return Status(StatusCode::kInvalidArgument, "scrape is " + std::to_string(text.size()) +
                                                    " bytes, over the cap of " +
                                                    std::to_string(options.max_input_bytes));
  }
  PromScrape out;
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > options.max_line_bytes) {
      AddError(out, options, line_no, Bad("line longer than " + std::to_string(options.max_line_bytes)));
      continue;
    }
    std::string_view trimmed = Trim(line);
    if (trimmed.empty()) continue;
    if (trimmed[0] == '#') {
      Status s = ParseComment(trimmed, out);
      if (!s.ok()) AddError(out, options, line_no, s);
      continue;
    }
    Result<PromSample> sample = ParsePrometheusSample(trimmed, options);
    if (!sample.ok()) {
      AddError(out, options, line_no, sample.status());
      continue;
    }
    if (out.samples.size() >= options.max_samples) {
      return Status(StatusCode::kInvalidArgument,
                    "scrape has more than " + std::to_string(options.max_samples) + " samples");
    }
    sample->line = line_no;
    out.samples.push_back(std::move(*sample));
  }
  return out;
}

}  // namespace faultline
