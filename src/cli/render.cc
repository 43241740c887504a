#include "cli/render.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "core/json.h"
#include "core/time.h"

namespace faultline::cli {
namespace {

constexpr size_t kMaxEvidenceShown = 12;

std::string OneLine(std::string s, size_t max = 200) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
    else if (static_cast<unsigned char>(c) < 0x20)
      c = '?';  // never echo control bytes from logs to a terminal
  }
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

std::string Confidence(double c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", c);
  return buf;
}

}  // namespace

std::string DescribeComponent(const ComponentRef& c) {
  std::string s = c.Id();
  std::string keys;
  for (const char* k : {"bdf", "uuid", "serial", "upstream_port", "slot", "link", "part"}) {
    auto it = c.keys.find(k);
    if (it == c.keys.end() || it->second.empty() || it->second == c.name) continue;  // no "bdf ,"
    if (!keys.empty()) keys += ", ";
    keys += std::string(k) + " " + it->second;
  }
  return keys.empty() ? s : s + " (" + keys + ")";
}

namespace {

// Redfish evidence is the raw JSON of the resource or log entry (kept whole in --json);
// on a terminal its message, or its name and status, say the same in one glance.
std::string ReadableEvidence(const std::string& text) {
  if (text.empty() || text.front() != '{') return text;
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return text;  // cut JSON (the raw field is bounded) stays as it is
  auto str = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (std::string message = str("Message"); !message.empty()) {
    std::string id = str("MessageId");
    return id.empty() ? message : message + " [" + id + "]";
  }
  std::string name = str("Name");
  if (name.empty()) name = str("MemberId");
  auto status = j.find("Status");
  if (name.empty() || status == j.end() || !status->is_object()) return text;
  std::string out = name;
  for (const char* key : {"State", "Health"}) {
    auto it = status->find(key);
    if (it != status->end() && it->is_string()) out += " " + it->get<std::string>();
  }
  for (const char* key : {"ReadingCelsius", "LineInputVoltage", "Reading"}) {
    auto it = j.find(key);
    if (it != j.end() && it->is_number()) {
      std::ostringstream os;
      os << " " << key << "=" << it->get<double>();
      out += os.str();
    }
  }
  return out;
}

std::string When(const Evidence& e) {
  if (e.time_ns != 0) return FormatIso8601(e.time_ns);
  if (!e.mono_us) return "(no time)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "+%lld.%06llds", static_cast<long long>(*e.mono_us / 1'000'000),
                static_cast<long long>(*e.mono_us % 1'000'000));
  return buf;
}

// The line without its count.
std::string EvidenceLine(const Evidence& e) {
  // A reading ("clocks_event_reasons=0x88") does not say whose it is; a log line does.
  const bool reading = e.source == Source::kNvml || e.source == Source::kDcgmExporter || e.source == Source::kSysfs;
  const bool name_it = reading && !e.component.empty() && e.text.find(e.component) == std::string::npos;
  const std::string text = OneLine(ReadableEvidence(e.text));
  return When(e) + "  " + std::string(ToString(e.source)) + "  " + (name_it ? e.component + ": " : "") +
         (text.empty() ? "(no text)" : text);
}

}  // namespace

