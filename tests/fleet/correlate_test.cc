// Shared causes through the fleet topology (correlate.h) and their fleet diagnoses.
#include "fleet/correlate.h"

#include <gtest/gtest.h>

#include "fleet/analyzer.h"
#include "fleet_test_util.h"

namespace faultline::fleet {
namespace {

using testing::DiagnosisEnvelope;
using testing::kSecond;
using testing::MakeTopology;
using testing::StepTime;

ComponentRef Ib(const std::string& device, int port) {
  return {ComponentType::kIb, device + "/" + std::to_string(port), {}};
}

ComponentRef Psu(const std::string& name) { return {ComponentType::kPsu, name, {}}; }

class CorrelateTest : public ::testing::Test {
 protected:
  FleetTopology topo = MakeTopology(4, 4);
  const FleetNode& N(const std::string& name) { return *topo.FindNode(name); }

  // Feeds the diagnoses and evaluates once, a minute after the first.
  std::vector<FleetDiagnosis> Judge(const std::vector<Envelope>& envelopes, AnalyzerOptions options = {}) {
    FleetAnalyzer a(topo, options);
    for (const Envelope& e : envelopes) a.Ingest(e);
    return a.Evaluate(StepTime(60));
  }
};

TEST(LinkEnd, FromKeysOrName) {
  EXPECT_EQ(LinkEnd(Ib("mlx5_0", 1)), (std::pair<std::string, int>{"mlx5_0", 1}));
  EXPECT_EQ(LinkEnd({ComponentType::kIb, "whatever", {{"device", "mlx5_3"}, {"port", "2"}}}),
            (std::pair<std::string, int>{"mlx5_3", 2}));
  EXPECT_EQ(LinkEnd({ComponentType::kNvlink, "3/11", {}}), (std::pair<std::string, int>{"3", 11}));
  EXPECT_EQ(LinkEnd({ComponentType::kIb, "mlx5_0", {}}), (std::pair<std::string, int>{"mlx5_0", 0}));
  EXPECT_EQ(LinkEnd({ComponentType::kIb, "a/b", {}}), (std::pair<std::string, int>{"a/b", 0}));
}

TEST_F(CorrelateTest, PowerFaultsOnOnePduAreThePdu) {
  const auto out =
      Judge({DiagnosisEnvelope(N("r1-n0"), 11, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(1)),
             DiagnosisEnvelope(N("r1-n2"), 4, FaultClass::kPowerInsufficient, Psu("PSU0"), StepTime(3)),
             DiagnosisEnvelope(N("r1-n3"), 9, FaultClass::kGpuPowerBrake, HostComponent(), StepTime(5)),
             // One GPU braking alone is that GPU's own problem: it does not join.
             DiagnosisEnvelope(N("r1-n1"), 2, FaultClass::kGpuPowerBrake, GpuComponent("2"), StepTime(5))});
  ASSERT_EQ(out.size(), 1u);
  const FleetDiagnosis& d = out[0];
  EXPECT_EQ(d.cause, "pdu");
  EXPECT_EQ(d.component, "pdu/pdu-r1");
  EXPECT_EQ(d.action, Action::kFacilityTicket);
  EXPECT_EQ(d.nodes, (std::vector<std::string>{"r1-n0", "r1-n2", "r1-n3"}));
  EXPECT_EQ(d.linked, (std::vector<std::string>{"r1-n0#11", "r1-n2#4", "r1-n3#9"}));
  EXPECT_EQ(d.first_ns, StepTime(1));
  EXPECT_EQ(d.id, "pdu/pdu-r1/" + std::to_string(StepTime(1)));
  EXPECT_EQ(d.severity, Severity::kCritical);
}

TEST_F(CorrelateTest, OneNodeOnAPduIsANodeProblem) {
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r1-n0"), 11, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(1)),
                     DiagnosisEnvelope(N("r1-n0"), 12, FaultClass::kPowerSupply, Psu("PSU2"), StepTime(2))})
                  .empty());
}

