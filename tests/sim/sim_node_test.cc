// The simulated node serves its state through the real interfaces, read back here with
// the project's own readers: the fake NVML state parser, the kernel-log reader, the
// sysfs collector, the workload report parser and the mock BMC's resources.
#include "sim/node/sim_node.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/clock.h"
#include "sim/fake_nvml/fake_nvml_state.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sources/kmsg/log_reader.h"
#include "sources/sysfs/collector.h"
#include "sources/sysfs/fs.h"
#include "sources/workload/report.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kEpoch = 1795996800LL * 1'000'000'000;
constexpr int64_t kBoot = 86400LL * 1'000'000'000;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SimNodeTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FakeSysfsScratchDir("simnode"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<SimNode> Start(std::vector<NodeFault> faults, NodeSpec node = {}) {
    NodeScenario sc;
    sc.name = "t";
    sc.node = node;
    sc.noise = NoiseSpec{0, 0, 0, 0, 0};
    sc.faults = std::move(faults);
    auto n = SimNode::Create(sc, SimNodeOptions{.workdir = dir_, .time = {kEpoch, kBoot, 1.0}});
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    return n.ok() ? std::move(n).value() : nullptr;
  }

  std::string dir_;
};

TEST_F(SimNodeTest, NvmlStateMatchesTheSysfsTreeAndFollowsTheModel) {
  NodeFault f;
  f.kind = NodeFaultKind::kFallOffBus;
  f.at = 10;
  f.gpu = 7;
  auto node = Start({f}, NodeSpec{.bmc = false});
  ASSERT_NE(node, nullptr);
  auto state = fake_nvml::ParseFakeNvmlState(Slurp(node->nvml_state_path()));
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->gpus.size(), 8u);
  const std::string bdf = node->model().layout().gpu_bdfs[7];
  EXPECT_EQ(*state->gpus[7].pci_bus_id, "0000" + bdf);  // NVML's 8-digit domain
  EXPECT_FALSE(state->gpus[7].lost_after_s);
  ASSERT_TRUE(node->AdvanceTo(20).ok());
  state = fake_nvml::ParseFakeNvmlState(Slurp(node->nvml_state_path()));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->gpus[7].lost_code, 15);  // GPU_IS_LOST
  EXPECT_TRUE(state->gpus[7].lost_after_s);
  // ... and sysfs shows its link down, read by the real collector.
  RootFs rootfs(node->sysfs_root());
  FakeClock clock(kEpoch);
  SysfsCollector collector(rootfs, clock, SysfsOptions{.node = "sim"});
  SysfsSample sample = collector.Collect();
  bool seen = false;
  for (const Observation& o : sample.observations) {
    if (o.kind == ObsKind::kPcieLinkWidth && o.component.name == bdf) {
      seen = true;
      EXPECT_EQ(*o.value, 0);
    }
  }
  EXPECT_TRUE(seen);
}

TEST_F(SimNodeTest, NvmlStateIsRewrittenOnlyWhenWhatNvmlShowsMoves) {
  // No noise: until the storm, nothing NVML reports moves, so the file is not rewritten
  // (the agent's NVML source is not re-reading an identical file at every tick); once
  // the storm counts errors it is, and shows them.
  NodeFault storm;
  storm.kind = NodeFaultKind::kSbeStorm;
  storm.at = 100;
  storm.gpu = 2;
  storm.value = 7200;  // two a second
  auto node = Start({storm}, NodeSpec{.bmc = false});
  ASSERT_NE(node, nullptr);
  const uint64_t at_start = node->stats().nvml_writes;
  EXPECT_EQ(at_start, 1u);
  const std::string before = Slurp(node->nvml_state_path());
  for (double t = 10; t <= 90; t += 10) ASSERT_TRUE(node->AdvanceTo(t).ok());
  EXPECT_EQ(node->stats().nvml_writes, at_start);
  EXPECT_EQ(Slurp(node->nvml_state_path()), before);
  uint64_t last = 0;
  for (double t = 110; t <= 130; t += 10) {
    ASSERT_TRUE(node->AdvanceTo(t).ok());
    auto state = fake_nvml::ParseFakeNvmlState(Slurp(node->nvml_state_path()));
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    const uint64_t sbe = state->gpus[2].ecc[0][0].value_or(0);  // corrected, volatile
    EXPECT_GT(sbe, last) << "t=" << t;
    last = sbe;
    EXPECT_EQ(state->gpus[3].ecc[0][0].value_or(0), 0u);
  }
  EXPECT_EQ(node->stats().nvml_writes, at_start + 3);
}