std::string DescribeEvidence(const Evidence& e) {
  std::string line = EvidenceLine(e);
  if (e.count > 1) line += "  (x" + std::to_string(e.count) + ")";
  return line;
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsAlnum(char c) { return IsHex(c) || (c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z'); }

// `shape`: 'h' is any hex digit, anything else itself.
bool HasShape(std::string_view t, std::string_view shape) {
  if (t.size() != shape.size()) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (shape[i] == 'h' ? !IsHex(t[i]) : t[i] != shape[i]) return false;
  }
  return true;
}

bool LooksLikeBdf(std::string_view t) {
  while (!t.empty() && (t.back() == ':' || t.back() == '.')) t.remove_suffix(1);
  return HasShape(t, "hhhh:hh:hh.h") || HasShape(t, "hhhh:hh:hh") || HasShape(t, "hh:hh.h");
}

// The number at s[i] (a digit): appends '#' and its value; returns where it ends.
size_t MaskNumberAt(std::string_view s, size_t i, MaskedText& out) {
  size_t j = i;
  double value = 0;
  if (s[i] == '0' && i + 2 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X') && IsHex(s[i + 2])) {
    for (j = i + 2; j < s.size() && IsHex(s[j]);) ++j;
    value = static_cast<double>(std::strtoull(std::string(s.substr(i + 2, j - i - 2)).c_str(), nullptr, 16));
  } else {
    while (j < s.size() && IsDigit(s[j])) ++j;
    if (j + 1 < s.size() && s[j] == '.' && IsDigit(s[j + 1])) {
      for (++j; j < s.size() && IsDigit(s[j]);) ++j;
    }
    value = std::strtod(std::string(s.substr(i, j - i)).c_str(), nullptr);
  }
  out.mask += '#';
  out.numbers.push_back(value);
  return j;
}

std::string FormatNumber(double v) {
  char buf[32];
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v > -1e15 && v < 1e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%g", v);
  }
  return buf;
}

// "min .. max" of the one number that differs between texts of one mask; "" when none or
// several do (a log line's sequence number and time move together: no single value to show).
std::string VaryingRange(const std::vector<MaskedText>& texts) {
  if (texts.size() < 2) return "";
  std::optional<size_t> varying;
  for (size_t k = 0; k < texts.front().numbers.size(); ++k) {
    for (const MaskedText& t : texts) {
      if (t.numbers[k] == texts.front().numbers[k]) continue;
      if (varying) return "";
      varying = k;
      break;
    }
  }
  if (!varying) return "";
  double lo = texts.front().numbers[*varying];
  double hi = lo;
  for (const MaskedText& t : texts) {
    lo = std::min(lo, t.numbers[*varying]);
    hi = std::max(hi, t.numbers[*varying]);
  }
  return FormatNumber(lo) + " .. " + FormatNumber(hi);
}

// Indices grouped by key: each group in input order, groups in order of first appearance.
std::vector<std::vector<size_t>> GroupByKey(const std::vector<std::string>& keys) {
  std::map<std::string, size_t> index;
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = index.try_emplace(keys[i], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

// What must match, besides the numbers of the summary, for two items to fold.
template <typename T>
std::string FoldKey(const T& x) {
  return std::string(ToString(x.fault_class)) + '\x1f' + std::string(ToString(x.layer)) + '\x1f' + x.component.Id() +
         '\x1f' + std::string(ToString(x.action)) + '\x1f' + std::string(ToString(x.severity)) + '\x1f' +
         MaskNumbers(x.summary).mask;
}

auto EvidenceTime(const Evidence& e) {
  return std::make_tuple(e.time_ns, e.mono_us.value_or(std::numeric_limits<int64_t>::min()));
}

std::string DescribeFold(const std::vector<const Evidence*>& lines) {
  if (lines.size() == 1) return DescribeEvidence(*lines.front());
  const Evidence* first = lines.front();
  const Evidence* latest = lines.front();
  uint64_t total = 0;
  std::vector<MaskedText> masks;
  for (const Evidence* e : lines) {
    if (EvidenceTime(*e) < EvidenceTime(*first)) first = e;
    if (EvidenceTime(*e) >= EvidenceTime(*latest)) latest = e;
    total += e->count;
    masks.push_back(MaskNumbers(e->text));
  }
  const std::string range = VaryingRange(masks);
  return EvidenceLine(*latest) + "  (x" + std::to_string(total) + " since " + When(*first) +
         (range.empty() ? "" : ", " + range) + ")";
}

void RenderDiagnosis(std::ostream& out, int n, const Diagnosis& d, size_t alike) {
  out << n << ". " << ToString(d.fault_class) << "  [" << ToString(d.layer) << "]  " << DescribeComponent(d.component)
      << (alike > 1 ? "  x" + std::to_string(alike) : "") << "\n";
  out << "   action: " << ToString(d.action) << "   confidence: " << Confidence(d.confidence)
      << "   severity: " << ToString(d.severity) << "\n";
  if (!d.summary.empty()) out << "   " << OneLine(d.summary, 400) << "\n";
  if (alike > 1) out << "   (" << alike - 1 << " more like it, differing only in numbers: see --json)\n";
  if (!d.evidence.empty()) {
    out << "   evidence:\n";
    RenderEvidence(out, d.evidence, kMaxEvidenceShown);
  }
  for (const std::string& s : d.explains) {
    if (!s.empty()) out << "   explains: " << OneLine(s) << "\n";
  }
  if (!d.ruled_out.empty()) {
    out << "   ruled out:\n";
    for (const RuledOut& r : d.ruled_out) {
      // A layer ruled out without a stated reason prints as just the layer, never "os: ".
      out << "     " << ToString(r.layer) << (r.reason.empty() ? "" : ": " + OneLine(r.reason)) << "\n";
    }
  }
  out << "\n";
}

// One line for a group of findings; versions of one finding (same key and start) count once.
void RenderFindingGroup(std::ostream& out, const std::vector<const Finding*>& group) {
  std::map<std::pair<std::string, int64_t>, uint64_t> events;  // (key, first_ns) -> latest count
  const Finding* latest = group.front();
  std::vector<MaskedText> masks;
  for (const Finding* f : group) {
    uint64_t& count = events[{f->key, f->first_ns}];
    count = std::max(count, f->count);
    if (f->last_ns >= latest->last_ns) latest = f;
    masks.push_back(MaskNumbers(f->summary));
  }
  uint64_t total = 0;
  for (const auto& [event, count] : events) total += count;
  const Finding& f = *latest;
  out << "- " << ToString(f.fault_class) << " [" << ToString(f.layer) << "] " << DescribeComponent(f.component)
      << "  action " << ToString(f.action) << "  severity " << ToString(f.severity) << "  x" << total
      << (events.size() > 1 ? "  (" + std::to_string(events.size()) + " findings)" : "") << "\n";
  if (f.summary.empty()) return;
  const std::string range = VaryingRange(masks);
  out << "  " << OneLine(f.summary, 400);
  if (group.size() > 1) out << "  (latest of " << group.size() << (range.empty() ? "" : "; " + range) << ")";
  out << "\n";
}

}  // namespace

MaskedText MaskNumbers(std::string_view s) {
  MaskedText out;
  size_t i = 0;
  while (i < s.size()) {
    if (IsHex(s[i]) && (i == 0 || !IsAlnum(s[i - 1]))) {
      size_t j = i;
      while (j < s.size() && (IsHex(s[j]) || s[j] == ':' || s[j] == '.')) ++j;
      if (LooksLikeBdf(s.substr(i, j - i))) {
        out.mask.append(s.substr(i, j - i));
        i = j;
        continue;
      }
    }
    if (IsDigit(s[i])) {
      i = MaskNumberAt(s, i, out);
    } else {
      out.mask += s[i++];
    }
  }
  return out;
}

void RenderEvidence(std::ostream& out, const std::vector<Evidence>& evidence, size_t max_lines) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < evidence.size(); ++i) {
    const Evidence& e = evidence[i];
    keys.push_back(e.component.empty()
                       ? "\x1e" + std::to_string(i)
                       : std::string(ToString(e.source)) + '\x1f' + e.component + '\x1f' + MaskNumbers(e.text).mask);
  }
  const auto groups = GroupByKey(keys);
  size_t hidden = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g >= max_lines) {
      hidden += groups[g].size();
      continue;
    }
    std::vector<const Evidence*> lines;
    for (size_t i : groups[g]) lines.push_back(&evidence[i]);
    out << "     " << DescribeFold(lines) << "\n";
  }
  if (hidden > 0) out << "     ... " << hidden << " more (see --json)\n";
}

void RenderDiagnoses(std::ostream& out, const std::vector<Diagnosis>& diagnoses) {
  std::vector<std::string> keys;
  for (const Diagnosis& d : diagnoses) keys.push_back(FoldKey(d));
  int n = 0;
  for (const auto& group : GroupByKey(keys)) RenderDiagnosis(out, ++n, diagnoses[group.front()], group.size());
}

void RenderFindings(std::ostream& out, const std::vector<Finding>& findings) {
  std::vector<std::string> keys;
  for (const Finding& f : findings) keys.push_back(FoldKey(f));
  for (const auto& group : GroupByKey(keys)) {
    std::vector<const Finding*> members;
    for (size_t i : group) members.push_back(&findings[i]);
    RenderFindingGroup(out, members);
  }
}

}  // namespace faultline::cli
