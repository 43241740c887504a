// `faultline collect ethernet` run as an operator would (a subprocess) over fake trees.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json.h"
#include "sim/fake_sysfs/fake_ethernet.h"
#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code = -1;
  std::string out;
};

CliRun Faultline(const std::string& args) {
  const std::string cmd = std::string(FAULTLINE_BINARY_DIR) + "/faultline " + args + " 2>/dev/null";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class CollectEthernetCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        FakeSysfsScratchDir(std::string("ethcli_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto tree = FakeSysfsTree::Create(dir_);
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    tree_ = std::make_unique<FakeSysfsTree>(std::move(*tree));
    auto eth = FakeEthernet::Create(*tree_, {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}, {"eth0", "eth1", "eth2", "eth3"});
    ASSERT_TRUE(eth.ok()) << eth.status().ToString();
    eth_ = std::make_unique<FakeEthernet>(std::move(*eth));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  std::unique_ptr<FakeSysfsTree> tree_;
  std::unique_ptr<FakeEthernet> eth_;
};

TEST_F(CollectEthernetCli, JsonSampleNamesPortsInterfacesAndADowntrainedPort) {
  ASSERT_TRUE(eth_->SetSpeed(2, 200000).ok());  // 3 siblings at 400, one at 200
  ASSERT_TRUE(eth_->SetEthtool(1, {{"rx_prio3_pause", 12}}).ok());
  CliRun r = Faultline("collect ethernet --root " + dir_ + " --json --node n1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["node"], "n1");
  EXPECT_EQ(j["ethtool"], "file");
  EXPECT_EQ(j["interfaces"], 4);
  EXPECT_GE(j["roce_ports"].get<int>(), 4);
  EXPECT_GT(j["cost"]["rdma_port_reads"].get<int>(), 0);
  bool roce = false, pause = false;
  for (const Json& o : j["observations"]) {
    roce |= o["component"]["id"].get<std::string>() == "roce/mlx5_0/1";
    pause |= o["kind"] == "eth_counter" && o["attrs"]["counter"] == "rx_prio3_pause" && o["value"] == 12;
  }
  EXPECT_TRUE(roce);
  EXPECT_TRUE(pause);
  bool downtrained = false;
  for (const Json& f : j["findings"]) {
    if (f["fault_class"] == "ib_link_errors" && f["component"]["id"].get<std::string>() == "roce/mlx5_2/1") {
      downtrained = f["summary"].get<std::string>().find("200 Gb/s") != std::string::npos;
    }
  }
  EXPECT_TRUE(downtrained) << j["findings"].dump();
}

TEST_F(CollectEthernetCli, TableHelpAndBadOptions) {
  CliRun table = Faultline("collect ethernet --root " + dir_);
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("eth/eth3"), std::string::npos);
  EXPECT_NE(table.out.find("roce/mlx5_1/1"), std::string::npos);
  CliRun help = Faultline("collect ethernet --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* must : {"--root", "fabric_congestion", "SIOCETHTOOL", "rdma_interval", "Examples"}) {
    EXPECT_NE(help.out.find(must), std::string::npos) << must;
  }
  EXPECT_EQ(Faultline("collect ethernet --count 0").exit_code, 2);
  EXPECT_EQ(Faultline("collect ethernet --bogus").exit_code, 2);
  EXPECT_EQ(Faultline("collect ethernet --root " + dir_ + " --topology " + dir_ + "/no-such.json").exit_code, 2);
}

}  // namespace
}  // namespace faultline