TEST_F(CorrelateTest, PowerFaultsAcrossPdusOfOneFeedAreTheFeed) {
  // Racks 0 and 1 are both on feed-A.
  const auto out = Judge({DiagnosisEnvelope(N("r0-n1"), 1, FaultClass::kVoltageOutOfRange, Psu("PSU1"), StepTime(1)),
                          DiagnosisEnvelope(N("r1-n2"), 1, FaultClass::kVoltageOutOfRange, Psu("PSU1"), StepTime(2))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "feed/feed-A");
  EXPECT_EQ(out[0].fault_class, FaultClass::kVoltageOutOfRange);
}

TEST_F(CorrelateTest, ThermalFaultsOnOneLoopAreTheLoop) {
  const auto out = Judge({DiagnosisEnvelope(N("r2-n0"), 3, FaultClass::kCoolingDegraded,
                                            {ComponentType::kCoolant, "loop", {}}, StepTime(1)),
                          // Hot on several GPUs at once: the node's coolant, not one cold plate.
                          DiagnosisEnvelope(N("r2-n3"), 5, FaultClass::kGpuThermal, GpuComponent("4"), StepTime(2)),
                          DiagnosisEnvelope(N("r2-n3"), 6, FaultClass::kGpuThermal, GpuComponent("7"), StepTime(2))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cause, "cooling_loop");
  EXPECT_EQ(out[0].component, "cooling_loop/loop-r2");
  EXPECT_EQ(out[0].action, Action::kFacilityTicket);
  EXPECT_EQ(out[0].linked, (std::vector<std::string>{"r2-n0#3", "r2-n3#5", "r2-n3#6"}));
}

TEST_F(CorrelateTest, TwoUnrelatedHotGpusOnOneLoopAreNotTheLoop) {
  // One GPU each of two nodes on loop-r2: a fan, paste or cold plate each, not the loop.
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r2-n0"), 3, FaultClass::kGpuThermal, GpuComponent("4"), StepTime(1)),
                     DiagnosisEnvelope(N("r2-n3"), 5, FaultClass::kGpuThermal, GpuComponent("1"), StepTime(2))})
                  .empty());
  // The same GPU re-diagnosed on a node is still one GPU.
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r2-n0"), 3, FaultClass::kGpuThermal, GpuComponent("4"), StepTime(1)),
                     DiagnosisEnvelope(N("r2-n0"), 4, FaultClass::kGpuThermal, GpuComponent("4"), StepTime(9)),
                     DiagnosisEnvelope(N("r2-n1"), 5, FaultClass::kGpuThermal, GpuComponent("0"), StepTime(2))})
                  .empty());
}

TEST_F(CorrelateTest, TwoUnrelatedPowerBrakesOnOnePduAreNotThePdu) {
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r1-n0"), 3, FaultClass::kGpuPowerBrake, GpuComponent("2"), StepTime(1)),
                     DiagnosisEnvelope(N("r1-n2"), 5, FaultClass::kGpuPowerBrake, GpuComponent("6"), StepTime(2))})
                  .empty());
  // A brake across the node (several GPUs, or the board) on both is the PDU.
  const auto out = Judge({DiagnosisEnvelope(N("r1-n0"), 3, FaultClass::kGpuPowerBrake, GpuComponent("2"), StepTime(1)),
                          DiagnosisEnvelope(N("r1-n0"), 4, FaultClass::kGpuPowerBrake, GpuComponent("3"), StepTime(1)),
                          DiagnosisEnvelope(N("r1-n2"), 5, FaultClass::kGpuPowerBrake,
                                            {ComponentType::kChassis, "board", {}}, StepTime(2))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "pdu/pdu-r1");
}