TEST_F(SimNodeTest, KernelLinesAreKmsgRecordsDatedOnTheSimulatedClock) {
  NodeFault f;
  f.kind = NodeFaultKind::kDbe;
  f.at = 12.5;
  f.gpu = 3;
  auto node = Start({f}, NodeSpec{.bmc = false});
  ASSERT_NE(node, nullptr);
  ASSERT_TRUE(node->AdvanceTo(15).ok());
  KernelLogOptions o;
  o.boot_time_ns = kEpoch - kBoot;
  auto reader = KernelLogReader::Create(o);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->ReadFile(node->kmsg_path()).ok());
  std::vector<Observation> obs = (*reader)->TakeObservations();
  const Observation* xid48 = nullptr;
  for (const Observation& ob : obs) {
    if (ob.kind == ObsKind::kXid && ob.code == 48) xid48 = &ob;
  }
  ASSERT_NE(xid48, nullptr);
  EXPECT_EQ(xid48->time_ns, kEpoch + 12'500'000'000);
  // The boot lines tie the bus address to the GPU's UUID, as a real driver does.
  const std::string log = Slurp(node->kmsg_path());
  EXPECT_NE(log.find("NVRM: GPU at PCI:" + node->model().layout().gpu_bdfs[3].substr(0, 10) + ": GPU-"),
            std::string::npos);
}

