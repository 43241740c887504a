#include "engine/detect/gpu_common.h"

#include <cmath>
#include <cstdio>

#include "engine/detect/detector.h"

namespace faultline {

GpuCounterSeries::Step GpuCounterSeries::Update(double value) {
  Step step;
  if (!last_) {
    step.first = true;
  } else if (value < *last_) {
    step.reset = true;
  } else {
    step.delta = value - *last_;
  }
  last_ = value;
  return step;
}

bool IsGpuSample(const Observation& obs) {
  return obs.layer == Layer::kGpu && obs.component.type == ComponentType::kGpu && obs.value.has_value() &&
         std::isfinite(*obs.value);
}

Finding& GpuFindingBook::Upsert(std::string_view rule, const Observation& obs) {
  const int64_t t = SortTimeNs(obs);
  Key key{obs.component.Id(), std::string(rule)};
  auto [it, inserted] = findings_.try_emplace(key);
  Finding& f = it->second;
  if (inserted) {
    f.layer = Layer::kGpu;
    f.first_ns = t;
    f.count = 1;
    f.attrs["rule"] = std::string(rule);
    // Identity: one finding per (GPU, rule), from its first sample on (Finding::key).
    f.key = "gpu|" + std::string(rule) + "|" + key.first + "@" + std::to_string(t);
  } else {
    ++f.count;
  }
  f.component = obs.component;  // latest keys win: identity may fill in over time
  if (t > f.last_ns || inserted) f.last_ns = t;
  if (t < f.first_ns) f.first_ns = t;
  if (f.evidence.size() < max_evidence_) {
    f.evidence.push_back(EvidenceFrom(obs));
  } else {
    f.evidence.back() = EvidenceFrom(obs);
  }
  return f;
}

void GpuFindingBook::Touch(std::string_view rule, const Observation& obs) {
  if (Finding* f = Find(obs.component.Id(), rule)) f->last_ns = std::max(f->last_ns, SortTimeNs(obs));
}

Finding* GpuFindingBook::Find(const std::string& component_id, std::string_view rule) {
  auto it = findings_.find(Key{component_id, std::string(rule)});
  return it == findings_.end() ? nullptr : &it->second;
}

bool GpuFindingBook::Has(const std::string& component_id, std::string_view rule) const {
  return findings_.count(Key{component_id, std::string(rule)}) > 0;
}

std::vector<Finding> GpuFindingBook::All() const {
  std::vector<Finding> out;
  out.reserve(findings_.size());
  for (const auto& [key, f] : findings_) out.push_back(f);
  return out;
}

std::string GpuFormatValue(double v) {
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

std::string_view GpuAttrOr(const Observation& obs, const std::string& key, std::string_view fallback) {
  auto it = obs.attrs.find(key);
  return it == obs.attrs.end() ? fallback : std::string_view(it->second);
}

}  // namespace faultline
