// The simulator's RoCE node: scenario keys and fault kinds, and the model's physics.
#include <gtest/gtest.h>

#include "sim/node/node_model.h"
#include "sim/node/node_scenario.h"
#include "sim/node/roce_model.h"

namespace faultline::sim {
namespace {

Result<NodeScenario> Parse(const std::string& body) {
  return ParseNodeScenario("name: t\ntruth: {fault_class: none}\n" + body);
}

TEST(RoceScenario, FabricKeyAndFaultKindsParseAndAreCheckedAgainstTheNode) {
  auto sc = Parse(
      "node: {fabric: roce}\nnoise: {roce_ecn_per_s: 800}\nfaults:\n"
      "- {at: 10, fault: roce_errors, hca: 3, value: 120}\n- {at: 20, fault: pfc_storm, value: 5000}\n"
      "- {at: 30, fault: link_downtrain, hca: 5}\n");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_TRUE(sc->node.roce());
  EXPECT_EQ(sc->noise.roce_ecn_per_s, 800);
  ASSERT_EQ(sc->faults.size(), 3u);
  EXPECT_EQ(sc->faults[1].kind, NodeFaultKind::kPfcStorm);
  // A RoCE fault on an InfiniBand node, an unknown fabric, a missing parameter: errors naming the place.
  auto ib = Parse("faults:\n- {at: 10, fault: pfc_storm, value: 5000}\n");
  ASSERT_FALSE(ib.ok());
  EXPECT_NE(ib.status().message().find("faults[0].fault"), std::string::npos) << ib.status().ToString();
  EXPECT_NE(ib.status().message().find("node.fabric: roce"), std::string::npos);
  auto bad = Parse("node: {fabric: omnipath}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("node.fabric"), std::string::npos);
  EXPECT_FALSE(Parse("node: {fabric: roce}\nfaults:\n- {at: 1, fault: roce_errors, hca: 3}\n").ok());
  EXPECT_FALSE(Parse("node: {fabric: roce}\nfaults:\n- {at: 1, fault: link_downtrain, hca: 9}\n").ok());
  EXPECT_FALSE(Parse("node: {fabric: roce}\nnoise: {roce_ecn_per_s: -1}\n").ok());
}

std::vector<SimRocePort> RunFor(const NodeScenario& sc, double seconds) {
  std::vector<SimRocePort> ports = MakeRocePorts(8);
  for (double t = 0.25; t <= seconds; t += 0.25) StepRoce(sc, t, 0.25, ports);
  return ports;
}

TEST(RoceModel, BackgroundMarksWithoutLossOrErrors) {
  auto sc = Parse("node: {fabric: roce}\n");
  ASSERT_TRUE(sc.ok());
  auto ports = RunFor(*sc, 100);
  for (const SimRocePort& p : ports) {
    EXPECT_NEAR(static_cast<double>(p.hw.at("np_ecn_marked_roce_packets")), 5000, 2);  // 50/s
    EXPECT_EQ(p.hw.at("packet_seq_err"), 0u);
    EXPECT_EQ(p.ethtool.at("rx_crc_errors_phy"), 0u);
    EXPECT_EQ(p.carrier_changes, 0u);
    EXPECT_EQ(p.speed_mbps, 400000);
  }
}

TEST(RoceModel, EachFaultMovesItsOwnCounters) {
  auto sc = Parse(
      "node: {fabric: roce}\nfaults:\n- {at: 10, fault: roce_errors, hca: 3, value: 120}\n"
      "- {at: 10, until: 70, fault: pfc_storm, hca: 1, value: 5000}\n- {at: 10, fault: link_downtrain, hca: 5}\n");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  auto ports = RunFor(*sc, 100);
  // CRC errors at 120/min for 90 s and the retransmissions they cause; no storm there.
  EXPECT_NEAR(static_cast<double>(ports[3].ethtool.at("rx_crc_errors_phy")), 180, 2);
  EXPECT_GT(ports[3].hw.at("packet_seq_err"), 100u);
  EXPECT_LT(ports[3].ethtool.at("rx_prio3_pause"), 2000u);
  // The storm: pauses, paused time and marks, only for its 60 s, and no loss.
  EXPECT_GT(ports[1].ethtool.at("rx_prio3_pause"), 290000u);
  EXPECT_GT(ports[1].ethtool.at("rx_prio3_pause_duration"), 10'000'000u);
  EXPECT_EQ(ports[1].hw.at("packet_seq_err"), 0u);
  EXPECT_EQ(ports[1].ethtool.at("rx_crc_errors_phy"), 0u);
  // The downtrain: one retrain, then 200G.
  EXPECT_EQ(ports[5].speed_mbps, 200000);
  EXPECT_EQ(ports[5].carrier_changes, 2u);
  EXPECT_EQ(ports[5].ethtool.at("link_down_events_phy"), 1u);
  EXPECT_EQ(ports[0].speed_mbps, 400000);
  EXPECT_GT(RoceSlowdown(*sc, 50), 1.2);
  EXPECT_EQ(RoceSlowdown(*sc, 5), 1.0);
}

}  // namespace
}  // namespace faultline::sim