TEST_F(SimNodeTest, WorkloadReportsParseAndSlowDownUnderTheBrake) {
  NodeFault f;
  f.kind = NodeFaultKind::kFeedLoss;
  f.at = 30;
  f.psus = {1, 2, 3};
  auto node = Start({f}, NodeSpec{.bmc = false});
  ASSERT_NE(node, nullptr);
  ASSERT_TRUE(node->AdvanceTo(90).ok());
  std::istringstream lines(Slurp(node->workload_path()));
  std::string line;
  double early = 0, late = 0;
  int n = 0;
  while (std::getline(lines, line)) {
    auto r = ParseWorkloadReport(line);
    ASSERT_TRUE(r.ok()) << line << ": " << r.status().ToString();
    ASSERT_TRUE(r->step_time_s && r->time_ns);
    (*r->time_ns < kEpoch + 30'000'000'000 ? early : late) = *r->step_time_s;
    ++n;
  }
  EXPECT_GT(n, 50);
  EXPECT_NEAR(late / early, 2.0, 0.01);
}

TEST_F(SimNodeTest, BmcServesPsuStateAndRecordsSelEntries) {
  NodeFault f;
  f.kind = NodeFaultKind::kPsuFail;
  f.at = 5;
  f.psu = 4;
  auto node = Start({f});
  ASSERT_NE(node, nullptr);
  ASSERT_FALSE(node->bmc_url().empty());
  EXPECT_EQ(node->bmc_url().rfind("https://127.0.0.1:", 0), 0u);  // loopback, TLS
  ASSERT_TRUE(node->AdvanceTo(10).ok());
  EXPECT_TRUE(node->stats().errors.empty());
  EXPECT_EQ(node->stats().sel_entries, 1u);
  // The served resources are what a Redfish client gets.
  auto power = node->BmcResource("/redfish/v1/Chassis/HGX/Power");
  ASSERT_TRUE(power.ok()) << power.status().ToString();
  auto j = nlohmann::json::parse(*power);
  EXPECT_EQ(j["PowerSupplies"][3]["Name"], "PSU4");
  EXPECT_EQ(j["PowerSupplies"][3]["Status"]["Health"], "Critical");
  EXPECT_EQ(j["PowerSupplies"][2]["Status"]["Health"], "OK");
  auto sel = node->BmcResource("/redfish/v1/Systems/HGX/LogServices/SEL/Entries");
  ASSERT_TRUE(sel.ok());
  auto entries = nlohmann::json::parse(*sel)["Members"];
  ASSERT_EQ(entries.size(), 1u);
  auto entry = node->BmcResource(entries[0]["@odata.id"].get<std::string>());
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(nlohmann::json::parse(*entry)["MessageId"], "Power.1.0.PowerSupplyFailed");
  EXPECT_EQ(nlohmann::json::parse(*entry)["Created"], "2026-11-30T00:00:05.000000Z");
  // The manager's clock follows the simulated one (the client estimates BMC skew from it).
  auto mgr = node->BmcResource("/redfish/v1/Managers/BMC");
  ASSERT_TRUE(mgr.ok());
  EXPECT_EQ(nlohmann::json::parse(*mgr)["DateTime"], "2026-11-30T00:00:10.000000Z");
  auto mode = fs::status(node->bmc_password_file()).permissions();
  EXPECT_EQ(mode & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
}

TEST_F(SimNodeTest, SnapshotsLeftOutAreWrittenAsOfTheStepThatAsksForThem) {
  // Two copies of one node, one publishing every interface at every step, the other
  // leaving the NVML state file and the BMC's sensors out except at the last step: at
  // that step both serve the same state (the state of that time, not of the last step
  // that asked). Meanwhile the lazy node's snapshots stay as they were, and what is
  // appended in time order (the SEL, the kernel log) is never held back.
  NodeFault hot;
  hot.kind = NodeFaultKind::kGpuCooling;
  hot.at = 3.3;
  hot.gpu = 2;
  hot.value = 40;
  hot.ramp_s = 20;
  NodeFault psu;
  psu.kind = NodeFaultKind::kPsuFail;
  psu.at = 7.6;
  psu.psu = 5;
  NodeFault gone;
  gone.kind = NodeFaultKind::kFallOffBus;
  gone.at = 12.1;
  gone.gpu = 6;
  const std::string root = dir_;
  dir_ = root + "/every";
  auto every = Start({hot, psu, gone});
  dir_ = root + "/lazy";
  auto lazy = Start({hot, psu, gone});
  dir_ = root;
  ASSERT_NE(every, nullptr);
  ASSERT_NE(lazy, nullptr);
  const std::string nvml_at_0 = Slurp(lazy->nvml_state_path());
  auto thermal_at_0 = lazy->BmcResource("/redfish/v1/Chassis/HGX/Thermal");
  ASSERT_TRUE(thermal_at_0.ok());
  for (int step = 1; step < 30; ++step) {
    const double t = step * 0.5;
    ASSERT_TRUE(every->AdvanceTo(t).ok());
    ASSERT_TRUE(lazy->AdvanceTo(t, SimPublish{.nvml = false, .bmc_sensors = false}).ok());
  }
  EXPECT_EQ(Slurp(lazy->nvml_state_path()), nvml_at_0);
  EXPECT_EQ(*lazy->BmcResource("/redfish/v1/Chassis/HGX/Thermal"), *thermal_at_0);
  EXPECT_NE(Slurp(every->nvml_state_path()), nvml_at_0);  // the GPU heated and one was lost
  EXPECT_EQ(lazy->stats().sel_entries, 1u);               // PSU5's failure, on time
  EXPECT_EQ(Slurp(lazy->kmsg_path()), Slurp(every->kmsg_path()));
  ASSERT_TRUE(every->AdvanceTo(15.25).ok());
  ASSERT_TRUE(lazy->AdvanceTo(15.25).ok());
  EXPECT_EQ(Slurp(lazy->nvml_state_path()), Slurp(every->nvml_state_path()));
  for (const char* uri : {"/redfish/v1/Chassis/HGX/Power", "/redfish/v1/Chassis/HGX/Thermal",
                          "/redfish/v1/Managers/BMC", "/redfish/v1/Systems/HGX/LogServices/SEL/Entries"}) {
    auto a = every->BmcResource(uri);
    auto b = lazy->BmcResource(uri);
    ASSERT_TRUE(a.ok() && b.ok()) << uri;
    EXPECT_EQ(*a, *b) << uri;
  }
  EXPECT_LT(lazy->stats().nvml_writes, every->stats().nvml_writes);
  EXPECT_TRUE(lazy->stats().errors.empty());
}

}  // namespace
}  // namespace faultline::sim
