// Builders for hand-made finding sets: each test states only what matters to its rule.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "engine/isolate/isolator.h"

namespace faultline::testing_isolate {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kMin = 60 * kSec;
// 2026-03-01T10:00:00Z: a fixed, realistic base time.
constexpr int64_t kT0 = 1'772'359'200LL * kSec;

inline ComponentRef Ref(ComponentType type, std::string name, std::map<std::string, std::string> keys = {}) {
  return ComponentRef{type, std::move(name), std::move(keys)};
}

// GPU 3 as NVML names it, with every identity key.
inline ComponentRef Gpu3() {
  return Ref(ComponentType::kGpu, "3",
             {{"index", "3"},
              {"uuid", "GPU-5f1b2c3d-0000-1111-2222-333344445555"},
              {"serial", "1650923012345"},
              {"bdf", "0000:3b:00.0"}});
}

class FindingBuilder {
 public:
  FindingBuilder(Layer layer, FaultClass cls, ComponentRef component, int64_t at_ns) {
    f_.layer = layer;
    f_.fault_class = cls;
    f_.component = std::move(component);
    f_.first_ns = at_ns;
    f_.last_ns = at_ns;
    f_.severity = Severity::kWarning;
    f_.confidence = 0.8;
    f_.summary = std::string(ToString(cls)) + " seen";
    Evidence e;
    e.time_ns = at_ns;
    e.component = f_.component.Id();
    e.text = std::string(ToString(cls)) + " evidence at " + std::to_string(at_ns);
    f_.evidence.push_back(e);
  }
  FindingBuilder& Sev(Severity s) {
    f_.severity = s;
    return *this;
  }
  FindingBuilder& Act(Action a) {
    f_.action = a;
    return *this;
  }
  FindingBuilder& Confidence(double c) {
    f_.confidence = c;
    return *this;
  }
  FindingBuilder& Until(int64_t ns) {
    f_.last_ns = ns;
    return *this;
  }
  FindingBuilder& Attr(std::string k, std::string v) {
    f_.attrs[std::move(k)] = std::move(v);
    return *this;
  }
  FindingBuilder& Summary(std::string s) {
    f_.summary = std::move(s);
    return *this;
  }
  // Where every evidence line came from (default: the kernel log).
  FindingBuilder& From(Source source) {
    for (Evidence& e : f_.evidence) e.source = source;
    return *this;
  }
  FindingBuilder& NoEvidence() {
    f_.evidence.clear();
    return *this;
  }
  operator Finding() const { return f_; }  // NOLINT(google-explicit-constructor)

 private:
  Finding f_;
};

inline FindingBuilder Make(Layer layer, FaultClass cls, ComponentRef component, int64_t at_ns) {
  return FindingBuilder(layer, cls, std::move(component), at_ns);
}

inline Observation Reading(Layer layer, ComponentRef component, ObsKind kind, double value, std::string text,
                           int64_t at_ns) {
  Observation o;
  o.layer = layer;
  o.component = std::move(component);
  o.kind = kind;
  o.value = value;
  o.text = std::move(text);
  o.time_ns = at_ns;
  o.source = layer == Layer::kOob ? Source::kRedfish : Source::kNvml;
  return o;
}

inline IsolateInput AllLayers() {
  IsolateInput in;
  in.layers_with_data = {Layer::kOob, Layer::kGpu, Layer::kOs, Layer::kFabric, Layer::kWorkload};
  return in;
}

inline bool HasClass(const std::vector<Diagnosis>& ds, FaultClass cls) {
  return std::any_of(ds.begin(), ds.end(), [&](const Diagnosis& d) { return d.fault_class == cls; });
}

inline const Diagnosis* Find(const std::vector<Diagnosis>& ds, FaultClass cls) {
  for (const Diagnosis& d : ds) {
    if (d.fault_class == cls) return &d;
  }
  return nullptr;
}

inline bool ExplainsSomething(const Diagnosis& d, const std::string& needle) {
  return std::any_of(d.explains.begin(), d.explains.end(),
                     [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

}  // namespace faultline::testing_isolate
