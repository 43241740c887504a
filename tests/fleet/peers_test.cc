// Slow node among its peers: the statistics (peers.h) and the analyzer's answers.
#include "fleet/peers.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "fleet/analyzer.h"
#include "fleet_test_util.h"

namespace faultline::fleet {
namespace {

using testing::JobStream;
using testing::MakeTopology;
using testing::StepTime;

// Feeds steps [from, to) and evaluates after each step; every fleet diagnosis returned.
std::vector<FleetDiagnosis> Feed(FleetAnalyzer& a, JobStream& s, int from, int to) {
  std::vector<FleetDiagnosis> all;
  for (int step = from; step < to; ++step) {
    for (const Envelope& e : s.Steps(step, step + 1)) a.Ingest(e);
    for (auto& d : a.Evaluate(StepTime(step))) all.push_back(std::move(d));
  }
  return all;
}

std::set<std::string> Causes(const std::vector<FleetDiagnosis>& ds) {
  std::set<std::string> out;
  for (const auto& d : ds) out.insert(d.cause + ":" + d.component);
  return out;
}

TEST(PeerStats, MedianOfOddEvenAndNone) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
}

std::vector<PeerSample> Flat(double v, int n, int64_t t0 = 0) {
  std::vector<PeerSample> out;
  for (int i = 0; i < n; ++i) out.push_back({t0 + i, v});
  return out;
}

TEST(PeerStats, OneSlowSeriesIsSlowTheRestAreNot) {
  std::vector<PeerSeries> g;
  for (size_t i = 0; i < 8; ++i) g.push_back({i, Flat(1.0 + 0.001 * static_cast<double>(i), 10)});
  g[3].samples = Flat(1.3, 10);
  const GroupVerdict v = JudgePeers(g, {});
  ASSERT_TRUE(v.judged);
  EXPECT_FALSE(v.in_phase);
  for (const PeerVerdict& p : v.nodes) EXPECT_EQ(p.slow, p.node == 3) << p.node;
  EXPECT_NEAR(v.nodes[3].slowdown, 0.3, 0.01);
  EXPECT_EQ(v.nodes[3].slow_run, 10);
}

TEST(PeerStats, TooFewPeersAreNotJudged) {
  std::vector<PeerSeries> g = {{0, Flat(1, 5)}, {1, Flat(1, 5)}, {2, Flat(2, 5)}};
  EXPECT_FALSE(JudgePeers(g, {}).judged);
}

TEST(PeerStats, PersistenceIsOfTheVerdictOverReportPeriods) {
  std::vector<PeerSeries> g;
  for (size_t i = 0; i < 6; ++i) g.push_back({i, Flat(1.0, 10)});
  // Slow for the last three samples: its recent median (of 5) is slow at the newest only.
  for (size_t k = 7; k < 10; ++k) g[0].samples[k].seconds = 1.5;
  GroupVerdict v = JudgePeers(g, {});
  EXPECT_EQ(v.nodes[0].slow_run, 3);
  EXPECT_FALSE(v.nodes[0].slow);
  // Five: the verdict has held at each of the newest three (persistence) samples.
  g[0].samples[5].seconds = g[0].samples[6].seconds = 1.5;
  v = JudgePeers(g, {});
  EXPECT_EQ(v.nodes[0].slow_run, 5);
  EXPECT_TRUE(v.nodes[0].slow);
  EXPECT_EQ(v.nodes[0].slow_since_ns, 5);
  // Four of the last five, the newest one not: not (yet, again) slow.
  g[0].samples[9].seconds = 1.0;
  EXPECT_FALSE(JudgePeers(g, {}).nodes[0].slow);
}

TEST(PeerStats, NodesReportingAPhaseFirstAreComparedWithPeersInTheSameSteps) {
  // The job enters a checkpoint; three nodes' reports fall in it two samples before the
  // others' (their report times, not their speed). Against their peers at the same time
  // they are slow only while the others have not reported yet: nobody is named.
  std::vector<PeerSeries> g;
  for (size_t i = 0; i < 8; ++i) {
    g.push_back({i, Flat(1.0, 10)});
    for (size_t k = (i < 3 ? 7 : 9); k < 10; ++k) g.back().samples[k].seconds = 3.0;
  }
  const GroupVerdict v = JudgePeers(g, {});
  ASSERT_TRUE(v.judged);
  EXPECT_FALSE(v.in_phase);
  for (const PeerVerdict& p : v.nodes) {
    EXPECT_FALSE(p.slow) << p.node;
    EXPECT_EQ(p.slow_run, 0) << p.node;  // the newest sample is the job's pace again
  }
}

TEST(PeerStats, SlowdownIsAgainstThePeersInTheSameSteps) {
  // Reports staggered in time; a checkpoint (3x) covers the newest samples of some nodes
  // and not yet of others. Node 2 is 35% slower throughout: 35%, whatever the pause.
  std::vector<PeerSeries> g;
  for (size_t i = 0; i < 8; ++i) {
    PeerSeries s{i, {}};
    for (int k = 0; k < 12; ++k) {
      const int64_t t = k * 100 + static_cast<int64_t>(i) * 12;  // period 100, offsets 0..84
      const double pause = t >= 1000 && t < 1160 ? 3.0 : 1.0;
      s.samples.push_back({t, (i == 2 ? 1.35 : 1.0) * pause * (1 + 0.002 * static_cast<double>(i))});
    }
    g.push_back(std::move(s));
  }
  const GroupVerdict v = JudgePeers(g, {});
  ASSERT_TRUE(v.judged);
  EXPECT_NEAR(v.nodes[2].slowdown, 0.35, 0.02);
  EXPECT_TRUE(v.nodes[2].slow);
  for (const PeerVerdict& p : v.nodes) EXPECT_EQ(p.slow, p.node == 2) << p.node << " " << p.recent;
}

TEST(PeerStats, JitterRaisesTheSlowdownThatNamesANode) {
  // Reports jitter by +-10% (uniform; 1.4826 MAD ~7%): a node must be about three jitters
  // slower to be named.
  std::vector<PeerSeries> g;
  for (size_t i = 0; i < 16; ++i) {
    PeerSeries s{i, {}};
    for (int k = 0; k < 12; ++k) {
      const double noise = 1 + testing::Jitter("n" + std::to_string(i), k, 0.1);  // uniform +-10%: sd 5.8%
      s.samples.push_back({k * 10, (i == 5 ? 1.12 : i == 9 ? 1.4 : 1.0) * noise});
    }
    g.push_back(std::move(s));
  }
  const GroupVerdict v = JudgePeers(g, {});
  ASSERT_TRUE(v.judged);
  EXPECT_GT(v.jitter, 0.04);
  EXPECT_LT(v.jitter, 0.09);
  EXPECT_NEAR(v.min_slowdown, 3 * v.jitter, 1e-12);
  EXPECT_FALSE(v.nodes[5].slow);  // 12%: within the jitter's reach
  EXPECT_TRUE(v.nodes[9].slow);   // 40%: not
}

TEST(PeerStats, CalmNeedsHalfTheSlowdownPersistently) {
  std::vector<PeerSeries> g;
  for (size_t i = 0; i < 6; ++i) g.push_back({i, Flat(1.0, 10)});
  for (int k = 0; k < 10; ++k) g[0].samples[static_cast<size_t>(k)].seconds = 1.3;
  // Back to 1.05 for the newest two: no longer slow, not calm yet (one more 1.3 in view).
  g[0].samples[8].seconds = g[0].samples[9].seconds = 1.05;
  GroupVerdict v = JudgePeers(g, {});
  EXPECT_FALSE(v.nodes[0].slow);
  EXPECT_FALSE(v.nodes[0].calm);
  g[0].samples[7].seconds = 1.05;
  g[0].samples[6].seconds = g[0].samples[5].seconds = 1.05;
  v = JudgePeers(g, {});
  EXPECT_FALSE(v.nodes[0].calm);  // 5% over: above half the 8% that names a node
  for (size_t k = 5; k < 10; ++k) g[0].samples[k].seconds = 1.02;
  v = JudgePeers(g, {});
  EXPECT_TRUE(v.nodes[0].calm);
  EXPECT_TRUE(v.nodes[1].calm);
}

TEST(PeerStats, SlowGpuIsTheLowestAgainstNodeAndPeers) {
  std::vector<GpuReading> node;
  for (int g = 0; g < 8; ++g) node.push_back({std::to_string(g), 1410, 650, 98});
  node[5].clock = 1005;
  const GpuReading peers{"", 1410, 650, 98};
  SlowGpu s = NameSlowGpu(node, peers);
  EXPECT_EQ(s.gpu, "5");
  EXPECT_EQ(s.metric, "clock");
  EXPECT_NEAR(s.drop, 1 - 1005.0 / 1410, 1e-9);
  // Every GPU low (a node-wide cap): no single GPU is named.
  for (auto& g : node) g.clock = 1100;
  EXPECT_EQ(NameSlowGpu(node, peers).gpu, "");
  // No clocks: power speaks.
  for (auto& g : node) g.clock = 0;
  node[2].power = 300;
  s = NameSlowGpu(node, peers);
  EXPECT_EQ(s.gpu, "2");
  EXPECT_EQ(s.metric, "power");
}

class PeerAnalyzerTest : public ::testing::Test {
 protected:
  FleetTopology topo = MakeTopology(4, 4);  // 16 nodes, 4 racks
  JobStream stream;
  void SetUp() override { stream.topology = &topo; }
};

TEST_F(PeerAnalyzerTest, NoSlowNodeNoDiagnosis) {
  FleetAnalyzer a(topo);
  EXPECT_TRUE(Feed(a, stream, 0, 40).empty());
  EXPECT_TRUE(a.Open().empty());
  EXPECT_EQ(a.stats().observations, 16u * 40 * 9);
}

TEST_F(PeerAnalyzerTest, OneSlowNodeIsNamedWithItsGpu) {
  stream.slowdown = [](const std::string& n, int step) { return n == "r2-n1" && step >= 20 ? 1.25 : 1.0; };
  stream.clock = [](const std::string& n, int gpu, int step) {
    return n == "r2-n1" && gpu == 6 && step >= 20 ? 1050.0 : 1410.0;
  };
  FleetAnalyzer a(topo);
  const auto out = Feed(a, stream, 0, 40);
  ASSERT_EQ(out.size(), 1u) << out.front().summary;
  const FleetDiagnosis& d = out[0];
  EXPECT_EQ(d.cause, "straggler");
  EXPECT_EQ(d.component, "node/r2-n1/gpu/6");
  EXPECT_EQ(d.nodes, std::vector<std::string>{"r2-n1"});
  EXPECT_EQ(d.job, "train-1");
  EXPECT_EQ(d.first_ns, StepTime(20));
  EXPECT_EQ(d.id, "straggler/train-1/r2-n1/" + std::to_string(StepTime(20)));
  EXPECT_FALSE(d.node_diagnoses.empty());  // the node's isolator was asked
  EXPECT_EQ(a.Open().size(), 1u);
}

TEST_F(PeerAnalyzerTest, StragglerTakesItsIsolatorsCause) {
  stream.slowdown = [](const std::string& n, int step) { return n == "r2-n1" && step >= 20 ? 1.25 : 1.0; };
  stream.clock = [](const std::string& n, int gpu, int step) {
    return n == "r2-n1" && gpu == 6 && step >= 20 ? 1050.0 : 1410.0;
  };
  FleetAnalyzer a(topo);
  // The node's own thermal detector found GPU 6 throttling (published as a finding).
  Envelope f;
  f.kind = RecordKind::kFinding;
  f.place = {.site = "dc1", .rack = "r2", .node = "r2-n1"};
  f.msg_id = "r2-n1/finding/3";
  f.row_id = 3;
  Finding finding;
  finding.layer = Layer::kGpu;
  finding.component = GpuComponent("6");
  finding.fault_class = FaultClass::kGpuThermal;
  finding.severity = Severity::kWarning;
  finding.action = Action::kMonitor;
  finding.confidence = 0.8;
  finding.first_ns = StepTime(19);
  finding.last_ns = StepTime(30);
  finding.summary = "GPU 6 thermal slowdown";
  finding.evidence = {{.time_ns = StepTime(19), .source = Source::kNvml, .component = "gpu/6", .text = "thermal"}};
  f.finding = finding;
  a.Ingest(f);
  const auto out = Feed(a, stream, 0, 40);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "node/r2-n1/gpu/6");
  ASSERT_FALSE(out[0].node_diagnoses.empty());
  EXPECT_EQ(out[0].node_diagnoses.front().fault_class, FaultClass::kGpuThermal);
  EXPECT_EQ(out[0].fault_class, FaultClass::kGpuThermal);
  EXPECT_EQ(out[0].node_diagnoses.front().component.name, "6");
}

