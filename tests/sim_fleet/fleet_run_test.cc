// Every scenario of scenarios/fleet run through the in-process fleet analyzer scores its
// truth: the straggler (node, GPU and class, one report) or the shared cause named,
// nothing false.
#include "sim/fleet/fleet_run.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline::sim {
namespace {

FleetScenario Load(const std::string& name) {
  auto sc = LoadFleetScenario(std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/fleet/" + name);
  EXPECT_TRUE(sc.ok()) << sc.status().ToString();
  return sc.ok() ? *sc : FleetScenario{};
}

std::string Describe(const FleetRunResult& r) {
  std::string s;
  for (const TimedFleetDiagnosis& d : r.timeline) {
    s += "\n  t=" + std::to_string(d.t) + " " + d.diagnosis.cause + " " + d.diagnosis.component + " (" +
         std::to_string(d.diagnosis.nodes.size()) + " nodes) " + d.diagnosis.summary;
  }
  for (const std::string& f : r.score.false_stragglers) s += "\n  false straggler: " + f;
  for (const std::string& f : r.score.false_causes) s += "\n  false cause: " + f;
  return s;
}

class FleetScenarioRun : public testing::TestWithParam<const char*> {};

TEST_P(FleetScenarioRun, ScoresItsTruth) {
  const FleetScenario sc = Load(GetParam());
  auto r = RunFleetScenario(sc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->score.pass) << Describe(*r);
  for (const StragglerVerdict& v : r->score.stragglers) {
    EXPECT_TRUE(v.found) << v.truth.node;
    EXPECT_TRUE(v.gpu_right) << v.truth.node;
    EXPECT_GE(v.named_s, v.truth.start_s) << v.truth.node;  // not before it began
    // Its class is its own evidence's: a hot GPU's node says gpu_thermal; a node slow with
    // no hardware cause is the workload's. And it is one report, never closed and reopened.
    EXPECT_EQ(v.fault_class, v.truth.gpu >= 0 ? FaultClass::kGpuThermal : FaultClass::kWorkloadImbalance)
        << v.truth.node;
    EXPECT_EQ(v.reports, 1u) << v.truth.node << Describe(*r);
  }
  for (const CauseVerdict& v : r->score.causes) {
    EXPECT_TRUE(v.found) << v.truth.cause;
    EXPECT_GE(v.named_s, v.truth.start_s) << v.truth.cause;
    EXPECT_GE(v.node_jaccard, 0.99) << v.truth.cause;  // every affected node, no other
  }
  // Nothing was refused or duplicated: the simulator publishes each row once.
  EXPECT_EQ(r->ingest.refused, 0u);
  EXPECT_EQ(r->ingest.duplicates, 0u);
  EXPECT_EQ(r->ingest.observations, r->timings.observations);
}

INSTANTIATE_TEST_SUITE_P(Files, FleetScenarioRun,
                         testing::Values("straggler-gpu.yaml", "cable-between-nodes.yaml", "pdu-sag-rack.yaml",
                                         "leaf-switch.yaml", "driver-rollout.yaml", "rack-slow-cooling-loop.yaml",
                                         "healthy-checkpoints.yaml", "healthy-pauses.yaml",
                                         "straggler-amid-pauses.yaml"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           n = n.substr(0, n.find('.'));
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

TEST(FleetScenarioRunDeterminism, SameScenarioSameTimeline) {
  const FleetScenario sc = Load("straggler-gpu.yaml");
  auto a = RunFleetScenario(sc);
  auto b = RunFleetScenario(sc);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->timeline.size(), b->timeline.size());
  for (size_t i = 0; i < a->timeline.size(); ++i) {
    EXPECT_EQ(a->timeline[i].t, b->timeline[i].t);
    EXPECT_EQ(a->timeline[i].diagnosis.id, b->timeline[i].diagnosis.id);
  }
}

}  // namespace
}  // namespace faultline::sim
