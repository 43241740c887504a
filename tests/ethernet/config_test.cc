// The agent's [ethernet] section (daemon/config.h) and the source it builds.
#include "daemon/config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/clock.h"
#include "daemon/sources.h"
#include "sim/fake_sysfs/fake_ethernet.h"
#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline::daemon {
namespace {

constexpr int64_t kSec = 1'000'000'000;

TEST(EthernetConfig, DefaultsPrintedAndParsed) {
  auto empty = ParseAgentConfig("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->ethernet.enabled);
  EXPECT_EQ(empty->ethernet.root, "");
  EXPECT_EQ(empty->ethernet.interval_ns, 10 * kSec);
  EXPECT_EQ(empty->ethernet.rdma_interval_ns, 30 * kSec);
  EXPECT_EQ(empty->ethernet.rdma_max_ports, 4);
  auto printed = ParseAgentConfig(DefaultAgentConfigToml());
  ASSERT_TRUE(printed.ok()) << printed.status().ToString();
  EXPECT_EQ(printed->ethernet.rdma_interval_ns, empty->ethernet.rdma_interval_ns);
  EXPECT_EQ(printed->ethernet.rdma_max_ports, empty->ethernet.rdma_max_ports);
  EXPECT_EQ(printed->ethernet.root, empty->ethernet.root);
}

TEST(EthernetConfig, OptionsAreReadAndBadOnesRefused) {
  auto c = ParseAgentConfig(
      "[ethernet]\nenabled = true\nroot = \"/srv/copy\"\ninterval = \"5s\"\nrdma_interval = \"2m\"\n"
      "rdma_max_ports = 2\nethtool = false\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ethernet.root, "/srv/copy");
  EXPECT_EQ(c->ethernet.interval_ns, 5 * kSec);
  EXPECT_EQ(c->ethernet.rdma_interval_ns, 120 * kSec);
  EXPECT_EQ(c->ethernet.rdma_max_ports, 2);
  EXPECT_FALSE(c->ethernet.ethtool);
  for (const char* bad :
       {"[ethernet]\nrdma_max_ports = 0\n", "[ethernet]\nrdma_max_ports = -3\n",
        "[ethernet]\nrdma_interval = \"soon\"\n", "[ethernet]\nethtools = true\n", "[ethernet]\nroot = 7\n"}) {
    auto r = ParseAgentConfig(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("ethernet"), std::string::npos) << r.status().ToString();
  }
}

TEST(EthernetConfig, TheAgentSourceReadsTheTreeUnderItsRoot) {
  const std::string dir = FakeSysfsScratchDir("eth_agent_source");
  std::filesystem::remove_all(dir);
  auto tree = FakeSysfsTree::Create(dir);
  ASSERT_TRUE(tree.ok());
  auto eth = FakeEthernet::Create(*tree, {"mlx5_0"}, {"eth0"});
  ASSERT_TRUE(eth.ok());
  ASSERT_TRUE(eth->SetEthtool(0, {{"rx_prio3_pause", 77}}).ok());
  EthernetSection section;
  FakeClock clock(1'700'000'000'000'000'000, 100 * kSec);
  auto source = MakeEthernetSource(section, dir, "n1", clock, nullptr);
  EXPECT_EQ(source->name(), "ethernet");
  EXPECT_EQ(source->layer(), Layer::kFabric);
  auto batch = source->Poll(0);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  bool pause = false, roce = false;
  for (const Observation& o : batch->observations) {
    pause |= o.component.Id() == "eth/eth0" && o.attrs.count("counter") && o.attrs.at("counter") == "rx_prio3_pause";
    roce |= o.component.Id() == "roce/mlx5_0/1";
    EXPECT_EQ(o.node, "n1");
  }
  EXPECT_TRUE(pause);  // a root other than "/": the tree's ethtool_stats file, not the ioctl
  EXPECT_TRUE(roce);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace faultline::daemon