TEST_F(PeerAnalyzerTest, NamedAfterPersistenceSamplesNotBefore) {
  stream.slowdown = [](const std::string& n, int step) { return n == "r0-n3" && step >= 20 ? 1.4 : 1.0; };
  FleetAnalyzer a(topo);
  // Slow at 20..23: four samples. The recent median (of 5) turns slow at the third, and
  // must stay so for `persistence` (3) samples.
  EXPECT_TRUE(Feed(a, stream, 0, 24).empty());
  const auto out = Feed(a, stream, 24, 25);  // the fifth
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "node/r0-n3");  // clocks all equal: no GPU named
}

TEST_F(PeerAnalyzerTest, TwoSlowNodesAreTwoStragglers) {
  stream.slowdown = [](const std::string& n, int step) {
    return (n == "r0-n1" || n == "r3-n2") && step >= 10 ? 1.3 : 1.0;
  };
  FleetAnalyzer a(topo);
  const auto out = Feed(a, stream, 0, 30);
  EXPECT_EQ(Causes(out), (std::set<std::string>{"straggler:node/r0-n1", "straggler:node/r3-n2"}));
}

TEST_F(PeerAnalyzerTest, SingleNoisySampleIsNotNamed) {
  stream.slowdown = [](const std::string& n, int step) { return n == "r1-n1" && step == 15 ? 4.0 : 1.0; };
  FleetAnalyzer a(topo);
  EXPECT_TRUE(Feed(a, stream, 0, 30).empty());
}

