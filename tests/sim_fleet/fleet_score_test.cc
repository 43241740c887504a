// Scoring fleet diagnoses against a truth: true and false stragglers, the GPU, shared
// causes matched on their part's name, false causes, and the figures.
#include "sim/fleet/fleet_score.h"

#include <gtest/gtest.h>

namespace faultline::sim {
namespace {

TimedFleetDiagnosis Diag(double t, std::string cause, std::string component, std::vector<std::string> nodes = {}) {
  TimedFleetDiagnosis d;
  d.t = t;
  d.diagnosis.id = cause + "/" + component;
  d.diagnosis.cause = std::move(cause);
  d.diagnosis.component = std::move(component);
  d.diagnosis.nodes = std::move(nodes);
  return d;
}

FleetTruth Truth() {
  FleetTruth t;
  t.stragglers = {{"n1", 3, "j", 100}, {"n2", -1, "j", 200}, {"n3", 5, "k", 300}};
  t.causes = {{"pdu", {"pdu/r1-pdu-a"}, {"n7", "n8"}, 150}, {"cooling_loop", {"cooling_loop/loop-2"}, {}, 160}};
  return t;
}

TEST(FleetScore, CountsTrueAndFalseStragglersAndMatchesCauses) {
  const std::vector<TimedFleetDiagnosis> timeline = {
      Diag(104, "straggler", "node/n1/gpu/3"),
      Diag(109, "straggler", "node/n1/gpu/3"),  // again: counted once
      Diag(205, "straggler", "node/n2/gpu/0"),  // the truth names no GPU: any is right
      Diag(310, "straggler", "node/n3/gpu/4"),  // right node, wrong GPU
      Diag(170, "straggler", "node/n7/gpu/1"),  // slowed by the PDU: not a straggler
      Diag(180, "pdu", "pdu/r1-pdu-a", {"n7"}),
      Diag(190, "cooling_loop", "loop/loop-2", {"n9"}),  // another spelling of the part's kind
      Diag(195, "switch", "switch/leaf-1", {"n1", "n2"}),
  };
  const FleetScore s = ScoreFleet(Truth(), timeline, {101, 201, 301});
  EXPECT_EQ(s.straggler_tp, 3u);
  EXPECT_EQ(s.straggler_fp, 1u);
  EXPECT_EQ(s.straggler_fn, 0u);
  EXPECT_EQ(s.false_stragglers, std::vector<std::string>{"n7"});
  EXPECT_EQ(s.false_stragglers_shared, 1u);  // n7 is on the sagging PDU
  EXPECT_DOUBLE_EQ(s.precision, 0.75);
  EXPECT_DOUBLE_EQ(s.recall, 1.0);
  EXPECT_NEAR(s.f1, 2 * 0.75 / 1.75, 1e-12);
  ASSERT_EQ(s.stragglers.size(), 3u);
  EXPECT_TRUE(s.stragglers[0].gpu_right);
  EXPECT_DOUBLE_EQ(s.stragglers[0].named_s, 104);
  EXPECT_DOUBLE_EQ(s.stragglers[0].evidence_s, 101);
  EXPECT_TRUE(s.stragglers[1].gpu_right);
  EXPECT_FALSE(s.stragglers[2].gpu_right);
  ASSERT_EQ(s.causes.size(), 2u);
  EXPECT_TRUE(s.causes[0].found);
  EXPECT_DOUBLE_EQ(s.causes[0].named_s, 180);
  EXPECT_DOUBLE_EQ(s.causes[0].node_jaccard, 0.5);
  EXPECT_TRUE(s.causes[1].found);
  EXPECT_EQ(s.causes[1].component, "loop/loop-2");
  EXPECT_DOUBLE_EQ(s.causes[1].node_jaccard, 1.0);  // the truth lists no nodes
  EXPECT_EQ(s.false_causes, std::vector<std::string>{"switch switch/leaf-1"});
  EXPECT_DOUBLE_EQ(s.correlation_accuracy, 1.0);
  EXPECT_FALSE(s.pass);
}

TEST(FleetScore, MissedCausesAndStragglersFailTheRun) {
  const FleetScore s = ScoreFleet(Truth(), {Diag(104, "straggler", "node/n1/gpu/3"),
                                            Diag(180, "feed", "feed/r1-pdu-a")});  // right part, wrong cause
  EXPECT_EQ(s.straggler_tp, 1u);
  EXPECT_EQ(s.straggler_fn, 2u);
  EXPECT_NEAR(s.recall, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s.precision, 1.0);
  EXPECT_DOUBLE_EQ(s.correlation_accuracy, 0.0);
  EXPECT_EQ(s.false_causes.size(), 1u);
  EXPECT_FALSE(s.pass);
}

TEST(FleetScore, ANamingBeforeTheFaultBeganIsFalse) {
  const FleetScore s = ScoreFleet(Truth(), {Diag(90, "straggler", "node/n1/gpu/3"),  // before n1 slowed (t=100)
                                            Diag(120, "pdu", "pdu/r1-pdu-a"),        // before the sag (t=150)
                                            Diag(160, "pdu", "pdu/r1-pdu-a", {"n7", "n8"})});
  EXPECT_EQ(s.false_stragglers, std::vector<std::string>{"n1 (before its start)"});
  EXPECT_FALSE(s.stragglers[0].found);
  EXPECT_EQ(s.false_causes, std::vector<std::string>{"pdu pdu/r1-pdu-a (before its start)"});
  ASSERT_TRUE(s.causes[0].found);
  EXPECT_DOUBLE_EQ(s.causes[0].named_s, 160);
  EXPECT_DOUBLE_EQ(s.causes[0].node_jaccard, 1.0);
}

TEST(FleetScore, AQuietRunOnAHealthyFleetPasses) {
  const FleetScore s = ScoreFleet(FleetTruth{}, {});
  EXPECT_TRUE(s.pass);
  EXPECT_DOUBLE_EQ(s.precision, 1.0);
  EXPECT_DOUBLE_EQ(s.recall, 1.0);
  const FleetScore noisy = ScoreFleet(FleetTruth{}, {Diag(50, "straggler", "node/n4")});
  EXPECT_FALSE(noisy.pass);
  EXPECT_DOUBLE_EQ(noisy.precision, 0.0);
}

TEST(FleetScore, ReadsTheNodeAndGpuAStragglerNames) {
  fleet::FleetDiagnosis d;
  d.component = "node/r01-n03/gpu/5";
  EXPECT_EQ(StragglerNode(d), "r01-n03");
  EXPECT_EQ(StragglerGpu(d), 5);
  d.component = "node/r01-n03";
  EXPECT_EQ(StragglerNode(d), "r01-n03");
  EXPECT_EQ(StragglerGpu(d), -1);
  d.component = "node/x/gpu/99999";
  EXPECT_EQ(StragglerGpu(d), -1);
  d.component = "";
  d.nodes = {"n9"};
  EXPECT_EQ(StragglerNode(d), "n9");
}

}  // namespace
}  // namespace faultline::sim
