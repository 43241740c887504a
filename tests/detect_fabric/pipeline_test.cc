// The fabric layer end to end: fake sysfs tree -> SysfsCollector -> fabric detectors.
// Placement on the real PCIe tree shape: GPU vs switch port vs root port vs NIC.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/clock.h"
#include "fabric_test_util.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sources/sysfs/collector.h"

namespace faultline {
namespace {

using namespace testing_fabric;  // NOLINT(build/namespaces)
namespace fs = std::filesystem;

class FabricDetectPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        FakeSysfsScratchDir(std::string("fabric_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto tree = FakeSysfsTree::Create(dir_.string());
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    tree_ = std::make_unique<FakeSysfsTree>(std::move(*tree));
    gpus_ = tree_->Bdfs("gpu");
    nics_ = tree_->Bdfs("nic");
    // The switch above GPU 0 sits behind RISER-A; mlx5_0 is cabled to leaf-3 port 9.
    const std::string us = tree_->Find(tree_->Find(gpus_[0])->parent)->parent;
    auto topo = ParseTopology(R"({"expected_ib_rate_gbps": 400, "pcie_slots": [{"bdf": ")" + us +
                              R"(", "riser": "RISER-A"}], "ib": [{"device": "mlx5_0", "port": 1, "switch": "leaf-3",
                              "switch_port": "9", "cable": "CBL-009"}]})");
    ASSERT_TRUE(topo.ok()) << topo.status().ToString();
    topo_ = std::make_unique<Topology>(std::move(*topo));
    root_ = std::make_unique<RootFs>(dir_.string());
    collector_ = std::make_unique<SysfsCollector>(*root_, clock_, SysfsOptions{"node-a"}, topo_.get());
    detectors_ = MakeFabricDetectors(opt_, topo_.get());
    Sample();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Sample() {
    SysfsSample s = collector_->Collect();
    ASSERT_TRUE(s.errors.empty()) << s.errors.front().ToString();
    for (const Observation& o : s.observations) Feed(detectors_, o);
  }
  void After(int seconds) {
    clock_.Advance(seconds * kSec);
    Sample();
  }
  std::vector<Finding> Findings() const { return AllFindings(detectors_); }

  fs::path dir_;
  std::unique_ptr<FakeSysfsTree> tree_;
  std::unique_ptr<Topology> topo_;
  std::unique_ptr<RootFs> root_;
  std::unique_ptr<SysfsCollector> collector_;
  FakeClock clock_{kT0};
  FabricOptions opt_;
  std::vector<std::unique_ptr<Detector>> detectors_;
  std::vector<std::string> gpus_, nics_;
};

TEST_F(FabricDetectPipeline, HealthyNodeHasNoFindings) {
  After(60);
  After(60);
  EXPECT_TRUE(Findings().empty());
}

TEST_F(FabricDetectPipeline, GpuAndItsSwitchPortTogetherBlameTheLinkAndRiser) {
  ASSERT_TRUE(tree_->AddAer(gpus_[0], "correctable", "BadDLLP", 300).ok());
  ASSERT_TRUE(tree_->AddAer(tree_->Find(gpus_[0])->parent, "correctable", "RxErr", 200).ok());
  After(60);
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u) << fs[0].summary;
  EXPECT_EQ(fs[0].component.Id(), "pcie/" + gpus_[0]);
  EXPECT_EQ(Attr(fs[0], "placement"), "link");
  EXPECT_EQ(Attr(fs[0], "upstream_port"), tree_->Find(gpus_[0])->parent);
  EXPECT_EQ(Attr(fs[0], "part"), "riser RISER-A (slot 1)");
  EXPECT_EQ(Attr(fs[0], "aer_BadDLLP"), "300");
  EXPECT_EQ(fs[0].action, Action::kReseatOrReplaceLink);
}

TEST_F(FabricDetectPipeline, GpuAloneBlamesTheGpu) {
  ASSERT_TRUE(tree_->AddAer(gpus_[5], "correctable", "RxErr", 500).ok());
  After(60);
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "pcie/" + gpus_[5]);
  EXPECT_EQ(Attr(fs[0], "placement"), "device");
  EXPECT_EQ(fs[0].component.keys.at("device"), "gpu");
}