TEST_F(PeerAnalyzerTest, CheckpointPhaseIsNotAStraggler) {
  // Every 15 steps the whole job checkpoints for 4 steps (3x slower); a quarter of the
  // nodes enters it two steps before the rest.
  stream.slowdown = [](const std::string& n, int step) {
    const int lag = n.back() == '0' ? 0 : 2;
    const int phase = (step - lag) % 15;
    return step >= 10 && phase >= 10 && phase < 14 ? 3.0 : 1.0;
  };
  FleetAnalyzer a(topo);
  EXPECT_TRUE(Feed(a, stream, 0, 60).empty());
  // Comparing each step with the peers' same steps is what keeps the quarter that enters
  // first from being named: without the phase guard and the rack rule, still nobody.
  JobStream again = stream;
  again.rows.clear();
  AnalyzerOptions no_guard;
  no_guard.phase_fraction = 1.0;
  no_guard.min_rack_nodes = 1000;
  FleetAnalyzer b(topo, no_guard);
  EXPECT_TRUE(Feed(b, again, 0, 60).empty());
}

TEST_F(PeerAnalyzerTest, WholeRackSlowIsOneRackDiagnosis) {
  stream.slowdown = [](const std::string& n, int step) { return n.rfind("r1-", 0) == 0 && step >= 10 ? 1.3 : 1.0; };
  FleetAnalyzer a(topo);
  auto out = Feed(a, stream, 0, 30);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cause, "rack");
  // No node says why: none of its parts is picked, all are listed.
  EXPECT_EQ(out[0].component, "rack/r1");
  EXPECT_NE(out[0].summary.find("rack r1 (shared parts: pdu pdu-r1, loop loop-r1, switch leaf-r1)"), std::string::npos)
      << out[0].summary;
  EXPECT_EQ(out[0].nodes, (std::vector<std::string>{"r1-n0", "r1-n1", "r1-n2", "r1-n3"}));
  EXPECT_EQ(out[0].action, Action::kFacilityTicket);
}

