// Helpers shared by the fabric detector tests: observation builders and finding queries.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/detect/fabric_detectors.h"

namespace faultline::testing_fabric {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

inline Observation Obs(ComponentRef ref, ObsKind kind, double value, int64_t t,
                       std::map<std::string, std::string> attrs = {}, Source source = Source::kSysfs) {
  Observation o;
  o.time_ns = t;
  o.layer = Layer::kFabric;
  o.component = std::move(ref);
  o.kind = kind;
  o.value = value;
  o.source = source;
  o.attrs = std::move(attrs);
  return o;
}

inline ComponentRef NvlinkRef(int gpu, int link) {
  ComponentRef r{ComponentType::kNvlink, std::to_string(gpu) + "/" + std::to_string(link), {}};
  r.keys["index"] = std::to_string(gpu);
  r.keys["link"] = std::to_string(link);
  return r;
}

inline ComponentRef IbRef(const std::string& dev, const std::string& port) {
  return ComponentRef{ComponentType::kIb, dev + "/" + port, {}};
}

// All findings of all detectors.
inline std::vector<Finding> AllFindings(const std::vector<std::unique_ptr<Detector>>& ds) {
  std::vector<Finding> out;
  for (const auto& d : ds) {
    for (Finding& f : d->Findings()) out.push_back(std::move(f));
  }
  return out;
}

inline void Feed(std::vector<std::unique_ptr<Detector>>& ds, const Observation& o) {
  for (auto& d : ds) d->Observe(o);
}

inline std::string Attr(const Finding& f, const std::string& key) {
  auto it = f.attrs.find(key);
  return it == f.attrs.end() ? "" : it->second;
}

inline const Finding* FindOn(const std::vector<Finding>& fs, const std::string& component_id) {
  for (const Finding& f : fs) {
    if (f.component.Id() == component_id) return &f;
  }
  return nullptr;
}

}  // namespace faultline::testing_fabric
