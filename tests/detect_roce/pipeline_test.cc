// Fake tree -> ethernet collector -> RoCE detector, over several samples.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/clock.h"
#include "engine/detect/fabric_roce.h"
#include "sim/fake_sysfs/fake_ethernet.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sources/ethernet/collector.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kSec = 1'000'000'000;

class RocePipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        FakeSysfsScratchDir(std::string("rocepipe_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto tree = FakeSysfsTree::Create(dir_);
    ASSERT_TRUE(tree.ok());
    tree_ = std::make_unique<FakeSysfsTree>(std::move(*tree));
    std::vector<std::string> devs, netdevs;
    for (int i = 0; i < 8; ++i)
      devs.push_back("mlx5_" + std::to_string(i)), netdevs.push_back("eth" + std::to_string(i));
    auto eth = FakeEthernet::Create(*tree_, devs, netdevs);
    ASSERT_TRUE(eth.ok());
    eth_ = std::make_unique<FakeEthernet>(std::move(*eth));
    root_ = std::make_unique<RootFs>(dir_);
    stats_ = std::make_unique<FileEthtoolStats>(*root_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Samples every 10 s; `write(k)` changes the tree before sample k.
  template <typename Write>
  std::vector<Finding> Sample(int samples, Write write, const Topology* topo = nullptr) {
    EthernetCollector c(*root_, *stats_, clock_,
                        EthernetOptions{.node = "n", .rdma_interval_ns = 10 * kSec, .rdma_max_ports_per_sample = 16},
                        topo);
    RoceFabricDetector d(RoceOptions{}, topo);
    for (int k = 0; k < samples; ++k) {
      write(k);
      EthernetSample s = c.Collect();
      EXPECT_TRUE(s.errors.empty()) << s.errors.front().ToString();
      for (const Observation& o : s.observations) d.Observe(o);
      clock_.Advance(10 * kSec);
    }
    return d.Findings();
  }

  std::string dir_;
  std::unique_ptr<FakeSysfsTree> tree_;
  std::unique_ptr<FakeEthernet> eth_;
  std::unique_ptr<RootFs> root_;
  std::unique_ptr<FileEthtoolStats> stats_;
  FakeClock clock_{1'700'000'000'000'000'000, 500 * kSec};
};

TEST_F(RocePipeline, PfcStormOnEveryPortIsCongestion) {
  auto fs = Sample(6, [&](int k) {
    for (size_t i = 0; i < 8; ++i) {
      ASSERT_TRUE(
          eth_->SetEthtool(i, {{"rx_prio3_pause", 60000ull * k}, {"rx_prio3_pause_duration", 3000000ull * k}}).ok());
    }
  });
  ASSERT_EQ(fs.size(), 8u);
  for (const Finding& f : fs) EXPECT_EQ(f.fault_class, FaultClass::kFabricCongestion) << f.summary;
}

TEST_F(RocePipeline, CrcAndRetransmissionsOnOnePortNameItThroughTheTopology) {
  Topology topo;
  topo.ib_ports.push_back(TopoIbPort{"mlx5_4", 1, "leaf-01", "21", "CBL-121", 400});
  auto fs = Sample(
      5,
      [&](int k) {
        ASSERT_TRUE(eth_->SetEthtool(4, {{"rx_crc_errors_phy", 40ull * k}}).ok());
        ASSERT_TRUE(eth_->SetHwCounter(4, "packet_seq_err", 40ull * k).ok());
      },
      &topo);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
  EXPECT_EQ(fs[0].component.Id(), "roce/mlx5_4/1");
  EXPECT_EQ(fs[0].attrs.at("cable"), "CBL-121");
  EXPECT_EQ(fs[0].attrs.at("switch_port"), "21");
}

TEST_F(RocePipeline, QuietFabricGivesNothing) {
  auto fs = Sample(6, [&](int k) {
    for (size_t i = 0; i < 8; ++i) {
      ASSERT_TRUE(eth_->SetHwCounter(i, "np_ecn_marked_roce_packets", 500ull * 10 * k).ok());
      ASSERT_TRUE(eth_->SetEthtool(i, {{"rx_prio3_pause", 100ull * 10 * k}}).ok());
    }
  });
  EXPECT_TRUE(fs.empty()) << fs.front().summary;
}

}  // namespace
}  // namespace faultline