TEST_F(PeerAnalyzerTest, RackTurningSlowNodeByNodeIsNeverAStraggler) {
  // r1's nodes slow down one step apart (a PDU sagging, a loop warming up): the first is
  // persistent while the others are still on their way.
  stream.slowdown = [](const std::string& n, int step) {
    const int k = n.back() - '0';
    return n.rfind("r1-", 0) == 0 && step >= 10 + k ? 1.3 : 1.0;
  };
  FleetAnalyzer a(topo);
  const auto out = Feed(a, stream, 0, 40);
  ASSERT_FALSE(out.empty());
  for (const FleetDiagnosis& d : out) {
    EXPECT_EQ(d.cause, "rack") << d.summary;  // named when three are slow, again when the fourth joins
    EXPECT_EQ(d.id, out[0].id);
  }
  EXPECT_EQ(out.back().nodes.size(), 4u);
  EXPECT_EQ(a.Open().size(), 1u);
}

TEST_F(PeerAnalyzerTest, TwoStragglersInOneRackAreStillNamed) {
  stream.slowdown = [](const std::string& n, int step) {
    return (n == "r2-n0" || n == "r2-n3") && step >= 10 ? 1.3 : 1.0;
  };
  FleetAnalyzer a(topo);
  EXPECT_EQ(Causes(Feed(a, stream, 0, 30)), (std::set<std::string>{"straggler:node/r2-n0", "straggler:node/r2-n3"}));
}

