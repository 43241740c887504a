#include "cli/render.h"

#include <cstdio>
#include <sstream>

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

}  // namespace

std::string DescribeEvidence(const Evidence& e) {
  std::string when;
  if (e.time_ns != 0) {
    when = FormatIso8601(e.time_ns);
  } else if (e.mono_us) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "+%lld.%06llds", static_cast<long long>(*e.mono_us / 1'000'000),
                  static_cast<long long>(*e.mono_us % 1'000'000));
    when = buf;
  } else {
    when = "(no time)";
  }
  // A reading ("clocks_event_reasons=0x88") does not say whose it is; a log line does.
  const bool reading = e.source == Source::kNvml || e.source == Source::kDcgmExporter || e.source == Source::kSysfs;
  const bool name_it = reading && !e.component.empty() && e.text.find(e.component) == std::string::npos;
  const std::string text = OneLine(ReadableEvidence(e.text));
  std::string line = when + "  " + std::string(ToString(e.source)) + "  " + (name_it ? e.component + ": " : "") +
                     (text.empty() ? "(no text)" : text);
  if (e.count > 1) line += "  (x" + std::to_string(e.count) + ")";
  return line;
}

void RenderDiagnoses(std::ostream& out, const std::vector<Diagnosis>& diagnoses) {
  int n = 0;
  for (const Diagnosis& d : diagnoses) {
    out << ++n << ". " << ToString(d.fault_class) << "  [" << ToString(d.layer) << "]  "
        << DescribeComponent(d.component) << "\n";
    out << "   action: " << ToString(d.action) << "   confidence: " << Confidence(d.confidence)
        << "   severity: " << ToString(d.severity) << "\n";
    if (!d.summary.empty()) out << "   " << OneLine(d.summary, 400) << "\n";
    if (!d.evidence.empty()) {
      out << "   evidence:\n";
      for (size_t i = 0; i < d.evidence.size() && i < kMaxEvidenceShown; ++i) {
        out << "     " << DescribeEvidence(d.evidence[i]) << "\n";
      }
      if (d.evidence.size() > kMaxEvidenceShown) {
        out << "     ... " << d.evidence.size() - kMaxEvidenceShown << " more (see --json)\n";
      }
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
}

void RenderFindings(std::ostream& out, const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    out << "- " << ToString(f.fault_class) << " [" << ToString(f.layer) << "] " << DescribeComponent(f.component)
        << "  action " << ToString(f.action) << "  severity " << ToString(f.severity) << "  x" << f.count << "\n";
    if (!f.summary.empty()) out << "  " << OneLine(f.summary, 400) << "\n";
  }
}

}  // namespace faultline::cli