TEST_F(CorrelateTest, LoopFaultHeatingItsNodesIsTheLoopWithoutTheirStrayGpus) {
  const auto out = Judge({
      DiagnosisEnvelope(N("r2-n0"), 1, FaultClass::kCoolingDegraded, {ComponentType::kCoolant, "supply", {}},
                        StepTime(1)),
      DiagnosisEnvelope(N("r2-n1"), 1, FaultClass::kGpuThermal, GpuComponent("0"), StepTime(2)),
      DiagnosisEnvelope(N("r2-n1"), 2, FaultClass::kGpuThermal, GpuComponent("3"), StepTime(2)),
      DiagnosisEnvelope(N("r2-n1"), 3, FaultClass::kGpuThermal, GpuComponent("5"), StepTime(3)),
      DiagnosisEnvelope(N("r2-n2"), 1, FaultClass::kThermalInlet, HostComponent(), StepTime(3)),
      // A single hot GPU on another node of the loop: its own problem, not linked.
      DiagnosisEnvelope(N("r2-n3"), 7, FaultClass::kGpuThermal, GpuComponent("7"), StepTime(3)),
  });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "cooling_loop/loop-r2");
  EXPECT_EQ(out[0].nodes, (std::vector<std::string>{"r2-n0", "r2-n1", "r2-n2"}));
  EXPECT_EQ(out[0].linked, (std::vector<std::string>{"r2-n0#1", "r2-n1#1", "r2-n1#2", "r2-n1#3", "r2-n2#1"}));
}

TEST_F(CorrelateTest, ALoopNeedsARealShareOfItsReportingNodes) {
  // One loop for all 16 nodes, all of them running a job (reporting).
  for (FleetNode& n : topo.nodes) n.cooling_loop = "loop-hall";
  testing::JobStream stream;
  stream.topology = &topo;
  auto judge = [&](size_t hot) {
    FleetAnalyzer a(topo);
    for (const Envelope& e : stream.Steps(0, 10)) a.Ingest(e);
    for (size_t k = 0; k < hot; ++k) {
      a.Ingest(DiagnosisEnvelope(topo.nodes[k * 3], 1, FaultClass::kThermalInlet, HostComponent(), StepTime(5)));
    }
    return a.Evaluate(StepTime(10));
  };
  EXPECT_TRUE(judge(2).empty());  // 2 of 16: two nodes' own inlets
  EXPECT_TRUE(judge(3).empty());  // 3 of 16, under a quarter
  const auto out = judge(4);      // 4 of 16: a quarter of the loop
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "cooling_loop/loop-hall");
  EXPECT_EQ(out[0].nodes.size(), 4u);
}

TEST_F(CorrelateTest, DifferentFaultClassesDoNotCorrelate) {
  // Same PDU and loop, but one power and one thermal fault: two node problems.
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r2-n0"), 3, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(1)),
                     DiagnosisEnvelope(N("r2-n1"), 5, FaultClass::kGpuThermal, GpuComponent("4"), StepTime(2)),
                     DiagnosisEnvelope(N("r2-n2"), 6, FaultClass::kHbmUncorrectable, GpuComponent("1"), StepTime(2))})
                  .empty());
}

TEST_F(CorrelateTest, FaultsOutsideTheWindowDoNotCorrelate) {
  AnalyzerOptions o;
  o.window_ns = 30 * kSecond;  // the evaluation at 60 s sees only the second
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r1-n0"), 1, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(1)),
                     DiagnosisEnvelope(N("r1-n1"), 1, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(50))},
                    o)
                  .empty());
}

