#include "engine/detect/oob_finding_book.h"

#include <algorithm>

#include "engine/detect/detector.h"
#include "parse/text.h"

namespace faultline {

std::string OobAttr(const Observation& obs, const std::string& key) {
  auto it = obs.attrs.find(key);
  return it == obs.attrs.end() ? std::string() : it->second;
}

std::optional<double> OobAttrNum(const Observation& obs, const std::string& key) {
  auto it = obs.attrs.find(key);
  if (it == obs.attrs.end()) return std::nullopt;
  return ParseDouble(Trim(it->second));
}

std::string OobPartKey(const ComponentRef& component) {
  auto it = component.keys.find("chassis");
  return it == component.keys.end() || it->second.empty() ? component.Id() : component.Id() + "@" + it->second;
}

void OobFindingBook::Raise(const std::string& key, const Observation& obs, const ComponentRef& component,
                           FaultClass fault_class, Severity severity, Action action, double confidence,
                           const std::string& summary) {
  const int64_t t = SortTimeNs(obs);
  auto [it, inserted] = findings_.try_emplace(key);
  Finding& f = it->second;
  const bool reopened = !inserted && f.attrs["state"] == "cleared";
  if (inserted || reopened) {
    f.layer = Layer::kOob;
    f.component = component;
    f.fault_class = fault_class;
    f.severity = severity;
    f.action = action;
    f.first_ns = inserted ? t : f.first_ns;
    // Identity (Finding::key): the book's key and the first raise; a reopened finding is
    // the same one (it keeps its first time too).
    if (inserted) f.key = "oob|" + key + "@" + std::to_string(t);
    f.count = inserted ? 0 : f.count;
    f.attrs["state"] = "open";
  }
  f.severity = std::max(f.severity, severity);
  f.action = std::max(f.action, action);
  f.confidence = std::max(f.confidence, confidence);
  f.summary = summary;
  f.last_ns = std::max(f.last_ns, t);
  f.count += obs.count;
  // Keep the first evidence and the latest: the onset and the current state matter.
  if (f.evidence.size() >= max_evidence_ && !f.evidence.empty()) f.evidence.pop_back();
  f.evidence.push_back(EvidenceFrom(obs));
}

void OobFindingBook::Clear(const std::string& key, const Observation& obs) {
  auto it = findings_.find(key);
  if (it == findings_.end() || it->second.attrs["state"] != "open") return;
  it->second.attrs["state"] = "cleared";
  it->second.last_ns = std::max(it->second.last_ns, SortTimeNs(obs));
  if (it->second.evidence.size() >= max_evidence_ && !it->second.evidence.empty()) it->second.evidence.pop_back();
  it->second.evidence.push_back(EvidenceFrom(obs));
}

bool OobFindingBook::IsOpen(const std::string& key) const {
  auto it = findings_.find(key);
  return it != findings_.end() && it->second.attrs.count("state") && it->second.attrs.at("state") == "open";
}

std::vector<Finding> OobFindingBook::All() const {
  std::vector<Finding> out;
  for (const auto& [key, f] : findings_) out.push_back(f);
  return out;
}

}  // namespace faultline
