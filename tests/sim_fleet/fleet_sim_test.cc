// The fleet simulator: deterministic, change-only, consistent row and message ids, the
// right per-node diagnoses on exactly the nodes a fault reaches, whole-job phases, and
// truths (hand-written and generated) that agree with the faults and the physics.
#include "sim/fleet/fleet_sim.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "fleet/wire.h"
#include "sim/fleet/fleet_bench.h"

namespace faultline::sim {
namespace {

using fleet::Envelope;
using fleet::RecordKind;

FleetScenario Parse(const std::string& text) {
  auto sc = ParseFleetScenario(text);
  EXPECT_TRUE(sc.ok()) << sc.status().ToString();
  return sc.ok() ? *sc : FleetScenario{};
}

FleetScenario Load(const std::string& name) {
  auto sc = LoadFleetScenario(std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/fleet/" + name);
  EXPECT_TRUE(sc.ok()) << sc.status().ToString();
  return sc.ok() ? *sc : FleetScenario{};
}

std::vector<Envelope> RunAll(const FleetScenario& sc, double step) {
  FleetSim sim(sc);
  std::vector<Envelope> out;
  for (double t = step; t < sc.duration_s + step; t += step) sim.AdvanceTo(std::min(t, sc.duration_s), out);
  sim.Flush(out);
  return out;
}

// Per node, in publishing order (the order across nodes depends on the call pattern).
std::map<std::string, std::vector<std::string>> ByNode(const std::vector<Envelope>& envs) {
  std::map<std::string, std::vector<std::string>> m;
  for (const Envelope& e : envs) m[e.place.node].push_back(fleet::Encode(e));
  return m;
}

constexpr const char* kSmall = R"(
name: small
duration_s: 400
seed: 3
fleet: {racks: 2, nodes_per_rack: 4, pdus_per_rack: 1}
jobs:
  - {name: j, first: 0, count: 8, step_s: 2, checkpoint_every: 40, checkpoint_steps: 3, checkpoint_factor: 4}
faults:
  - {at: 100, fault: pdu_sag, pdu: r02-pdu-a, value: 140}
  - {at: 50, fault: straggler_gpu, node: r01-n02, gpu: 3, value: 22}
truth: {}
)";

TEST(FleetSim, SameSeedSameOutputWhateverTheCallPattern) {
  const FleetScenario sc = Parse(kSmall);
  const auto a = ByNode(RunAll(sc, 1.0));
  const auto b = ByNode(RunAll(sc, 7.3));
  EXPECT_EQ(a, b);
  FleetScenario other = sc;
  other.seed = 4;
  EXPECT_NE(a, ByNode(RunAll(other, 1.0)));
}

TEST(FleetSim, RowIdsAndMessageIdsAreContiguousAndUnique) {
  const FleetScenario sc = Parse(kSmall);
  const auto envs = RunAll(sc, 1.0);
  std::set<std::string> msg_ids;
  std::map<std::string, int64_t> next_row, next_diag;
  for (const Envelope& e : envs) {
    EXPECT_TRUE(msg_ids.insert(e.msg_id).second) << e.msg_id;
    EXPECT_EQ(e.place.site, "default");
    EXPECT_EQ(e.place.rack, e.place.node.substr(0, 3));
    if (e.kind == RecordKind::kObservations) {
      ASSERT_EQ(e.observations.size(), e.observation_ids.size());
      ASSERT_FALSE(e.observation_ids.empty());
      int64_t& expect = next_row.try_emplace(e.place.node, 1).first->second;
      EXPECT_EQ(e.observation_ids.front(), expect);
      for (size_t i = 0; i < e.observation_ids.size(); ++i) EXPECT_EQ(e.observation_ids[i], expect + int64_t(i));
      expect += static_cast<int64_t>(e.observation_ids.size());
      EXPECT_EQ(e.msg_id, e.place.node + "/obs/" + std::to_string(e.observation_ids.front()) + "-" +
                              std::to_string(e.observation_ids.back()));
      for (const Observation& o : e.observations) {
        EXPECT_EQ(o.node, e.place.node);
        EXPECT_LE(o.time_ns, e.sent_ns);  // published after it happened
      }
    } else {
      ASSERT_EQ(e.kind, RecordKind::kDiagnosis);
      int64_t& expect = next_diag.try_emplace(e.place.node, 1).first->second;
      EXPECT_EQ(e.row_id, expect++);
      EXPECT_EQ(e.msg_id, e.place.node + "/diagnosis/" + std::to_string(e.row_id));
    }
    // Every envelope survives the wire whole.
    auto back = fleet::Decode(fleet::Encode(e));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, e);
  }
  EXPECT_EQ(next_row.size(), 8u);
}

TEST(FleetSim, PublishesOnlyChangesAndStepReportsAtTheirRate) {
  const FleetScenario sc = Parse(kSmall);
  const auto envs = RunAll(sc, 1.0);
  std::map<std::string, int> clocks, steps, throughput;
  for (const Envelope& e : envs) {
    for (const Observation& o : e.observations) {
      if (o.kind == ObsKind::kClock) ++clocks[o.node + "/" + o.component.name];
      if (o.kind == ObsKind::kThroughput) ++throughput[o.node];
      if (o.kind != ObsKind::kStepTime) continue;
      ++steps[o.node];
      EXPECT_EQ(o.attrs.at("job"), "j");
      EXPECT_EQ(o.layer, Layer::kWorkload);
      EXPECT_TRUE(o.attrs.contains("rank"));
    }
  }
  // A healthy GPU's clock never changes: stored (and published) once.
  EXPECT_EQ(clocks["r01-n01/0"], 1);
  // The hot GPU's clock changed once (throttled); a PDU-braked node's every GPU once.
  EXPECT_EQ(clocks["r01-n02/3"], 2);
  EXPECT_EQ(clocks["r02-n01/0"], 2);
  // One step report every 5 s for 400 s.
  EXPECT_NEAR(steps["r01-n01"], 80, 1);
  EXPECT_EQ(steps["r01-n01"], throughput["r01-n01"]);
}

TEST(FleetSim, SlowNodesStepSlowerAndCheckpointsSlowTheWholeJob) {
  const FleetScenario sc = Parse(kSmall);
  const auto envs = RunAll(sc, 1.0);
  // Step times per node, in windows: before faults, and after both faults began.
  std::map<std::string, std::vector<double>> before, after;
  std::map<int64_t, std::vector<double>> by_time;  // 5 s buckets, all nodes
  for (const Envelope& e : envs) {
    for (const Observation& o : e.observations) {
      if (o.kind != ObsKind::kStepTime) continue;
      const double t = static_cast<double>(o.time_ns - sc.start_ns) / 1e9;
      (t < 45 ? before : after)[o.node].push_back(*o.value);
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  EXPECT_NEAR(median(before["r01-n01"]), 2.0, 0.1);
  EXPECT_NEAR(median(before["r01-n02"]), 2.0, 0.1);
  EXPECT_NEAR(median(after["r01-n02"]) / median(after["r01-n01"]), 1 / 0.7, 0.08);  // thermal: clocks x0.7
  EXPECT_NEAR(median(after["r02-n03"]) / median(after["r01-n01"]), 2.0, 0.15);      // power brake: half clocks
  // Checkpoints: every 40 steps (80 s) three steps at 4x. Every node of the job sees
  // slow reports, and only in the same stretches of time.
  size_t slow_healthy = 0;
  for (const Envelope& e : envs) {
    for (const Observation& o : e.observations) {
      if (o.kind == ObsKind::kStepTime && o.node == "r01-n01" && *o.value > 5) ++slow_healthy;
    }
  }
  EXPECT_GE(slow_healthy, 6u);  // ~4 reports per 24 s checkpoint, 4 checkpoints in 400 s
  EXPECT_LE(slow_healthy, 24u);
}

TEST(FleetSim, NodeDiagnosesOnExactlyTheNodesAFaultReaches) {
  const FleetScenario sc = Parse(kSmall);
  const auto envs = RunAll(sc, 1.0);
  std::map<std::string, std::set<FaultClass>> classes;
  std::map<std::string, double> first_s;
  for (const Envelope& e : envs) {
    if (e.kind != RecordKind::kDiagnosis) continue;
    ASSERT_TRUE(e.diagnosis);
    classes[e.place.node].insert(e.diagnosis->fault_class);
    const double t = static_cast<double>(e.sent_ns - sc.start_ns) / 1e9;
    if (!first_s.contains(e.place.node)) first_s[e.place.node] = t;
    EXPECT_GE(e.diagnosis->last_ns, e.diagnosis->first_ns);
  }
  std::set<std::string> expect_power;
  for (int i = 1; i <= 4; ++i) expect_power.insert("r02-n0" + std::to_string(i));
  std::set<std::string> got;
  for (const auto& [node, cls] : classes) {
    if (cls.contains(FaultClass::kVoltageOutOfRange)) got.insert(node);
  }
  EXPECT_EQ(got, expect_power);
  EXPECT_EQ(classes["r01-n02"], std::set<FaultClass>{FaultClass::kGpuThermal});
  EXPECT_EQ(classes.size(), 5u);
  // The isolator answers detect_s (5 s) after the symptom, at its next evaluation (1 s).
  EXPECT_GE(first_s["r01-n02"], 55);
  EXPECT_LE(first_s["r01-n02"], 57);
  EXPECT_GE(first_s["r02-n01"], 105);
  EXPECT_LE(first_s["r02-n01"], 107);
}

// Truth files agree with what the faults and the physics imply.
TEST(FleetSim, ShippedTruthsAgreeWithTheFaults) {
  for (const char* name : {"straggler-gpu.yaml", "cable-between-nodes.yaml", "pdu-sag-rack.yaml", "leaf-switch.yaml",
                           "driver-rollout.yaml", "rack-slow-cooling-loop.yaml", "healthy-checkpoints.yaml",
                           "healthy-pauses.yaml", "straggler-amid-pauses.yaml"}) {
    SCOPED_TRACE(name);
    const FleetScenario sc = Load(name);
    const FleetTruth derived = DeriveFleetTruth(sc);
    ASSERT_EQ(sc.truth.causes.size(), derived.causes.size());
    for (size_t i = 0; i < derived.causes.size(); ++i) {
      EXPECT_EQ(sc.truth.causes[i].cause, derived.causes[i].cause);
      EXPECT_EQ(sc.truth.causes[i].components, derived.causes[i].components);
      EXPECT_EQ(sc.truth.causes[i].nodes, derived.causes[i].nodes);
      EXPECT_NEAR(sc.truth.causes[i].start_s, derived.causes[i].start_s, 0.5);
    }
    ASSERT_EQ(sc.truth.stragglers.size(), derived.stragglers.size());
    for (size_t i = 0; i < derived.stragglers.size(); ++i) {
      EXPECT_EQ(sc.truth.stragglers[i].node, derived.stragglers[i].node);
      EXPECT_EQ(sc.truth.stragglers[i].gpu, derived.stragglers[i].gpu);
      EXPECT_EQ(sc.truth.stragglers[i].job, derived.stragglers[i].job);
      EXPECT_NEAR(sc.truth.stragglers[i].start_s, derived.stragglers[i].start_s, 0.5);
    }
  }
}

TEST(FleetSim, DerivedTruthFollowsThePhysics) {
  FleetScenario sc = Parse(R"(
name: t
fleet: {racks: 1, nodes_per_rack: 8}
jobs: [{name: j, first: 0, count: 6}]
faults:
  - {at: 10, fault: straggler_gpu, node: r01-n01, gpu: 0, value: 8}
  - {at: 10, fault: straggler_gpu, node: r01-n02, gpu: 0, value: 20, ramp_s: 40}
  - {at: 10, fault: straggler_gpu, node: r01-n07, gpu: 0, value: 30}
  - {at: 10, fault: node_slow, node: r01-n03, value: 1.02}
  - {at: 10, fault: pdu_sag, pdu: r01-pdu-a, value: 205}
truth: {}
)");
  const FleetTruth t = DeriveFleetTruth(sc);
  // 8 C hotter never throttles; a 1.02 node is inside the noise; r01-n07 has no job (no
  // peers); a 205 V sag is within the PSUs' range: nothing shared either.
  ASSERT_EQ(t.stragglers.size(), 1u);
  EXPECT_EQ(t.stragglers[0].node, "r01-n02");
  // Throttles once 70 C (+ 0 slot offset, - 1 C drift) + 20 r >= 87: r = 0.9, at 10 + 36 s.
  EXPECT_NEAR(t.stragglers[0].start_s, 46, 0.5);
  EXPECT_TRUE(t.causes.empty());
}

TEST(FleetBench, GeneratedFleetIsDeterministicAndItsTruthConsistent) {
  FleetBenchSpec spec;
  spec.nodes = 1000;
  const FleetScenario a = GenerateBenchFleet(spec);
  const FleetScenario b = GenerateBenchFleet(spec);
  ASSERT_EQ(a.topology.nodes.size(), 1000u);
  ASSERT_EQ(a.faults.size(), b.faults.size());
  for (size_t i = 0; i < a.faults.size(); ++i) {
    EXPECT_EQ(a.faults[i].node + a.faults[i].target, b.faults[i].node + b.faults[i].target);
    EXPECT_EQ(a.faults[i].at, b.faults[i].at);
  }
  // Racks of 16-32, jobs of 16-512 covering most nodes, one job per node.
  std::map<std::string, int> rack_size;
  for (const auto& n : a.topology.nodes) ++rack_size[n.rack];
  for (const auto& [rack, size] : rack_size) {
    if (rack != a.topology.nodes.back().rack) {
      EXPECT_GE(size, 16) << rack;
    }
    EXPECT_LE(size, 32) << rack;
  }
  std::set<std::string> in_job;
  std::map<std::string, std::string> job_of;
  for (const FleetJob& j : a.jobs) {
    EXPECT_GE(j.nodes.size(), 16u);
    EXPECT_LE(j.nodes.size(), 512u);
    for (const std::string& n : j.nodes) {
      EXPECT_TRUE(in_job.insert(n).second);
      job_of[n] = j.name;
    }
  }
  EXPECT_GT(in_job.size(), 700u);
  // Stragglers: ~1% of the nodes, each in a job, none on a node a shared slowdown touches.
  EXPECT_GE(a.truth.stragglers.size(), 8u);
  EXPECT_LE(a.truth.stragglers.size(), 10u);
  std::set<std::string> shared_slow;
  for (const FleetTruthCause& c : a.truth.causes) {
    if (c.cause == "pdu" || c.cause == "cooling_loop") shared_slow.insert(c.nodes.begin(), c.nodes.end());
  }
  EXPECT_FALSE(shared_slow.empty());
  for (const FleetTruthStraggler& s : a.truth.stragglers) {
    EXPECT_EQ(job_of.at(s.node), s.job);
    EXPECT_FALSE(shared_slow.contains(s.node)) << s.node;
    EXPECT_GE(s.start_s, spec.faults_from_s);
  }
  std::set<std::string> causes;
  for (const FleetTruthCause& c : a.truth.causes) causes.insert(c.cause);
  EXPECT_EQ(causes, (std::set<std::string>{"cable", "cooling_loop", "driver", "pdu", "switch"}));
}

}  // namespace
}  // namespace faultline::sim
