#include <gtest/gtest.h>

#include "engine/detect/fabric_pcie.h"
#include "fabric_test_util.h"

namespace faultline {
namespace {

using namespace testing_fabric;  // NOLINT(build/namespaces)

ComponentRef Pcie(const std::string& bdf, const std::string& role, const std::string& upstream,
                  std::map<std::string, std::string> extra = {}) {
  ComponentRef r = PcieComponent(bdf);
  r.keys["device"] = role;
  if (!upstream.empty()) r.keys["upstream"] = upstream;
  for (auto& [k, v] : extra) r.keys[k] = v;
  return r;
}

ComponentRef Gpu(int index, const std::string& bdf) {
  ComponentRef r = GpuComponent(std::to_string(index));
  r.keys["index"] = std::to_string(index);
  r.keys["bdf"] = bdf;
  return r;
}

class FabricDetectPcie : public ::testing::Test {
 protected:
  FabricOptions opt_;
  PcieFabricDetector det_{opt_, nullptr};
};

TEST_F(FabricDetectPcie, ExpectedReplayRateFollowsGenAndWidth) {
  EXPECT_DOUBLE_EQ(det_.ExpectedReplaysPerMinute(3, 16), 0.48 * 16);
  EXPECT_DOUBLE_EQ(det_.ExpectedReplaysPerMinute(4, 8), 0.96 * 8);
  EXPECT_DOUBLE_EQ(det_.ExpectedReplaysPerMinute(5, 16), 1.92 * 16);
  EXPECT_DOUBLE_EQ(det_.ExpectedReplaysPerMinute(6, 16), 1.92 * 16);
}

TEST_F(FabricDetectPcie, LinkTrainedBelowMaxWidthIsASilentSlowdown) {
  ComponentRef gpu =
      Pcie("0000:1b:00.0", "gpu", "0000:00:01.0>0000:01:00.0>0000:02:00.0", {{"slot", "3"}, {"riser", "RISER-1"}});
  det_.Observe(Obs(gpu, ObsKind::kPcieLinkWidth, 8, kT0, {{"max", "16"}}));
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_EQ(fs[0].action, Action::kReseatOrReplaceLink);
  EXPECT_EQ(Attr(fs[0], "part"), "riser RISER-1 (slot 3)");
  EXPECT_NE(fs[0].summary.find("x8 of x16"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricDetectPcie, GenDowngradeCountsButIdleGpuDoesNot) {
  ComponentRef gpu = Pcie("0000:1b:00.0", "gpu", "0000:00:01.0");
  det_.Observe(Obs(gpu, ObsKind::kPcieLinkSpeed, 2.5, kT0, {{"max", "32"}}));
  det_.Observe(Obs(Gpu(0, "0000:1b:00.0"), ObsKind::kPcieLinkGen, 1, kT0, {{"max", "5"}}, Source::kNvml));
  EXPECT_TRUE(det_.Findings().empty());
  ComponentRef nic = Pcie("0000:2b:00.0", "nic", "0000:00:02.0");
  det_.Observe(Obs(nic, ObsKind::kPcieLinkSpeed, 2.5, kT0, {{"max", "32"}}));  // a NIC does not idle down
  det_.Observe(Obs(Gpu(1, "0000:3b:00.0"), ObsKind::kPcieLinkGen, 3, kT0, {{"max", "5"}}, Source::kNvml));
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_NE(FindOn(fs, "pcie/0000:2b:00.0"), nullptr);
  const Finding* g1 = FindOn(fs, "gpu/1");
  ASSERT_NE(g1, nullptr);
  EXPECT_NE(g1->summary.find("Gen3 of Gen5"), std::string::npos) << g1->summary;
}

TEST_F(FabricDetectPcie, WidthZeroIsLinkDown) {
  det_.Observe(Obs(Pcie("0000:1b:00.0", "gpu", ""), ObsKind::kPcieLinkWidth, 0, kT0, {{"max", "16"}}));
  ASSERT_EQ(det_.Findings().size(), 1u);
  EXPECT_EQ(det_.Findings()[0].severity, Severity::kCritical);
}

TEST_F(FabricDetectPcie, ReplayRateAboveExpected) {
  ComponentRef g = Gpu(2, "0000:3b:00.0");
  det_.Observe(Obs(g, ObsKind::kPcieLinkGen, 5, kT0, {{"max", "5"}}, Source::kNvml));
  det_.Observe(Obs(g, ObsKind::kPcieLinkWidth, 16, kT0, {{"max", "16"}}, Source::kNvml));
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 100, kT0, {}, Source::kNvml));
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 120, kT0 + 60 * kSec, {}, Source::kNvml));  // 20/min < 30.72
  EXPECT_TRUE(det_.Findings().empty());
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 170, kT0 + 120 * kSec, {}, Source::kNvml));  // 50/min
  auto fs = det_.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "gpu/2");
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_EQ(Attr(fs[0], "expected_per_min"), "30.72");
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 1170, kT0 + 180 * kSec, {}, Source::kNvml));  // 1000/min
  EXPECT_EQ(det_.Findings()[0].severity, Severity::kCritical);
}

