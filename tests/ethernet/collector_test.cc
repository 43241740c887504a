#include "sources/ethernet/collector.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "core/clock.h"
#include "sim/fake_sysfs/fake_ethernet.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sources/ethernet/ethtool_stats.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kSec = 1'000'000'000;

// A fake HGX tree whose 8 compute HCAs are RoCE NICs eth0..eth7 (the 2 management NICs
// stay RDMA-over-Ethernet devices without a netdev in the tree).
class EthernetCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FakeSysfsScratchDir(std::string("eth_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto tree = FakeSysfsTree::Create(dir_.string());
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    tree_ = std::make_unique<FakeSysfsTree>(std::move(*tree));
    std::vector<std::string> devs, netdevs;
    for (int i = 0; i < 8; ++i) {
      devs.push_back("mlx5_" + std::to_string(i));
      netdevs.push_back("eth" + std::to_string(i));
    }
    auto eth = FakeEthernet::Create(*tree_, devs, netdevs);
    ASSERT_TRUE(eth.ok()) << eth.status().ToString();
    eth_ = std::make_unique<FakeEthernet>(std::move(*eth));
    root_ = std::make_unique<RootFs>(dir_.string());
    faulty_ = std::make_unique<FaultInjectingFs>(*root_);
    stats_ = std::make_unique<FileEthtoolStats>(*faulty_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  EthernetCollector Make(EthernetOptions o = {}, const Topology* topo = nullptr) {
    o.node = "node-a";
    return EthernetCollector(*faulty_, *stats_, clock_, o, topo);
  }
  static const Observation* Find(const EthernetSample& s, const std::string& id, ObsKind kind,
                                 const std::string& counter = "") {
    for (const Observation& o : s.observations) {
      if (o.component.Id() == id && o.kind == kind &&
          (counter.empty() || (o.attrs.count("counter") && o.attrs.at("counter") == counter))) {
        return &o;
      }
    }
    return nullptr;
  }
  static size_t RoceBursts(const EthernetSample& s) {
    std::set<std::string> ports;
    for (const Observation& o : s.observations) {
      if (o.kind == ObsKind::kRoceCounter) ports.insert(o.component.Id());
    }
    return ports.size();
  }
  void WriteFile(const std::string& path, const std::string& content) {
    fs::create_directories(fs::path(dir_.string() + path).parent_path());
    std::ofstream(dir_.string() + path) << content;
  }

  fs::path dir_;
  std::unique_ptr<FakeSysfsTree> tree_;
  std::unique_ptr<FakeEthernet> eth_;
  std::unique_ptr<RootFs> root_;
  std::unique_ptr<FaultInjectingFs> faulty_;
  std::unique_ptr<FileEthtoolStats> stats_;
  FakeClock clock_{1'700'000'000'000'000'000, 1000 * kSec};
};

TEST_F(EthernetCollectorTest, DiscoversRocePortsAndTheirInterfaces) {
  EthernetCollector c = Make(EthernetOptions{.rdma_max_ports_per_sample = 64});
  EthernetSample s = c.Collect();
  EXPECT_TRUE(s.errors.empty()) << s.errors.front().ToString();
  // 8 RoCE NICs plus the tree's 2 Ethernet management NICs (RDMA devices, link layer Ethernet).
  ASSERT_EQ(c.roce_ports().size(), 10u);
  ASSERT_EQ(c.interfaces().size(), 8u);
  EXPECT_EQ(c.interfaces()[3].rdma_device, "mlx5_3");
  const Observation* state = Find(s, "eth/eth3", ObsKind::kEthLinkState);
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(*state->value, 1);
  EXPECT_EQ(state->attrs.at("operstate"), "up");
  EXPECT_EQ(state->layer, Layer::kFabric);
  EXPECT_EQ(state->component.keys.at("rdma_device"), "mlx5_3");
  EXPECT_FALSE(state->component.keys.at("bdf").empty());
  const Observation* speed = Find(s, "eth/eth3", ObsKind::kEthSpeed);
  ASSERT_NE(speed, nullptr);
  EXPECT_EQ(*speed->value, 400);
  const Observation* cnp = Find(s, "roce/mlx5_3/1", ObsKind::kRoceCounter, "np_cnp_sent");
  ASSERT_NE(cnp, nullptr);
  EXPECT_EQ(cnp->component.keys.at("netdev"), "eth3");
  EXPECT_EQ(cnp->attrs.at("group"), "congestion");
  EXPECT_NE(Find(s, "eth/eth3", ObsKind::kEthCounter, "carrier_changes"), nullptr);
  EXPECT_NE(Find(s, "eth/eth3", ObsKind::kEthCounter, "rx_crc_errors"), nullptr);
}

TEST_F(EthernetCollectorTest, EthtoolStatisticsAreKeptByTheAllowlistWithPriority) {
  ASSERT_TRUE(eth_->SetEthtool(2, {{"rx_prio3_pause", 900},
                                   {"rx_prio3_pause_duration", 5000},
                                   {"rx_crc_errors_phy", 4},
                                   {"rx_bytes_phy", 1 << 20},
                                   {"tx0_packets", 3}})
                  .ok());
  EthernetCollector c = Make();
  EthernetSample s = c.Collect();
  const Observation* pause = Find(s, "eth/eth2", ObsKind::kEthCounter, "rx_prio3_pause");
  ASSERT_NE(pause, nullptr);
  EXPECT_EQ(*pause->value, 900);
  EXPECT_EQ(pause->attrs.at("priority"), "3");
  EXPECT_EQ(pause->attrs.at("canonical"), "rx_prio_pause");
  EXPECT_EQ(pause->attrs.at("via"), "ethtool");
  EXPECT_NE(Find(s, "eth/eth2", ObsKind::kEthCounter, "rx_crc_errors_phy"), nullptr);
  EXPECT_EQ(Find(s, "eth/eth2", ObsKind::kEthCounter, "rx_bytes_phy"), nullptr);
  EXPECT_EQ(Find(s, "eth/eth2", ObsKind::kEthCounter, "tx0_packets"), nullptr);
}

TEST_F(EthernetCollectorTest, HwCountersHaveTheirOwnScheduleAndABoundedRate) {
  EthernetCollector c = Make(EthernetOptions{.rdma_interval_ns = 30 * kSec, .rdma_max_ports_per_sample = 3});
  // 10 RoCE ports, 3 per sample, least recently read first: 3 + 3 + 3 + 1, then nothing
  // until the interval has passed.
  std::set<std::string> seen;
  for (size_t want : {3u, 3u, 3u, 1u, 0u}) {
    EthernetSample s = c.Collect();
    EXPECT_EQ(s.rdma_ports_read, want);
    EXPECT_EQ(RoceBursts(s), want);
    for (const Observation& o : s.observations) {
      if (o.kind == ObsKind::kRoceCounter) {
        EXPECT_TRUE(seen.insert(o.component.Id() + o.attrs.at("counter")).second);
      }
    }
    clock_.Advance(5 * kSec);
  }
  clock_.Advance(30 * kSec);
  EXPECT_EQ(c.Collect().rdma_ports_read, 3u);
  EXPECT_EQ(c.cost().port_reads, 13u);
  EXPECT_GT(c.cost().file_reads, 13u);
  EXPECT_GE(c.cost().total_ns, c.cost().max_port_ns);
  // Interfaces are read at every sample regardless.
  EXPECT_NE(Find(c.Collect(), "eth/eth0", ObsKind::kEthLinkState), nullptr);
}

TEST_F(EthernetCollectorTest, AFailingHwCounterIsReportedOnceAndNeverReadAgain) {
  const std::string bad = "/sys/class/infiniband/mlx5_1/ports/1/hw_counters/np_cnp_sent";
  faulty_->Fail(bad, Status(StatusCode::kIoError, bad + ": Invalid argument"));
  EthernetCollector c = Make(EthernetOptions{.rdma_interval_ns = 0, .rdma_max_ports_per_sample = 64});
  EthernetSample first = c.Collect();
  EXPECT_EQ(std::count_if(first.errors.begin(), first.errors.end(),
                          [&](const Status& s) { return s.message().find(bad) != std::string::npos; }),
            1);
  EXPECT_NE(Find(first, "roce/mlx5_1/1", ObsKind::kRoceCounter, "np_ecn_marked_roce_packets"), nullptr);
  const size_t reads = std::count(faulty_->reads().begin(), faulty_->reads().end(), bad);
  EthernetSample second = c.Collect();
  EXPECT_TRUE(second.errors.empty());
  EXPECT_EQ(static_cast<size_t>(std::count(faulty_->reads().begin(), faulty_->reads().end(), bad)), reads);
}

TEST_F(EthernetCollectorTest, GarbledFilesAreErrorsNamingTheFileAndTheRestStillCounts) {
  faulty_->Replace("/sys/class/net/eth4/speed", "fast\n");
  faulty_->Replace("/sys/class/net/eth4/carrier_changes", "-3\n");
  faulty_->Replace("/sys/class/net/eth5/ethtool_stats", "rx_prio3_pause: lots\n");
  faulty_->Replace("/sys/class/infiniband/mlx5_6/ports/1/hw_counters/out_of_sequence", "N/A (no PMA)\n");
  faulty_->Replace("/sys/class/infiniband/mlx5_6/ports/1/hw_counters/packet_seq_err", std::string(5000, '7'));
  EthernetCollector c = Make(EthernetOptions{.rdma_max_ports_per_sample = 64});
  EthernetSample s = c.Collect();
  auto has = [&](const std::string& part) {
    return std::any_of(s.errors.begin(), s.errors.end(),
                       [&](const Status& e) { return e.message().find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has("eth4/speed"));
  EXPECT_TRUE(has("eth4/carrier_changes"));
  EXPECT_TRUE(has("eth5/ethtool_stats"));
  EXPECT_TRUE(has("packet_seq_err"));
  EXPECT_FALSE(has("out_of_sequence"));  // "N/A": not available, not an error
  EXPECT_EQ(Find(s, "eth/eth4", ObsKind::kEthSpeed), nullptr);
  EXPECT_NE(Find(s, "eth/eth4", ObsKind::kEthLinkState), nullptr);
  EXPECT_NE(Find(s, "eth/eth5", ObsKind::kEthCounter, "carrier_changes"), nullptr);
  EXPECT_NE(Find(s, "roce/mlx5_6/1", ObsKind::kRoceCounter, "np_cnp_sent"), nullptr);
}

TEST_F(EthernetCollectorTest, DownInterfaceReportsItsStateButNoSpeed) {
  ASSERT_TRUE(eth_->SetOperstate(1, "lowerlayerdown").ok());
  faulty_->Replace("/sys/class/net/eth1/speed", "-1\n");
  EthernetCollector c = Make();
  EthernetSample s = c.Collect();
  const Observation* st = Find(s, "eth/eth1", ObsKind::kEthLinkState);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(*st->value, 0);
  EXPECT_EQ(st->attrs.at("operstate"), "lowerlayerdown");
  EXPECT_EQ(Find(s, "eth/eth1", ObsKind::kEthSpeed), nullptr);
  EXPECT_TRUE(s.errors.empty());
}

TEST_F(EthernetCollectorTest, HostileNamesAndEscapingLinksAreSkipped) {
  // Names the kernel would never make, a link out of the root, a virtual interface.
  WriteFile("/sys/class/net/has space/operstate", "up\n");
  WriteFile("/sys/class/net/a_name_far_too_long/operstate", "up\n");
  WriteFile("/sys/class/net/veth9/operstate", "up\n");  // no device link: virtual
  fs::create_directories(dir_.string() + "/sys/class/net/evil0");
  fs::create_directory_symlink("/etc", dir_.string() + "/sys/class/net/evil0/device");
  WriteFile("/sys/class/infiniband/..bad dev/ports/1/link_layer", "Ethernet\n");
  EthernetCollector c = Make();
  EthernetSample s = c.Collect();
  EXPECT_EQ(c.interfaces().size(), 8u);
  for (const EthInterfaceInfo& i : c.interfaces()) {
    EXPECT_TRUE(i.name.rfind("eth", 0) == 0 && i.name != "evil0") << i.name;
  }
  for (const Observation& o : s.observations) EXPECT_EQ(o.raw.find(".."), std::string::npos) << o.raw;
  EXPECT_GE(std::count_if(s.errors.begin(), s.errors.end(),
                          [](const Status& e) { return e.message().find("unusable") != std::string::npos; }),
            3);
}

// Issue 25: a FIFO in the tree hung `collect ethernet` (and the agent's source thread) in
// open(), and a link out of the root had the file it named quoted in the error.
TEST_F(EthernetCollectorTest, AFifoOrALinkOutOfTheRootNeitherHangsNorLeaks) {
  const fs::path fifo = dir_.string() + "/sys/class/net/eth0/operstate";
  ASSERT_TRUE(fs::remove(fifo));
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path outside = dir_.string() + "_outside";
  fs::create_directories(outside);
  std::ofstream(outside / "secret") << "SECRET-CONTENT-42\n";
  const fs::path speed = dir_.string() + "/sys/class/net/eth1/speed";
  ASSERT_TRUE(fs::remove(speed));
  fs::create_symlink(outside / "secret", speed);
  EthernetCollector c = Make();
  auto collecting = std::async(std::launch::async, [&c] { return c.Collect(); });
  if (collecting.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "Collect() blocked on a FIFO";
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // let the stuck reader go
    if (w >= 0) ::close(w);
  }
  EthernetSample s = collecting.get();
  fs::remove_all(outside);
  bool fifo_refused = false, link_refused = false;
  for (const Status& e : s.errors) {
    EXPECT_EQ(e.message().find("SECRET"), std::string::npos) << e.message();
    fifo_refused |= e.message().find("eth0/operstate: not a regular file") != std::string::npos;
    link_refused |= e.message().find("eth1/speed: resolves outside the root") != std::string::npos;
  }
  EXPECT_TRUE(fifo_refused);
  EXPECT_TRUE(link_refused);
  for (const Observation& o : s.observations) EXPECT_EQ(o.raw.find("SECRET"), std::string::npos) << o.raw;
  EXPECT_NE(Find(s, "eth/eth2", ObsKind::kEthLinkState), nullptr);  // the other interfaces are still read
}

TEST_F(EthernetCollectorTest, TopologyNamesTheSwitchPortCableAndExpectedSpeed) {
  Topology topo;
  topo.ib_ports.push_back(TopoIbPort{"mlx5_2", 1, "leaf-03", "17", "CBL-0317", 400});
  ASSERT_TRUE(eth_->SetSpeed(2, 200000).ok());
  EthernetCollector c = Make({}, &topo);
  EthernetSample s = c.Collect();
  const Observation* speed = Find(s, "eth/eth2", ObsKind::kEthSpeed);
  ASSERT_NE(speed, nullptr);
  EXPECT_EQ(*speed->value, 200);
  EXPECT_EQ(speed->attrs.at("expected"), "400");
  EXPECT_EQ(speed->component.keys.at("switch"), "leaf-03");
  EXPECT_EQ(speed->component.keys.at("switch_port"), "17");
  EXPECT_EQ(speed->component.keys.at("cable"), "CBL-0317");
}

TEST_F(EthernetCollectorTest, NoRdmaStackAndNoNetworkAreNotErrors) {
  const std::string empty = dir_.string() + "-empty";
  fs::create_directories(empty + "/sys");
  RootFs root(empty);
  FileEthtoolStats stats(root);
  EthernetCollector c(root, stats, clock_, EthernetOptions{});
  EthernetSample s = c.Collect();
  EXPECT_TRUE(s.observations.empty());
  EXPECT_TRUE(s.errors.empty());
  fs::remove_all(empty);
}

TEST(IoctlEthtoolStats, LoopbackIsACleanNotSupported) {
  IoctlEthtoolStats ioctl;
  auto lo = ioctl.Read("lo");
  ASSERT_FALSE(lo.ok());
  // lo has no driver statistics; a sandbox without lo says so too; never a crash.
  EXPECT_TRUE(lo.status().code() == StatusCode::kUnsupported || lo.status().code() == StatusCode::kNotFound ||
              lo.status().code() == StatusCode::kPermissionDenied)
      << lo.status().ToString();
  auto none = ioctl.Read("nosuchif0");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().code(), StatusCode::kOk);
  EXPECT_EQ(ioctl.Read("../etc").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ioctl.Read("sixteen_chars_xx").status().code(), StatusCode::kInvalidArgument);
}

TEST(FileEthtoolStats, MissingFileMeansNoStatisticsAndHostileNamesAreRefused) {
  const std::string dir = FakeSysfsScratchDir("eth_file_stats");
  fs::create_directories(dir + "/sys/class/net/eth0");
  std::ofstream(dir + "/sys/class/net/eth0/ethtool_stats") << "rx_prio0_pause: 5\n";
  RootFs root(dir);
  FileEthtoolStats stats(root);
  auto ok = stats.Read("eth0");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->at(0).value, 5u);
  EXPECT_EQ(stats.Read("eth1").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(stats.Read("../../../etc").status().code(), StatusCode::kInvalidArgument);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace faultline
