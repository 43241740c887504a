// Test data for the fleet analyzer, built in code: a fleet of racks, a job across them
// reporting step times and GPU clocks, per-node diagnoses. Deterministic (no clock, no RNG state).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fleet/fleet_topology.h"
#include "fleet/wire.h"

namespace faultline::fleet::testing {

inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kStart = int64_t{1'760'000'000} * kSecond;

// racks x per_rack nodes "r<R>-n<K>"; per rack a PDU "pdu-r<R>", loop "loop-r<R>", leaf
// "leaf-r<R>"; racks 0,1 on feed "feed-A", 2,3 on "feed-B", ...; driver "550.54".
inline FleetTopology MakeTopology(int racks, int per_rack) {
  FleetTopology t;
  t.site = "dc1";
  for (int r = 0; r < racks; ++r) {
    for (int k = 0; k < per_rack; ++k) {
      const std::string rack = "r" + std::to_string(r);
      t.nodes.push_back({.name = rack + "-n" + std::to_string(k),
                         .site = "",
                         .rack = rack,
                         .pdu = "pdu-" + rack,
                         .feed = std::string("feed-") + static_cast<char>('A' + r / 2),
                         .cooling_loop = "loop-" + rack,
                         .leaf_switch = "leaf-" + rack,
                         .driver = "550.54"});
    }
  }
  return t;
}

// A small deterministic jitter in [-amp, amp] from a node name and a step.
inline double Jitter(const std::string& node, int step, double amp) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : node) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ static_cast<uint64_t>(step)) * 1099511628211ULL;
  h ^= h >> 29;
  return amp * (static_cast<double>(h % 2001) / 1000.0 - 1.0);
}

// A job across the fleet: every node reports one step time per step (1 s apart) and its
// 8 GPUs' SM clocks, as one observation batch per node per step.
struct JobStream {
  const FleetTopology* topology = nullptr;
  std::string job = "train-1";
  double step_s = 1.0;
  // Multiplies a node's step time at a step (1 = healthy).
  std::function<double(const std::string& node, int step)> slowdown = [](const std::string&, int) { return 1.0; };
  // A GPU's SM clock at a step.
  std::function<double(const std::string& node, int gpu, int step)> clock = [](const std::string&, int, int) {
    return 1410.0;
  };
  bool with_clocks = true;
  std::map<std::string, int64_t> rows;  // per node store row counter

  Envelope Batch(const FleetNode& n, int step) {
    Envelope e;
    e.kind = RecordKind::kObservations;
    e.place = {.site = "dc1", .rack = n.rack, .node = n.name};
    e.sent_ns = kStart + step * kSecond;
    Observation o;
    o.time_ns = kStart + step * kSecond;
    o.node = n.name;
    o.layer = Layer::kWorkload;
    o.kind = ObsKind::kStepTime;
    o.source = Source::kWorkload;
    o.component = HostComponent();
    o.seq = static_cast<uint64_t>(step);
    o.value = step_s * slowdown(n.name, step) * (1 + Jitter(n.name, step, 0.02));
    o.attrs = {{"job", job}, {"rank", n.name}};
    e.observations.push_back(o);
    for (int g = 0; with_clocks && g < 8; ++g) {
      Observation c;
      c.time_ns = o.time_ns;
      c.node = n.name;
      c.layer = Layer::kGpu;
      c.kind = ObsKind::kClock;
      c.source = Source::kNvml;
      c.component = GpuComponent(std::to_string(g));
      c.value = clock(n.name, g, step);
      c.attrs = {{"clock", "sm"}};
      e.observations.push_back(c);
    }
    int64_t& row = rows[n.name];
    const int64_t first = row + 1;
    for (size_t i = 0; i < e.observations.size(); ++i) e.observation_ids.push_back(++row);
    e.msg_id = MakeMsgId(n.name, RecordKind::kObservations, first, row);
    return e;
  }

  // Every node's batch for steps [from, to), step by step.
  std::vector<Envelope> Steps(int from, int to) {
    std::vector<Envelope> out;
    for (int s = from; s < to; ++s) {
      for (const FleetNode& n : topology->nodes) out.push_back(Batch(n, s));
    }
    return out;
  }
};

inline int64_t StepTime(int step) { return kStart + step * kSecond; }

// A per-node diagnosis envelope with its store row id.
inline Envelope DiagnosisEnvelope(const FleetNode& n, int64_t row_id, FaultClass fc, ComponentRef component,
                                  int64_t at_ns) {
  Envelope e;
  e.kind = RecordKind::kDiagnosis;
  e.place = {.site = "dc1", .rack = n.rack, .node = n.name};
  e.row_id = row_id;
  e.msg_id = MakeMsgId(n.name, RecordKind::kDiagnosis, row_id, row_id);
  e.sent_ns = at_ns;
  Diagnosis d;
  d.fault_class = fc;
  d.component = std::move(component);
  d.layer = Layer::kOob;
  d.severity = Severity::kCritical;
  d.action = Action::kRma;
  d.confidence = 0.8;
  d.first_ns = at_ns;
  d.last_ns = at_ns + 5 * kSecond;
  d.summary = std::string(ToString(fc)) + " on " + n.name;
  d.evidence = {{.time_ns = at_ns, .source = Source::kRedfish, .component = d.component.Id(), .text = "evidence"}};
  e.diagnosis = d;
  return e;
}

}  // namespace faultline::fleet::testing