TEST_F(FabricDetectPcie, ReplayUsesNarrowerLinkExpectation) {
  ComponentRef g = Gpu(2, "0000:3b:00.0");
  det_.Observe(Obs(g, ObsKind::kPcieLinkGen, 3, kT0, {{"max", "3"}}, Source::kNvml));
  det_.Observe(Obs(g, ObsKind::kPcieLinkWidth, 4, kT0, {{"max", "4"}}, Source::kNvml));
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 0, kT0, {}, Source::kNvml));
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 3, kT0 + 60 * kSec, {}, Source::kNvml));  // 3/min > 1.92
  ASSERT_EQ(det_.Findings().size(), 1u);
}

TEST_F(FabricDetectPcie, ReplayCounterResetIsANewBaseline) {
  ComponentRef g = Gpu(0, "0000:1b:00.0");
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 5000, kT0, {}, Source::kNvml));
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 2, kT0 + 60 * kSec, {}, Source::kNvml));
  det_.Observe(Obs(g, ObsKind::kPcieReplay, 4, kT0 + 120 * kSec, {}, Source::kNvml));
  EXPECT_TRUE(det_.Findings().empty());
}

TEST_F(FabricDetectPcie, KernelLogAerLinesAreLeftToTheKernelLogLayer) {
  ComponentRef gpu = Pcie("0000:1b:00.0", "gpu", "0000:00:01.0");
  det_.Observe(
      Obs(gpu, ObsKind::kPcieAer, 0, kT0, {{"severity", "fatal"}, {"error", "TOTAL_ERR_FATAL"}}, Source::kKmsg));
  det_.Observe(
      Obs(gpu, ObsKind::kPcieAer, 5, kT0 + kSec, {{"severity", "fatal"}, {"error", "TOTAL_ERR_FATAL"}}, Source::kKmsg));
  EXPECT_TRUE(det_.Findings().empty());
}

TEST_F(FabricDetectPcie, AerStormBelowThresholdIsQuiet) {
  ComponentRef gpu = Pcie("0000:1b:00.0", "gpu", "0000:00:01.0");
  det_.Observe(Obs(gpu, ObsKind::kPcieAer, 0, kT0, {{"severity", "correctable"}, {"error", "TOTAL_ERR_COR"}}));
  det_.Observe(
      Obs(gpu, ObsKind::kPcieAer, 5, kT0 + 60 * kSec, {{"severity", "correctable"}, {"error", "TOTAL_ERR_COR"}}));
  det_.Observe(
      Obs(gpu, ObsKind::kPcieAer, 14, kT0 + 600 * kSec, {{"severity", "correctable"}, {"error", "TOTAL_ERR_COR"}}));
  EXPECT_TRUE(det_.Findings().empty());
}

}  // namespace
}  // namespace faultline