TEST_F(PeerAnalyzerTest, SlowNodesOfASharedCauseAreThatCause) {
  // PDU r3 sags: every node of the rack reports a power brake on its GPUs, and then runs slow.
  stream.slowdown = [](const std::string& n, int step) { return n.rfind("r3-", 0) == 0 && step >= 10 ? 1.5 : 1.0; };
  FleetAnalyzer a(topo);
  for (int k = 0; k < 4; ++k) {
    for (int g = 0; g < 2; ++g) {
      a.Ingest(testing::DiagnosisEnvelope(topo.nodes[12 + k], 40 + 10 * g + k, FaultClass::kGpuPowerBrake,
                                          GpuComponent(std::to_string(g)), StepTime(9)));
    }
  }
  const auto out = Feed(a, stream, 0, 40);
  ASSERT_EQ(out.size(), 1u) << out.back().component;
  EXPECT_EQ(out[0].cause, "pdu");
  EXPECT_EQ(out[0].component, "pdu/pdu-r3");
  EXPECT_EQ(out[0].nodes.size(), 4u);
}

TEST_F(PeerAnalyzerTest, RackWithPowerEvidenceNamesItsPdu) {
  stream.slowdown = [](const std::string& n, int step) { return n.rfind("r3-", 0) == 0 && step >= 10 ? 1.3 : 1.0; };
  FleetAnalyzer a(topo);
  // One node of the rack reports a power brake (not enough nodes to correlate by PDU alone).
  a.Ingest(testing::DiagnosisEnvelope(topo.nodes[12], 7, FaultClass::kGpuPowerBrake, GpuComponent("1"), StepTime(12)));
  auto out = Feed(a, stream, 0, 30);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cause, "rack");
  EXPECT_EQ(out[0].component, "pdu/pdu-r3");
  EXPECT_EQ(out[0].fault_class, FaultClass::kGpuPowerBrake);
  EXPECT_EQ(out[0].linked, std::vector<std::string>{"r3-n0#7"});
}

