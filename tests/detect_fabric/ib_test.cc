#include <gtest/gtest.h>

#include "engine/detect/fabric_ib.h"
#include "fabric_test_util.h"

namespace faultline {
namespace {

using namespace testing_fabric;  // NOLINT(build/namespaces)

Topology IbTopology() {
  Topology t;
  t.expected_ib_rate_gbps = 400;
  for (int i = 0; i < 8; ++i) {
    t.ib_ports.push_back(TopoIbPort{"mlx5_" + std::to_string(i), 1, i < 6 ? "leaf-07" : "leaf-08",
                                    std::to_string(17 + i), "CBL-A" + std::to_string(17 + i), 0});
  }
  return t;
}

class FabricDetectIb : public ::testing::Test {
 protected:
  void Feed(const Observation& o) { det_.Observe(o); }
  void Ramp(ComponentRef ref, ObsKind kind, double per_interval, int n, int64_t t0 = kT0, int interval_s = 60) {
    for (int i = 0; i <= n; ++i) Feed(Obs(ref, kind, per_interval * i, t0 + i * interval_s * kSec));
  }
  void State(const std::string& dev, int state, int64_t t) {
    Feed(Obs(IbRef(dev, "1"), ObsKind::kIbPortState, state, t,
             {{"state", state == 4 ? "ACTIVE" : "DOWN"}, {"phys_state", state == 4 ? "LinkUp" : "Polling"}}));
  }
  FabricOptions opt_;
  Topology topo_ = IbTopology();
  IbFabricDetector det_{opt_, &topo_};
};

TEST_F(FabricDetectIb, SymbolErrorRateNamesHcaSwitchPortAndCable) {
  Ramp(IbRef("mlx5_2", "1"), ObsKind::kIbSymbolError, 50, 2);  // 50/min
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_2/1");
  EXPECT_EQ(Attr(fs[0], "switch"), "leaf-07");
  EXPECT_EQ(Attr(fs[0], "switch_port"), "19");
  EXPECT_EQ(Attr(fs[0], "cable"), "CBL-A19");
  EXPECT_EQ(Attr(fs[0], "placement"), "port");
  EXPECT_NE(fs[0].summary.find("symbol errors"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricDetectIb, LowSymbolRateAndDiscardsAreNotFaults) {
  Ramp(IbRef("mlx5_2", "1"), ObsKind::kIbSymbolError, 2, 5);
  Ramp(IbRef("mlx5_2", "1"), ObsKind::kIbXmitDiscards, 1e6, 5);  // congestion, not link health
  EXPECT_TRUE(det_.Findings().empty());
}

TEST_F(FabricDetectIb, LinkErrorRecoveryAndIntegrityIncrements) {
  Ramp(IbRef("mlx5_1", "1"), ObsKind::kIbLinkErrorRecovery, 1, 1);
  Ramp(IbRef("mlx5_3", "1"), ObsKind::kIbLinkIntegrity, 2, 1);
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_NE(FindOn(fs, "ib/mlx5_1/1"), nullptr);
  EXPECT_NE(FindOn(fs, "ib/mlx5_3/1"), nullptr);
}

TEST_F(FabricDetectIb, ThreeDownUpCyclesInTheWindowIsAFlap) {
  Ramp(IbRef("mlx5_4", "1"), ObsKind::kIbLinkDowned, 1, 2);  // 2 cycles
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
  Feed(Obs(IbRef("mlx5_4", "1"), ObsKind::kIbLinkDowned, 3, kT0 + 180 * kSec));
  fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(Attr(fs[0], "mode"), "flap");
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
}

TEST_F(FabricDetectIb, CyclesSpreadOverHoursAreNotAFlap) {
  for (int i = 1; i <= 4; ++i) Feed(Obs(IbRef("mlx5_4", "1"), ObsKind::kIbLinkDowned, i, kT0 + i * 3600 * kSec));
  for (const Finding& f : det_.Findings()) EXPECT_NE(f.fault_class, FaultClass::kIbLinkDown);
}

// A port seen ACTIVE that reads down is a link down from that sample on (never "errors",
// whose plan differs): a watched note until it has stayed down ib_down_after, then critical.
TEST_F(FabricDetectIb, DownForMinutesIsADrop) {
  State("mlx5_5", 4, kT0);
  State("mlx5_5", 1, kT0 + 60 * kSec);
  auto early = det_.Findings();
  ASSERT_EQ(early.size(), 1u);
  EXPECT_EQ(early[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(early[0].severity, Severity::kInfo);
  EXPECT_EQ(early[0].action, Action::kMonitor);
  State("mlx5_5", 1, kT0 + 120 * kSec);  // down 60 s so far
  EXPECT_EQ(det_.Findings().at(0).severity, Severity::kInfo);
  State("mlx5_5", 1, kT0 + 240 * kSec);  // 3 min
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NE(fs[0].action, Action::kMonitor);
  EXPECT_EQ(Attr(fs[0], "mode"), "down");
}

// Whichever poll lands first, the port's link_downed counter (+1) or its state, the
// finding is a link down as soon as the state is read.
TEST_F(FabricDetectIb, TheDownedCounterBeforeTheStateIsStillALinkDown) {
  State("mlx5_5", 4, kT0);
  Feed(Obs(IbRef("mlx5_5", "1"), ObsKind::kIbLinkDowned, 0, kT0));
  Feed(Obs(IbRef("mlx5_5", "1"), ObsKind::kIbLinkDowned, 1, kT0 + 10 * kSec));
  State("mlx5_5", 1, kT0 + 12 * kSec);
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
}

TEST_F(FabricDetectIb, NeverActiveUnlistedPortIsOnlyANoteNeverEscalated) {
  // No topology, no sibling: it may just be uncabled. Said once, at info, and never upgraded.
  IbFabricDetector bare(opt_, nullptr);
  for (int i = 0; i < 10; ++i) {
    bare.Observe(Obs(IbRef("mlx5_9", "2"), ObsKind::kIbPortState, 1, kT0 + i * 60 * kSec, {{"state", "DOWN"}}));
  }
  auto fs = bare.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);  // a note: never "the cause" of a slowdown
  EXPECT_EQ(fs[0].action, Action::kMonitor);
  EXPECT_EQ(Attr(fs[0], "since"), "unknown");
  EXPECT_LE(fs[0].confidence, 0.3);
  EXPECT_NE(fs[0].summary.find("uncabled"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricDetectIb, RateBelowExpected) {
  State("mlx5_0", 4, kT0);
  Feed(Obs(IbRef("mlx5_0", "1"), ObsKind::kIbRate, 200, kT0));
  State("mlx5_1", 4, kT0);
  Feed(Obs(IbRef("mlx5_1", "1"), ObsKind::kIbRate, 400, kT0));
  State("mlx5_2", 1, kT0);
  Feed(Obs(IbRef("mlx5_2", "1"), ObsKind::kIbRate, 10, kT0));  // down port: rate meaningless
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 2u);
  const Finding* rate = FindOn(fs, "ib/mlx5_0/1");
  ASSERT_NE(rate, nullptr);
  EXPECT_EQ(Attr(*rate, "rate_gbps"), "200");
  EXPECT_EQ(Attr(*rate, "expected_gbps"), "400");
  // The down port is reported as down (present state), never as slow.
  const Finding* down = FindOn(fs, "ib/mlx5_2/1");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(Attr(*down, "rate_gbps"), "");
}

TEST_F(FabricDetectIb, BothEndsBlameTheCable) {
  Ramp(IbRef("mlx5_0", "1"), ObsKind::kIbSymbolError, 100, 1);
  Ramp(IbRef("leaf-07", "17"), ObsKind::kIbSymbolError, 80, 1);  // the switch side of the same link
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(Attr(fs[0], "placement"), "cable");
  EXPECT_EQ(Attr(fs[0], "part"), "cable CBL-A17");
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_0/1");
  EXPECT_NE(fs[0].summary.find("CBL-A17"), std::string::npos);
}

TEST_F(FabricDetectIb, SwitchSideOnlyBlamesTheSwitchPort) {
  Ramp(IbRef("mlx5_0", "1"), ObsKind::kIbSymbolError, 0, 1);
  Ramp(IbRef("leaf-07", "17"), ObsKind::kIbSymbolError, 80, 1);
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "ib/leaf-07/17");
  EXPECT_EQ(Attr(fs[0], "part"), "switch leaf-07 port 17");
  EXPECT_EQ(Attr(fs[0], "peer_data"), "clean");
}

TEST_F(FabricDetectIb, ManyPortsOfOneSwitchBlameTheSwitch) {
  for (int i = 0; i < 4; ++i) Ramp(IbRef("mlx5_" + std::to_string(i), "1"), ObsKind::kIbSymbolError, 100, 1);
  Ramp(IbRef("mlx5_6", "1"), ObsKind::kIbSymbolError, 100, 1);  // leaf-08: on its own
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 2u);
  const Finding* sw = FindOn(fs, "ib/leaf-07");
  ASSERT_NE(sw, nullptr);
  EXPECT_EQ(Attr(*sw, "placement"), "switch");
  EXPECT_EQ(Attr(*sw, "ports"), "17,18,19,20");
  EXPECT_NE(FindOn(fs, "ib/mlx5_6/1"), nullptr);
}

TEST_F(FabricDetectIb, CounterResetIsANewBaseline) {
  Feed(Obs(IbRef("mlx5_3", "1"), ObsKind::kIbSymbolError, 65535, kT0));
  Feed(Obs(IbRef("mlx5_3", "1"), ObsKind::kIbSymbolError, 0, kT0 + 60 * kSec));
  Feed(Obs(IbRef("mlx5_3", "1"), ObsKind::kIbSymbolError, 1, kT0 + 120 * kSec));
  Feed(Obs(IbRef("mlx5_3", "1"), ObsKind::kIbLinkDowned, 40, kT0));
  Feed(Obs(IbRef("mlx5_3", "1"), ObsKind::kIbLinkDowned, 0, kT0 + 60 * kSec));
  EXPECT_TRUE(det_.Findings().empty());
}

}  // namespace
}  // namespace faultline
