#include <gtest/gtest.h>

#include "engine/detect/fabric_nvlink.h"
#include "fabric_test_util.h"

namespace faultline {
namespace {

using namespace testing_fabric;  // NOLINT(build/namespaces)

Topology NvTopology() {
  // GPU g link l -> NVSwitch (l % 4) port (g * 4 + l / 4) ... here: links 0..3 of each GPU on switches 0..3.
  Topology t;
  for (int g = 0; g < 8; ++g) {
    TopoGpu gpu;
    gpu.index = g;
    for (int l = 0; l < 4; ++l) gpu.nvlinks.push_back(TopoNvlink{l, std::to_string(l), 8 + g, {}, {}, ""});
    t.gpus.push_back(gpu);
  }
  for (int s = 0; s < 4; ++s) t.nvswitches.push_back({std::to_string(s), "0000:0" + std::to_string(5 + s) + ":00.0"});
  return t;
}

class FabricDetectNvlink : public ::testing::Test {
 protected:
  void Feed(const Observation& o) { det_.Observe(o); }
  // Feeds a counter: 0 at t0, then `per_interval` more every `interval_s` for `n` intervals.
  void Ramp(ComponentRef ref, ObsKind kind, double per_interval, int n, int64_t t0 = kT0, int interval_s = 10,
            Source src = Source::kNvml) {
    for (int i = 0; i <= n; ++i) Feed(Obs(ref, kind, per_interval * i, t0 + i * interval_s * kSec, {}, src));
  }
  FabricOptions opt_;
  Topology topo_ = NvTopology();
  NvlinkFabricDetector det_{opt_, &topo_};
};

TEST_F(FabricDetectNvlink, CrcAtHundredPerSecondIsAFailure) {
  Ramp(NvlinkRef(2, 1), ObsKind::kNvlinkCrcFlit, 1500, 1);  // 150/s
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kNvlinkErrors);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_EQ(fs[0].layer, Layer::kFabric);
  EXPECT_EQ(fs[0].component.Id(), "nvlink/2/1");
  EXPECT_EQ(Attr(fs[0], "placement"), "port");
  EXPECT_EQ(Attr(fs[0], "peer"), "nvswitch/1/10");
  EXPECT_EQ(Attr(fs[0], "peer_data"), "absent");
  EXPECT_EQ(fs[0].action, Action::kReseatOrReplaceLink);
  EXPECT_NE(fs[0].summary.find("GPU 2"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricDetectNvlink, LowCrcRateOnlyWhenSustained) {
  Ramp(NvlinkRef(1, 0), ObsKind::kNvlinkCrcData, 5, 2);  // 0.5/s for 2 intervals
  EXPECT_TRUE(det_.Findings().empty());
  Feed(Obs(NvlinkRef(1, 0), ObsKind::kNvlinkCrcData, 15, kT0 + 30 * kSec, {}, Source::kNvml));
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
}

TEST_F(FabricDetectNvlink, AnyReplayOrRecoveryIncreaseIsCritical) {
  Ramp(NvlinkRef(0, 3), ObsKind::kNvlinkReplay, 0, 3);
  EXPECT_TRUE(det_.Findings().empty());
  Feed(Obs(NvlinkRef(0, 3), ObsKind::kNvlinkRecovery, 0, kT0));
  Feed(Obs(NvlinkRef(0, 3), ObsKind::kNvlinkRecovery, 1, kT0 + 10 * kSec));
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NE(fs[0].summary.find("recoveries"), std::string::npos);
}

TEST_F(FabricDetectNvlink, CounterResetIsANewBaseline) {
  Feed(Obs(NvlinkRef(4, 2), ObsKind::kNvlinkCrcFlit, 1e6, kT0));
  Feed(Obs(NvlinkRef(4, 2), ObsKind::kNvlinkCrcFlit, 3, kT0 + 10 * kSec));  // reset
  Feed(Obs(NvlinkRef(4, 2), ObsKind::kNvlinkCrcFlit, 3, kT0 + 20 * kSec));
  Feed(Obs(NvlinkRef(4, 2), ObsKind::kNvlinkReplay, 50, kT0));
  Feed(Obs(NvlinkRef(4, 2), ObsKind::kNvlinkReplay, 0, kT0 + 10 * kSec));  // reset
  EXPECT_TRUE(det_.Findings().empty());
}

TEST_F(FabricDetectNvlink, InactiveLinkThatShouldBeActive) {
  Feed(Obs(NvlinkRef(5, 1), ObsKind::kNvlinkState, 0, kT0));  // in the topology
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kNvlinkDown);
  NvlinkFabricDetector bare(opt_, nullptr);
  bare.Observe(Obs(NvlinkRef(5, 17), ObsKind::kNvlinkState, 0, kT0));  // never active, no topology: unused link
  EXPECT_TRUE(bare.Findings().empty());
  bare.Observe(Obs(NvlinkRef(5, 3), ObsKind::kNvlinkState, 1, kT0));
  bare.Observe(Obs(NvlinkRef(5, 3), ObsKind::kNvlinkState, 0, kT0 + 10 * kSec));
  ASSERT_EQ(bare.Findings().size(), 1u);
  EXPECT_EQ(bare.Findings()[0].fault_class, FaultClass::kNvlinkDown);
  EXPECT_EQ(Attr(bare.Findings()[0], "peer_data"), "unknown");
}

TEST_F(FabricDetectNvlink, BothEndsBlameTheConnection) {
  Ramp(NvlinkRef(3, 2), ObsKind::kNvlinkCrcFlit, 2000, 1);
  ComponentRef sw_port{ComponentType::kNvswitch, "2/11", {}};  // GPU 3 link 2 -> switch 2 port 11
  Ramp(sw_port, ObsKind::kNvlinkCrcFlit, 2000, 1);
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(Attr(fs[0], "placement"), "cable");
  EXPECT_EQ(fs[0].component.Id(), "nvlink/3/2");
  EXPECT_EQ(Attr(fs[0], "peer"), "nvswitch/2/11");
  EXPECT_EQ(fs[0].action, Action::kReseatOrReplaceLink);
  EXPECT_GE(fs[0].evidence.size(), 2u);
}

TEST_F(FabricDetectNvlink, SxidOnThePeerPortCountsAsTheOtherEnd) {
  Ramp(NvlinkRef(6, 0), ObsKind::kNvlinkCrcFlit, 2000, 1);
  ComponentRef sw{ComponentType::kNvswitch, "0000:05:00.0", {}};  // switch 0 by BDF
  Observation sx =
      Obs(sw, ObsKind::kSxid, 0, kT0 + 5 * kSec, {{"link", "14"}, {"severity", "Non-fatal"}}, Source::kKmsg);
  sx.value.reset();
  sx.code = 20009;
  Feed(sx);
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(Attr(fs[0], "placement"), "cable");
  EXPECT_EQ(Attr(fs[0], "peer"), "nvswitch/0/14");
}

TEST_F(FabricDetectNvlink, SxidKeyedByPciAddressResolvesThroughTopology) {
  Ramp(NvlinkRef(6, 3), ObsKind::kNvlinkCrcFlit, 2000, 1);  // GPU 6 link 3 -> switch 3 port 14
  Observation sx =
      Obs(PcieComponent("0000:08:00.0"), ObsKind::kSxid, 0, kT0 + 5 * kSec, {{"link", "14"}}, Source::kKmsg);
  sx.value.reset();
  Feed(sx);
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(Attr(fs[0], "placement"), "cable");
  EXPECT_EQ(Attr(fs[0], "peer"), "nvswitch/3/14");
}

TEST_F(FabricDetectNvlink, OneEndWithACleanPeerBlamesThatEnd) {
  Ramp(NvlinkRef(3, 2), ObsKind::kNvlinkCrcFlit, 2000, 1);
  Ramp(ComponentRef{ComponentType::kNvswitch, "2/11", {}}, ObsKind::kNvlinkCrcFlit, 0, 1);
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(Attr(fs[0], "placement"), "port");
  EXPECT_EQ(Attr(fs[0], "peer_data"), "clean");
  EXPECT_EQ(fs[0].component.Id(), "nvlink/3/2");
}

TEST_F(FabricDetectNvlink, ManyPortsOfOneSwitchBlameTheSwitch) {
  for (int g = 0; g < 5; ++g) Ramp(NvlinkRef(g, 1), ObsKind::kNvlinkCrcFlit, 2000, 1);  // all land on switch 1
  Ramp(NvlinkRef(7, 2), ObsKind::kNvlinkCrcFlit, 2000, 1);                              // switch 2: its own
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 2u);
  const Finding* sw = FindOn(fs, "nvswitch/1");
  ASSERT_NE(sw, nullptr);
  EXPECT_EQ(sw->fault_class, FaultClass::kNvswitchFault);
  EXPECT_EQ(Attr(*sw, "placement"), "switch");
  EXPECT_EQ(Attr(*sw, "ports"), "10,11,12,8,9");
  ASSERT_NE(FindOn(fs, "nvlink/7/2"), nullptr);
}

TEST_F(FabricDetectNvlink, SingleFailingEndRepeatedlyIsRma) {
  for (int episode = 0; episode < 3; ++episode) {
    Ramp(NvlinkRef(1, 3), ObsKind::kNvlinkCrcFlit, 2000, 1, kT0 + episode * 3600 * kSec);
    Ramp(NvlinkRef(1, 3), ObsKind::kNvlinkCrcFlit, 0, 1, kT0 + episode * 3600 * kSec + 20 * kSec);
  }
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].action, Action::kRma);
  EXPECT_EQ(Attr(fs[0], "episodes"), "3");
}

}  // namespace
}  // namespace faultline