// 4 racks of 6 nodes as in a hall: two PDUs per rack (n0-n2 on "-a", n3-n5 on "-b"), a
// cooling loop and a feed per two racks, a leaf per rack.
FleetTopology HallTopology() {
  FleetTopology t = MakeTopology(4, 6);
  for (FleetNode& n : t.nodes) {
    const int r = n.rack[1] - '0';
    const int k = n.name.back() - '0';
    n.pdu = "pdu-" + n.rack + (k < 3 ? "-a" : "-b");
    n.cooling_loop = "loop-" + std::to_string(r / 2);
  }
  return t;
}

TEST_F(PeerAnalyzerTest, RackSlowedByItsPduNamesThePduNotItsSwitch) {
  topo = HallTopology();
  // r3's PDU a sags (its three nodes slow); r3-n4 is slow too, for its own reason. One
  // node has said why so far (the others' diagnoses still to come).
  stream.slowdown = [](const std::string& n, int step) {
    const bool on_pdu = n == "r3-n0" || n == "r3-n1" || n == "r3-n2";
    return (on_pdu || n == "r3-n4") && step >= 10 ? 1.4 : 1.0;
  };
  FleetAnalyzer a(topo);
  a.Ingest(testing::DiagnosisEnvelope(*topo.FindNode("r3-n1"), 3, FaultClass::kVoltageOutOfRange,
                                      {ComponentType::kPsu, "PSU1", {}}, StepTime(11)));
  const auto out = Feed(a, stream, 0, 30);
  ASSERT_FALSE(out.empty());
  const FleetDiagnosis& d = out.back();
  EXPECT_EQ(d.cause, "rack");
  EXPECT_EQ(d.component, "pdu/pdu-r3-a") << d.summary;
  EXPECT_EQ(d.fault_class, FaultClass::kVoltageOutOfRange);
}

TEST_F(PeerAnalyzerTest, RackWithThermalEvidenceNamesItsLoopAndWithLinkEvidenceItsLeaf) {
  topo = HallTopology();
  stream.slowdown = [](const std::string& n, int step) { return n.rfind("r2-", 0) == 0 && step >= 10 ? 1.4 : 1.0; };
  auto judge = [&](FaultClass fc, ComponentRef c) {
    FleetAnalyzer a(topo);
    a.Ingest(testing::DiagnosisEnvelope(*topo.FindNode("r2-n4"), 3, fc, c, StepTime(11)));
    const auto out = Feed(a, stream, 0, 30);
    return out.empty() ? std::string("none") : out.back().component;
  };
  // The loop is shared with r3 and the rack has two PDUs: the evidence decides.
  EXPECT_EQ(judge(FaultClass::kCoolingDegraded, {ComponentType::kCoolant, "supply", {}}), "cooling_loop/loop-1");
  EXPECT_EQ(judge(FaultClass::kIbLinkErrors, {ComponentType::kIb, "mlx5_0/1", {}}), "switch/leaf-r2");
}

TEST_F(PeerAnalyzerTest, StragglerOnALoopWithAnUnrelatedHotGpuElsewhereIsStillNamed) {
  // r2-n1's GPU 6 throttles (its own cold plate); r2-n3, on the same loop, has a hot GPU 2
  // of its own but runs at speed. Two hot GPUs are not a loop fault.
  stream.slowdown = [](const std::string& n, int step) { return n == "r2-n1" && step >= 20 ? 1.25 : 1.0; };
  stream.clock = [](const std::string& n, int gpu, int step) {
    return n == "r2-n1" && gpu == 6 && step >= 20 ? 1050.0 : 1410.0;
  };
  FleetAnalyzer a(topo);
  a.Ingest(
      testing::DiagnosisEnvelope(*topo.FindNode("r2-n1"), 5, FaultClass::kGpuThermal, GpuComponent("6"), StepTime(21)));
  a.Ingest(
      testing::DiagnosisEnvelope(*topo.FindNode("r2-n3"), 9, FaultClass::kGpuThermal, GpuComponent("2"), StepTime(15)));
  EXPECT_EQ(Causes(Feed(a, stream, 0, 40)), (std::set<std::string>{"straggler:node/r2-n1/gpu/6"}));
}