TEST_F(CorrelateTest, BothEndsOfOneCableAreTheCable) {
  topo.cables.push_back({"C-0193", {"r0-n1", "mlx5_0", 1, "", ""}, {"r3-n2", "mlx5_2", 1, "", ""}});
  topo.cables.push_back({"C-0200", {"r0-n2", "mlx5_0", 1, "", ""}, {"r3-n3", "mlx5_0", 1, "", ""}});
  const auto out = Judge({DiagnosisEnvelope(N("r0-n1"), 8, FaultClass::kIbLinkErrors, Ib("mlx5_0", 1), StepTime(1)),
                          DiagnosisEnvelope(N("r3-n2"), 2, FaultClass::kIbLinkDown, Ib("mlx5_2", 1), StepTime(4)),
                          // One end only of another cable: not the cable.
                          DiagnosisEnvelope(N("r0-n2"), 3, FaultClass::kIbLinkErrors, Ib("mlx5_0", 1), StepTime(4))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cause, "cable");
  EXPECT_EQ(out[0].component, "cable/C-0193");
  EXPECT_EQ(out[0].action, Action::kReseatOrReplaceLink);
  EXPECT_EQ(out[0].linked, (std::vector<std::string>{"r0-n1#8", "r3-n2#2"}));
}

TEST_F(CorrelateTest, OtherPortOfACableEndIsNotTheCable) {
  topo.cables.push_back({"C-1", {"r0-n1", "mlx5_0", 1, "", ""}, {"r3-n2", "mlx5_2", 1, "", ""}});
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r0-n1"), 8, FaultClass::kIbLinkErrors, Ib("mlx5_1", 1), StepTime(1)),
                     DiagnosisEnvelope(N("r3-n2"), 2, FaultClass::kIbLinkErrors, Ib("mlx5_2", 1), StepTime(4))})
                  .empty());
}