TEST_F(FabricDetectPipeline, RootPortAloneBlamesTheRootPort) {
  const std::string rp = tree_->RootPortOf(gpus_[2]);
  ASSERT_TRUE(tree_->AddAer(rp, "correctable", "BadTLP", 400).ok());
  After(60);
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "pcie/" + rp);
  EXPECT_EQ(Attr(fs[0], "placement"), "root_port");
  EXPECT_EQ(Attr(fs[0], "part"), "root port " + rp);
}

TEST_F(FabricDetectPipeline, NicBurstNeverImplicatesAGpu) {
  const std::string nic = tree_->Bdfs("nic").front();
  ASSERT_TRUE(tree_->AddAer(nic, "correctable", "RxErr", 1000).ok());
  ASSERT_TRUE(tree_->AddAer(tree_->Find(nic)->parent, "correctable", "BadTLP", 800).ok());
  After(60);
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "pcie/" + nic);
  EXPECT_EQ(fs[0].component.keys.at("device"), "nic");
  for (const Finding& f : fs) {
    EXPECT_NE(f.component.type, ComponentType::kGpu);
    EXPECT_EQ(std::find(gpus_.begin(), gpus_.end(), f.component.name), gpus_.end()) << f.summary;
  }
}

TEST_F(FabricDetectPipeline, UncorrectedFatalNamesTheReportingRootPort) {
  ASSERT_TRUE(tree_->AddAer(gpus_[6], "fatal", "DLP", 1).ok());
  After(10);
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kFatal);
  EXPECT_EQ(fs[0].component.Id(), "pcie/" + gpus_[6]);
  EXPECT_EQ(Attr(fs[0], "reporting_port"), tree_->RootPortOf(gpus_[6]));
  EXPECT_EQ(Attr(fs[0], "aer_DLP"), "1");
}

TEST_F(FabricDetectPipeline, AerCounterResetIsANewBaseline) {
  ASSERT_TRUE(tree_->AddAer(gpus_[1], "correctable", "RxErr", 5).ok());
  After(60);
  ASSERT_TRUE(tree_->ResetAer(gpus_[1]).ok());
  After(60);
  ASSERT_TRUE(tree_->AddAer(gpus_[1], "correctable", "RxErr", 3).ok());
  After(60);
  EXPECT_TRUE(Findings().empty());
}

TEST_F(FabricDetectPipeline, DowntrainedGpuLink) {
  ASSERT_TRUE(tree_->SetLink(gpus_[3], 32.0, 8).ok());
  After(30);
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "pcie/" + gpus_[3]);
  EXPECT_EQ(Attr(fs[0], "part"), "slot 4 (" + gpus_[3] + ")");
}

TEST_F(FabricDetectPipeline, IbFlapNamesTheCableFromTopology) {
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(tree_->AddIbCounter("mlx5_0", "link_downed", 1).ok());
    After(60);
  }
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_0/1");
  EXPECT_EQ(fs[0].component.keys.at("cable"), "CBL-009");
  EXPECT_EQ(Attr(fs[0], "switch_port"), "9");
}

TEST_F(FabricDetectPipeline, IbRateDowngrade) {
  ASSERT_TRUE(tree_->SetIbRate("mlx5_4", "200 Gb/sec (4X HDR)").ok());
  After(60);
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_4/1");
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

using namespace testing_fabric;  // NOLINT(build/namespaces)

TEST_F(FabricDetectPipeline, SwitchPortAloneBlamesTheSwitchPort) {
  const std::string ds = tree_->Find(gpus_[4])->parent;
  ASSERT_TRUE(tree_->AddAer(ds, "correctable", "RxErr", 300).ok());
  After(60);
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "pcie/" + ds);
  EXPECT_EQ(Attr(fs[0], "placement"), "switch_port");
}

TEST_F(FabricDetectPipeline, GpuFailingAloneInRepeatedEpisodesIsRma) {
  for (int episode = 0; episode < 3; ++episode) {
    ASSERT_TRUE(tree_->AddAer(gpus_[7], "correctable", "BadTLP", 400).ok());
    After(60);
    After(3600);  // quiet hour between bursts
  }
  auto fs = Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].action, Action::kRma);
  EXPECT_EQ(Attr(fs[0], "episodes"), "3");
}

}  // namespace
}  // namespace faultline
