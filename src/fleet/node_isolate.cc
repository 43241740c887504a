#include "fleet/node_isolate.h"

#include <algorithm>

#include "engine/detect/workload_detector.h"
#include "engine/isolate/input.h"
#include "engine/isolate/isolator.h"

namespace faultline::fleet {
namespace {

Observation FromReading(const NodeState& node, const Reading& r) {
  Observation o;
  o.time_ns = r.time_ns;
  o.node = node.name;
  o.layer = r.layer;
  o.component = {r.type, r.name, {}};
  o.kind = r.kind;
  o.value = r.value;
  o.source = r.source;
  if (!r.sub.empty()) o.attrs[r.kind == ObsKind::kClock ? "clock" : "metric"] = r.sub;
  return o;
}

// A held sample back as the report it came from (throughput was inverted to seconds per
// sample; as a step time it reads the same to the workload detector).
Observation FromSample(const NodeState& node, const WorkSeries& s, const PeerSample& p) {
  Observation o;
  o.time_ns = p.time_ns;
  o.node = node.name;
  o.layer = Layer::kWorkload;
  o.component = HostComponent();
  o.kind = ObsKind::kStepTime;
  o.value = p.seconds;
  o.source = Source::kWorkload;
  o.attrs["job"] = s.job;
  return o;
}

// Everything held, oldest first, as the context and the detector expect.
std::vector<Observation> HeldObservations(const NodeState& node) {
  std::vector<Observation> all;
  for (const Reading& r : node.readings) all.push_back(FromReading(node, r));
  for (const WorkSeries& s : node.series) {
    for (const PeerSample& p : s.samples) all.push_back(FromSample(node, s, p));
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Observation& a, const Observation& b) { return a.time_ns < b.time_ns; });
  return all;
}

}  // namespace

std::vector<Diagnosis> IsolateHeldNode(const NodeState& node, int64_t since_ns, int64_t until_ns) {
  IsolateContext context;
  WorkloadDetector slowdown;
  const std::vector<Observation> held = HeldObservations(node);
  for (const Observation& o : held) {
    context.Observe(o);
    slowdown.Observe(o);
  }
  IsolateInputParts parts = context.Parts();
  for (const Finding& f : node.findings) {
    if (f.layer != Layer::kWorkload) parts.findings.push_back(f);
  }
  for (Finding& f : slowdown.Findings()) parts.findings.push_back(std::move(f));
  parts.window = {.since_ns = since_ns, .until_ns = until_ns};
  parts.slowdown_reported = true;
  return Isolate(BuildIsolateInput(std::move(parts)));
}

}  // namespace faultline::fleet
