#include "engine/offline/offline.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <utility>

#include "engine/detect/fabric_detectors.h"
#include "engine/detect/gpu_detectors.h"
#include "engine/detect/kernel_detector.h"
#include "engine/detect/oob_detectors.h"
#include "sources/workload/slowdown.h"

namespace faultline {
namespace {

std::string Key(const ComponentRef& c, const char* key) {
  auto it = c.keys.find(key);
  return it == c.keys.end() ? "" : it->second;
}

// A GPU component that carries its PCI address (NVML, dcgm-exporter) joins the identity
// map; one without stays as seen (DESIGN.md "Identity": never guessed).
void LearnGpus(const std::vector<Observation>& observations, Inventory& inventory) {
  for (const Observation& o : observations) {
    if (o.component.type != ComponentType::kGpu) continue;
    GpuIdentity id;
    id.bdf = NormalizeBdf(Key(o.component, "bdf"));
    if (id.bdf.empty()) continue;
    const std::string index = Key(o.component, "index");
    int value = 0;
    const char* end = index.data() + index.size();
    if (!index.empty() && std::from_chars(index.data(), end, value).ptr == end && value >= 0) id.index = value;
    id.uuid = Key(o.component, "uuid");
    id.serial = Key(o.component, "serial");
    inventory.AddGpu(id);
  }
}

bool InWindow(const Observation& o, const OfflineOptions& options) {
  if (o.time_ns == 0) return true;
  return (!options.since_ns || o.time_ns >= *options.since_ns) && (!options.until_ns || o.time_ns <= *options.until_ns);
}

}  // namespace

std::vector<std::unique_ptr<Detector>> MakeAllDetectors(const Topology* topology, Inventory inventory) {
  std::vector<std::unique_ptr<Detector>> all;
  all.push_back(std::make_unique<KernelDetector>(KernelDetectorOptions{}, std::move(inventory)));
  auto add = [&all](std::vector<std::unique_ptr<Detector>> more) {
    for (auto& d : more) all.push_back(std::move(d));
  };
  add(MakeGpuDetectors());
  add(MakeOobDetectors());
  add(MakeFabricDetectors(FabricOptions{}, topology));
  return all;
}

IsolateInput BuildOfflineInput(std::vector<Observation> observations, const OfflineOptions& options) {
  std::erase_if(observations, [&options](const Observation& o) { return !InWindow(o, options); });
  // Detectors compute rates and "sustained" states from consecutive samples, so two
  // snapshots an hour apart must reach them in that order whatever the file order was.
  std::stable_sort(observations.begin(), observations.end(),
                   [](const Observation& a, const Observation& b) { return a.time_ns < b.time_ns; });
  Inventory inventory = options.inventory;
  LearnGpus(observations, inventory);
  auto detectors = MakeAllDetectors(options.topology, std::move(inventory));
  IsolateInput in;
  in.layers_with_data = options.layers_read;
  std::vector<Observation> workload;
  // As in the agent: the isolator's context is the latest reading of each series (what
  // the node looks like now), plus every step time.
  std::map<std::pair<std::string, ObsKind>, const Observation*> latest;
  for (const Observation& o : observations) {
    for (auto& d : detectors) d->Observe(o);
    in.layers_with_data.insert(o.layer);
    if (o.layer == Layer::kWorkload) {
      workload.push_back(o);
    } else {
      latest[{o.component.Id(), o.kind}] = &o;  // time order: the last one is the latest
    }
  }
  for (const auto& d : detectors) {
    for (Finding& f : d->Findings()) in.findings.push_back(std::move(f));
  }
  for (const Finding& f : in.findings) in.layers_with_data.insert(f.layer);
  // "Slow" is measured from the jobs' own step times, never guessed (as the agent does).
  const SlowdownVerdict slow = DetectNodeSlowdown(workload);
  if (slow.slow) {
    in.slowdown_reported = true;
    in.symptom_ns = slow.began_ns;
  }
  for (const auto& entry : latest) in.observations.push_back(*entry.second);
  for (Observation& o : workload) in.observations.push_back(std::move(o));
  return in;
}

}  // namespace faultline
