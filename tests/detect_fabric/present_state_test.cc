// `collect sysfs` as a new user runs it: one sample, no history, no topology file.
// Fake sysfs trees of several shapes (single-port NDR HCAs, dual-port HDR HCAs, HCAs
// without hca_type, RoCE NICs) -> SysfsCollector -> fabric detectors. The present state
// must be reported: ports not ACTIVE, ports and PCIe links slower than their siblings,
// counters pegged at their maximum.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/clock.h"
#include "fabric_test_util.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sources/sysfs/collector.h"

namespace faultline {
namespace {

using namespace testing_fabric;  // NOLINT(build/namespaces)
namespace fs = std::filesystem;

class FabricPresentState : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void Make(const FakeSysfsOptions& options) {
    dir_ =
        FakeSysfsScratchDir(std::string("present_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto tree = FakeSysfsTree::Create(dir_, options);
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    tree_ = std::make_unique<FakeSysfsTree>(std::move(*tree));
  }
  // One sample by a fresh collector and fresh detectors, as `collect sysfs` does.
  std::vector<Finding> OneShot() {
    RootFs root(dir_);
    FakeClock clock(kT0);
    SysfsCollector collector(root, clock, SysfsOptions{"node-a"}, nullptr);
    SysfsSample s = collector.Collect();
    EXPECT_TRUE(s.errors.empty()) << s.errors.front().ToString();
    auto detectors = MakeFabricDetectors(FabricOptions{}, nullptr);
    for (const Observation& o : s.observations) Feed(detectors, o);
    return AllFindings(detectors);
  }
  static std::string Dump(const std::vector<Finding>& fs) {
    std::string out;
    for (const Finding& f : fs) out += f.component.Id() + ": " + f.summary + "\n";
    return out;
  }

  std::string dir_;
  std::unique_ptr<FakeSysfsTree> tree_;
};

TEST_F(FabricPresentState, HealthyTreesOfEveryShapeAreQuiet) {
  FakeSysfsOptions dual;
  dual.ib_hcas = 4;
  dual.ib_ports_per_hca = 2;
  dual.hca_type = "MT4123";
  dual.ib_rate = "200 Gb/sec (4X HDR)";
  FakeSysfsOptions no_ids;
  no_ids.hca_type = no_ids.board_id = no_ids.fw_ver = "";
  for (const FakeSysfsOptions& o : {FakeSysfsOptions{}, dual, no_ids}) {
    Make(o);
    auto fs = OneShot();
    EXPECT_TRUE(fs.empty()) << Dump(fs);
    fs::remove_all(dir_);
  }
}

TEST_F(FabricPresentState, PortDownNowIsReportedAtOnceSinceUnknown) {
  Make({});
  ASSERT_TRUE(tree_->SetIbState("mlx5_3", 1, 2).ok());  // DOWN / Polling
  auto fs = OneShot();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_3/1");
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_EQ(Attr(fs[0], "since"), "unknown");
  EXPECT_NE(fs[0].summary.find("DOWN/Polling"), std::string::npos) << fs[0].summary;
  EXPECT_NE(fs[0].summary.find("7 of 7 sibling ports"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricPresentState, DualPortHcaPortDownAndDisabled) {
  FakeSysfsOptions dual;
  dual.ib_hcas = 4;
  dual.ib_ports_per_hca = 2;
  dual.hca_type = "MT4123";
  dual.ib_rate = "200 Gb/sec (4X HDR)";
  Make(dual);
  ASSERT_TRUE(tree_->SetIbState("mlx5_1", 1, 3, 2).ok());  // port 2 DOWN / Disabled
  auto fs = OneShot();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_1/2");
  EXPECT_NE(fs[0].summary.find("Disabled"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricPresentState, RoceNicDownIsNotAnInfiniBandFault) {
  Make({});
  ASSERT_TRUE(tree_->SetIbState("mlx5_8", 1, 3).ok());  // the Ethernet NIC, administratively down
  auto fs = OneShot();
  EXPECT_TRUE(fs.empty()) << Dump(fs);
}

TEST_F(FabricPresentState, OnePortAtHalfRateAmongEightIsDowntrained) {
  Make({});
  ASSERT_TRUE(tree_->SetIbRate("mlx5_6", "200 Gb/sec (4X HDR)").ok());
  auto fs = OneShot();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_6/1");
  EXPECT_EQ(Attr(fs[0], "expected_gbps"), "400");
  EXPECT_EQ(Attr(fs[0], "expected_from"), "siblings");
  EXPECT_EQ(fs[0].component.keys.at("model"), "MT4129");
}

TEST_F(FabricPresentState, SiblingsByPciIdWhenTheDriverHasNoHcaType) {
  FakeSysfsOptions o;
  o.hca_type = o.board_id = o.fw_ver = "";
  Make(o);
  ASSERT_TRUE(tree_->SetIbRate("mlx5_2", "100 Gb/sec (4X EDR)").ok());
  auto fs = OneShot();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_2/1");
  EXPECT_EQ(fs[0].component.keys.at("model"), "15b3:1021");
}

TEST_F(FabricPresentState, PeggedCountersAreNoticed) {
  Make({});
  ASSERT_TRUE(tree_->SetIbCounter("mlx5_2", "link_downed", 255).ok());
  ASSERT_TRUE(tree_->SetIbCounter("mlx5_5", "symbol_error", 65535).ok());
  ASSERT_TRUE(tree_->SetIbCounter("mlx5_7", "port_rcv_errors", 4294967295ULL).ok());
  ASSERT_TRUE(tree_->SetIbCounter("mlx5_1", "symbol_error", 65534).ok());  // high, but still counting
  auto fs = OneShot();
  ASSERT_EQ(fs.size(), 3u) << Dump(fs);
  for (const Finding& f : fs) {
    EXPECT_EQ(Attr(f, "mode"), "counter_saturated") << f.summary;
    EXPECT_EQ(Attr(f, "rate"), "unknown");
  }
  const Finding* downed = FindOn(fs, "ib/mlx5_2/1");
  ASSERT_NE(downed, nullptr);
  EXPECT_EQ(Attr(*downed, "counter"), "link_downed");
  EXPECT_EQ(Attr(*downed, "counter_max"), "255");
}

// Seen on a healthy H100 node: excessive_buffer_overrun_errors (4 bits) reads 15 on every
// InfiniBand port. One note for the node, not a pegged-counter finding per port; the
// Ethernet NICs (reading 0) are not InfiniBand ports and do not break the agreement.
TEST_F(FabricPresentState, ACounterPeggedOnEveryPortIsOneNote) {
  Make({});
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(tree_->SetIbCounter("mlx5_" + std::to_string(i), "excessive_buffer_overrun_errors", 15).ok());
  }
  auto fs = OneShot();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kNone);
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_EQ(Attr(fs[0], "counter"), "excessive_buffer_overrun_errors");
  EXPECT_EQ(Attr(fs[0], "value"), "15");
  EXPECT_EQ(Attr(fs[0], "counter_max"), "15");
  EXPECT_EQ(Attr(fs[0], "ports"), "8");
  EXPECT_NE(fs[0].summary.find("reads 15 on all 8 InfiniBand ports"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricPresentState, PcieFunctionSlowerThanItsSiblingsEvenWhenItsMaxAgrees) {
  Make({});
  const std::vector<std::string> gpus = tree_->Bdfs("gpu");
  // A slot wired x8 reports max_link_width 8 too: only the siblings show it is wrong.
  ASSERT_TRUE(tree_->SetLink(gpus[4], 32.0, 8).ok());
  ASSERT_TRUE(tree_->WriteRaw(tree_->Find(gpus[4])->dir + "/max_link_width", "8\n").ok());
  // An idle GPU parked at Gen1 is power saving, not a slow link.
  ASSERT_TRUE(tree_->SetLink(gpus[1], 2.5, 16).ok());
  // A NIC trained at Gen4 whose max also says Gen4, while its siblings run Gen5.
  const std::string nic = tree_->Bdfs("nic").front();
  ASSERT_TRUE(tree_->SetLink(nic, 16.0, 16).ok());
  ASSERT_TRUE(tree_->WriteRaw(tree_->Find(nic)->dir + "/max_link_speed", "16.0 GT/s PCIe\n").ok());
  auto fs = OneShot();
  ASSERT_EQ(fs.size(), 2u) << Dump(fs);
  const Finding* gpu = FindOn(fs, "pcie/" + gpus[4]);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_NE(gpu->summary.find("x8 while 7 of 8 functions with PCI id 10de:2330 run x16"), std::string::npos)
      << gpu->summary;
  EXPECT_EQ(Attr(*gpu, "expected_from"), "siblings");
  const Finding* n = FindOn(fs, "pcie/" + nic);
  ASSERT_NE(n, nullptr);
  EXPECT_NE(n->summary.find("16 GT/s while 7 of 8 functions with PCI id 15b3:1021 run 32 GT/s"), std::string::npos)
      << n->summary;
}

TEST_F(FabricPresentState, BelowItsOwnMaxIsReportedOnceNotTwice) {
  Make({});
  const std::vector<std::string> gpus = tree_->Bdfs("gpu");
  ASSERT_TRUE(tree_->SetLink(gpus[2], 32.0, 4).ok());  // max still says x16
  auto fs = OneShot();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_NE(fs[0].summary.find("of x16"), std::string::npos) << fs[0].summary;
  EXPECT_EQ(Attr(fs[0], "expected_from"), "");
}

}  // namespace
}  // namespace faultline