TEST_F(PeerAnalyzerTest, StragglerInARackHalfSlowedByItsPduIsStillNamed) {
  topo = HallTopology();
  // PDU r3-a sags: its three nodes slow and say why. r3-n4 (on PDU b) is slow for its own
  // reason: the PDU's nodes are the PDU's, not the rack's, and r3-n4 is alone.
  stream.slowdown = [](const std::string& n, int step) {
    const bool on_pdu = n == "r3-n0" || n == "r3-n1" || n == "r3-n2";
    return (on_pdu || n == "r3-n4") && step >= 10 ? 1.4 : 1.0;
  };
  FleetAnalyzer a(topo);
  for (const char* n : {"r3-n0", "r3-n1", "r3-n2"}) {
    a.Ingest(testing::DiagnosisEnvelope(*topo.FindNode(n), 3, FaultClass::kVoltageOutOfRange,
                                        {ComponentType::kPsu, "PSU1", {}}, StepTime(9)));
  }
  EXPECT_EQ(Causes(Feed(a, stream, 0, 30)), (std::set<std::string>{"pdu:pdu/pdu-r3-a", "straggler:node/r3-n4"}));
}

TEST_F(PeerAnalyzerTest, DriverErrorsOnARackDoNotExplainItsOneSlowNode) {
  for (FleetNode& n : topo.nodes) {
    if (n.rack == "r1") n.driver = "560.28";  // the roll-out
  }
  auto judge = [&](std::function<bool(const std::string&)> slow) {
    stream.slowdown = [slow](const std::string& n, int step) { return slow(n) && step >= 10 ? 1.4 : 1.0; };
    FleetAnalyzer a(topo);
    for (int k = 0; k < 4; ++k) {
      a.Ingest(testing::DiagnosisEnvelope(*topo.FindNode("r1-n" + std::to_string(k)), 2, FaultClass::kDriverFault,
                                          HostComponent(), StepTime(5)));
    }
    return Causes(Feed(a, stream, 0, 30));
  };
  // The roll-out logs errors everywhere but slows nobody: r1-n2 is its own straggler.
  EXPECT_EQ(judge([](const std::string& n) { return n == "r1-n2"; }),
            (std::set<std::string>{"driver:driver/560.28", "straggler:node/r1-n2"}));
  // The roll-out slows its whole rack: one driver diagnosis, nothing else.
  EXPECT_EQ(judge([](const std::string& n) { return n.rfind("r1-", 0) == 0; }),
            (std::set<std::string>{"driver:driver/560.28"}));
}

TEST_F(PeerAnalyzerTest, ThroughputSeriesAreJudgedToo) {
  FleetAnalyzer a(topo);
  for (int step = 0; step < 20; ++step) {
    for (const FleetNode& n : topo.nodes) {
      Envelope e;
      e.kind = RecordKind::kObservations;
      e.place = {.site = "dc1", .rack = n.rack, .node = n.name};
      e.msg_id = n.name + "/tp/" + std::to_string(step);
      Observation o;
      o.time_ns = StepTime(step);
      o.layer = Layer::kWorkload;
      o.kind = ObsKind::kThroughput;
      o.source = Source::kWorkload;
      o.value = (n.name == "r2-n2" && step >= 5 ? 700.0 : 1000.0) * (1 + testing::Jitter(n.name, step, 0.01));
      o.attrs = {{"job", "infer-2"}};
      e.observations.push_back(o);
      a.Ingest(e);
    }
  }
  auto out = a.Evaluate(StepTime(20));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "node/r2-n2");
  EXPECT_EQ(out[0].job, "infer-2");
}

TEST_F(PeerAnalyzerTest, RecoveredStragglerCloses) {
  stream.slowdown = [](const std::string& n, int step) { return n == "r2-n3" && step >= 10 && step < 25 ? 1.3 : 1.0; };
  FleetAnalyzer a(topo);
  EXPECT_EQ(Feed(a, stream, 0, 24).size(), 1u);
  EXPECT_EQ(a.Open().size(), 1u);
  EXPECT_TRUE(Feed(a, stream, 24, 40).empty());
  EXPECT_TRUE(a.Open().empty());
}

}  // namespace
}  // namespace faultline::fleet