TEST_F(CorrelateTest, PortsOfManyNodesOnOneSwitchAreTheSwitch) {
  // Node-to-switch cables from three racks all land on spine-2.
  for (const char* n : {"r0-n0", "r1-n1", "r2-n2", "r3-n3"}) {
    topo.cables.push_back({std::string("S-") + n, {n, "mlx5_1", 1, "", ""}, {"", "", 1, "spine-2", n}});
  }
  const auto out = Judge({DiagnosisEnvelope(N("r0-n0"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_1", 1), StepTime(1)),
                          DiagnosisEnvelope(N("r1-n1"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_1", 1), StepTime(2)),
                          DiagnosisEnvelope(N("r2-n2"), 1, FaultClass::kIbLinkDown, Ib("mlx5_1", 1), StepTime(3))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cause, "switch");
  EXPECT_EQ(out[0].component, "switch/spine-2");
  EXPECT_EQ(out[0].nodes.size(), 3u);
}

TEST_F(CorrelateTest, LeafSwitchFromTheNodeWhenNoCableIsKnown) {
  const auto out = Judge({DiagnosisEnvelope(N("r1-n0"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_0", 1), StepTime(1)),
                          DiagnosisEnvelope(N("r1-n1"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_0", 1), StepTime(2)),
                          DiagnosisEnvelope(N("r1-n2"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_3", 1), StepTime(3))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "switch/leaf-r1");
}

TEST_F(CorrelateTest, TwoPortsAreNotYetManyOnASwitch) {
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r1-n0"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_0", 1), StepTime(1)),
                     DiagnosisEnvelope(N("r1-n1"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_0", 1), StepTime(2))})
                  .empty());
}

ComponentRef Roce(const std::string& device, int port) {
  return ComponentRef{
      ComponentType::kRoce, device + "/" + std::to_string(port), {{"device", device}, {"port", std::to_string(port)}}};
}

TEST_F(CorrelateTest, CongestionOnSeveralNodesUnderOneLeafIsThatLeafsTraffic) {
  const auto out =
      Judge({DiagnosisEnvelope(N("r1-n0"), 1, FaultClass::kFabricCongestion, Roce("mlx5_0", 1), StepTime(1)),
             DiagnosisEnvelope(N("r1-n1"), 1, FaultClass::kFabricCongestion, Roce("mlx5_2", 1), StepTime(2)),
             DiagnosisEnvelope(N("r1-n2"), 1, FaultClass::kFabricCongestion, Roce("mlx5_0", 1), StepTime(3))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cause, "congestion");
  EXPECT_EQ(out[0].component, "congestion/leaf-r1");
  EXPECT_EQ(out[0].fault_class, FaultClass::kFabricCongestion);
  EXPECT_EQ(out[0].nodes.size(), 3u);
}

TEST_F(CorrelateTest, CongestionOnOneNodeOrUnderTwoLeavesStaysTheNodes) {
  EXPECT_TRUE(
      Judge({DiagnosisEnvelope(N("r1-n0"), 1, FaultClass::kFabricCongestion, Roce("mlx5_0", 1), StepTime(1))}).empty());
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r1-n0"), 1, FaultClass::kFabricCongestion, Roce("mlx5_0", 1), StepTime(1)),
                     DiagnosisEnvelope(N("r2-n0"), 1, FaultClass::kFabricCongestion, Roce("mlx5_0", 1), StepTime(2))})
                  .empty());
}

TEST_F(CorrelateTest, CongestionAndLinkErrorsUnderOneLeafAreNotOneCause) {
  // Link errors on two ports and congestion on one: neither family alone is shared.
  EXPECT_TRUE(Judge({DiagnosisEnvelope(N("r1-n0"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_0", 1), StepTime(1)),
                     DiagnosisEnvelope(N("r1-n1"), 1, FaultClass::kIbLinkErrors, Ib("mlx5_0", 1), StepTime(2)),
                     DiagnosisEnvelope(N("r1-n2"), 1, FaultClass::kFabricCongestion, Roce("mlx5_0", 1), StepTime(3))})
                  .empty());
}

TEST_F(CorrelateTest, DriverFaultsOnOneVersionAreTheDriver) {
  for (const char* n : {"r0-n0", "r1-n0", "r2-n0", "r3-n0"}) {
    for (FleetNode& node : topo.nodes) {
      if (node.name == n) node.driver = "560.28";  // the roll-out
    }
  }
  std::vector<Envelope> in;
  for (const char* n : {"r0-n0", "r1-n0", "r2-n0"}) {
    in.push_back(DiagnosisEnvelope(N(n), 2, FaultClass::kDriverFault, HostComponent(), StepTime(3)));
  }
  auto out = Judge(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cause, "driver");
  EXPECT_EQ(out[0].component, "driver/560.28");
  EXPECT_EQ(out[0].action, Action::kDriverUpgrade);
  // The same fault on the old version too: not the new version's doing.
  in.push_back(DiagnosisEnvelope(N("r1-n1"), 2, FaultClass::kDriverFault, HostComponent(), StepTime(3)));
  EXPECT_TRUE(Judge(in).empty());
}

TEST_F(CorrelateTest, NodesMissingFromTheTopologyNeverCorrelate) {
  FleetNode ghost{.name = "ghost-1", .rack = "r1", .pdu = "pdu-r1"};
  FleetNode ghost2{.name = "ghost-2", .rack = "r1", .pdu = "pdu-r1"};
  EXPECT_TRUE(Judge({DiagnosisEnvelope(ghost, 1, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(1)),
                     DiagnosisEnvelope(ghost2, 1, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(1))})
                  .empty());
}

TEST_F(CorrelateTest, GrowingCauseKeepsItsIdAndIsReportedAgain) {
  FleetAnalyzer a(topo);
  a.Ingest(DiagnosisEnvelope(N("r1-n0"), 1, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(1)));
  a.Ingest(DiagnosisEnvelope(N("r1-n1"), 1, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(2)));
  auto first = a.Evaluate(StepTime(10));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(a.Evaluate(StepTime(11)).empty());  // unchanged: not returned again
  a.Ingest(DiagnosisEnvelope(N("r1-n2"), 1, FaultClass::kPowerSupply, Psu("PSU1"), StepTime(12)));
  auto grown = a.Evaluate(StepTime(13));
  ASSERT_EQ(grown.size(), 1u);
  EXPECT_EQ(grown[0].id, first[0].id);
  EXPECT_EQ(grown[0].nodes.size(), 3u);
  // Aged out of the window: closed.
  a.Evaluate(StepTime(13) + AnalyzerOptions{}.window_ns + 60 * kSecond);
  EXPECT_TRUE(a.Open().empty());
}

}  // namespace
}  // namespace faultline::fleet
