#include "engine/offline/offline.h"

#include <algorithm>
#include <utility>

#include "engine/isolate/input.h"

namespace faultline {
namespace {

bool InWindow(const Observation& o, const OfflineOptions& options) {
  if (o.time_ns == 0) return true;
  return (!options.since_ns || o.time_ns >= *options.since_ns) && (!options.until_ns || o.time_ns <= *options.until_ns);
}

}  // namespace

IsolateInput BuildOfflineInput(std::vector<Observation> observations, const OfflineOptions& options) {
  std::erase_if(observations, [&options](const Observation& o) { return !InWindow(o, options); });
  // Detectors compute rates and "sustained" states from consecutive samples, so two
  // snapshots an hour apart must reach them in that order whatever the file order was.
  // A kernel log alone is usually in order already: moving every Observation through a
  // merge sort then costs more than reading the log.
  const auto earlier = [](const Observation& a, const Observation& b) { return a.time_ns < b.time_ns; };
  if (!std::is_sorted(observations.begin(), observations.end(), earlier)) {
    std::stable_sort(observations.begin(), observations.end(), earlier);
  }
  IsolateContext context(options.inventory);
  auto detectors = MakeAllDetectors({.topology = options.topology, .inventory = &context.inventory()});
  for (const Observation& o : observations) {
    context.Observe(o);
    for (auto& d : detectors) d->Observe(o);
  }
  IsolateInputParts parts = context.Parts();
  parts.layers_with_data = options.layers_read;
  for (const auto& d : detectors) {
    for (Finding& f : d->Findings()) parts.findings.push_back(std::move(f));
  }
  return BuildIsolateInput(std::move(parts));
}

}  // namespace faultline
