#include "sources/sysfs/collector.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/clock.h"
#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

class SysfsCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FakeSysfsScratchDir(std::string("sysfs_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto tree = FakeSysfsTree::Create(dir_.string());
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    tree_ = std::make_unique<FakeSysfsTree>(std::move(*tree));
    root_ = std::make_unique<RootFs>(dir_.string());
    faulty_ = std::make_unique<FaultInjectingFs>(*root_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SysfsCollector MakeCollector(const Topology* topo = nullptr) {
    return SysfsCollector(*faulty_, clock_, SysfsOptions{"node-a"}, topo);
  }

  static const Observation* FindObs(const SysfsSample& s, const std::string& id, ObsKind kind,
                                    const std::string& error = "") {
    for (const Observation& o : s.observations) {
      if (o.component.Id() == id && o.kind == kind &&
          (error.empty() || (o.attrs.count("error") && o.attrs.at("error") == error))) {
        return &o;
      }
    }
    return nullptr;
  }
  static bool HasError(const SysfsSample& s, StatusCode code, const std::string& path_part) {
    return std::any_of(s.errors.begin(), s.errors.end(), [&](const Status& st) {
      return st.code() == code && st.message().find(path_part) != std::string::npos;
    });
  }

  fs::path dir_;
  std::unique_ptr<FakeSysfsTree> tree_;
  std::unique_ptr<RootFs> root_;
  std::unique_ptr<FaultInjectingFs> faulty_;
  FakeClock clock_{1'700'000'000'000'000'000};
};

TEST_F(SysfsCollectorTest, DiscoversTheHgxTree) {
  SysfsCollector c = MakeCollector();
  SysfsSample s = c.Collect();
  EXPECT_TRUE(s.errors.empty()) << s.errors.front().ToString();
  int gpus = 0, nvswitches = 0, nics = 0, roots = 0;
  for (const PcieDevice& d : c.tree().devices) {
    gpus += d.role == PcieRole::kGpu;
    nvswitches += d.role == PcieRole::kNvswitch;
    nics += d.role == PcieRole::kNic;
    roots += d.role == PcieRole::kRootPort;
    EXPECT_NE(d.class_code >> 8, 0x0108u) << "NVMe must be ignored: " << d.bdf;
  }
  EXPECT_EQ(gpus, 8);
  EXPECT_EQ(nvswitches, 4);
  EXPECT_EQ(nics, 10);
  EXPECT_EQ(roots, 6);  // 4 switch root ports + 2 NIC root ports; the NVMe root ports are not kept
  const std::string gpu0 = tree_->Bdfs("gpu").front();
  const PcieDevice* d = c.tree().Find(gpu0);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->upstream.size(), 3u);  // root port > switch upstream port > downstream port
  EXPECT_EQ(d->upstream.front(), tree_->RootPortOf(gpu0));
  EXPECT_EQ(d->upstream.back(), tree_->Find(gpu0)->parent);
  EXPECT_EQ(d->slot, "1");
  EXPECT_EQ(c.tree().Find(d->upstream[1])->port_type, "upstream");
  EXPECT_EQ(c.tree().Find(d->upstream[2])->port_type, "downstream");
  EXPECT_EQ(c.ib_ports().size(), 10u);
}

TEST_F(SysfsCollectorTest, EmitsLinkAerAndIbObservations) {
  SysfsCollector c = MakeCollector();
  SysfsSample s = c.Collect();
  const std::string gpu0 = tree_->Bdfs("gpu").front();
  const Observation* w = FindObs(s, "pcie/" + gpu0, ObsKind::kPcieLinkWidth);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(*w->value, 16);
  EXPECT_EQ(w->attrs.at("max"), "16");
  EXPECT_EQ(w->layer, Layer::kFabric);
  EXPECT_EQ(w->source, Source::kSysfs);
  EXPECT_EQ(w->node, "node-a");
  EXPECT_EQ(w->time_ns, clock_.NowNs());
  EXPECT_EQ(w->component.keys.at("device"), "gpu");
  EXPECT_EQ(w->component.keys.at("slot"), "1");
  EXPECT_EQ(w->component.keys.at("upstream").find(tree_->RootPortOf(gpu0)), 0u);
  const Observation* sp = FindObs(s, "pcie/" + gpu0, ObsKind::kPcieLinkSpeed);
  ASSERT_NE(sp, nullptr);
  EXPECT_EQ(*sp->value, 32);
  EXPECT_EQ(sp->attrs.at("max_gen"), "5");
  const Observation* aer = FindObs(s, "pcie/" + gpu0, ObsKind::kPcieAer, "TOTAL_ERR_COR");
  ASSERT_NE(aer, nullptr);
  EXPECT_EQ(aer->attrs.at("severity"), "correctable");
  EXPECT_NE(FindObs(s, "pcie/" + tree_->RootPortOf(gpu0), ObsKind::kPcieAer, "ROOTPORT_TOTAL_ERR_COR"), nullptr);
  // Root and downstream ports do not repeat their child's link.
  EXPECT_EQ(FindObs(s, "pcie/" + tree_->RootPortOf(gpu0), ObsKind::kPcieLinkWidth), nullptr);
  const Observation* st = FindObs(s, "ib/mlx5_0/1", ObsKind::kIbPortState);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(*st->value, 4);
  EXPECT_EQ(st->attrs.at("phys_state"), "LinkUp");
  EXPECT_EQ(st->component.keys.at("link_layer"), "InfiniBand");
  EXPECT_FALSE(st->component.keys.at("bdf").empty());
  EXPECT_EQ(*FindObs(s, "ib/mlx5_0/1", ObsKind::kIbRate)->value, 400);
  EXPECT_EQ(*FindObs(s, "ib/mlx5_0/1", ObsKind::kIbSymbolError)->value, 0);
  EXPECT_NE(FindObs(s, "ib/mlx5_0/1", ObsKind::kIbLinkDowned), nullptr);
}

TEST_F(SysfsCollectorTest, SeesCounterAndLinkChangesBetweenSamples) {
  SysfsCollector c = MakeCollector();
  const std::string gpu3 = tree_->Bdfs("gpu")[3];
  (void)c.Collect();
  ASSERT_TRUE(tree_->AddAer(gpu3, "correctable", "BadTLP", 25).ok());
  ASSERT_TRUE(tree_->SetLink(gpu3, 16.0, 8).ok());
  ASSERT_TRUE(tree_->AddIbCounter("mlx5_2", "symbol_error", 7).ok());
  ASSERT_TRUE(tree_->SetIbState("mlx5_2", 1, 2).ok());
  clock_.Advance(10'000'000'000);
  SysfsSample s = c.Collect();
  EXPECT_EQ(*FindObs(s, "pcie/" + gpu3, ObsKind::kPcieAer, "TOTAL_ERR_COR")->value, 25);
  EXPECT_EQ(*FindObs(s, "pcie/" + gpu3, ObsKind::kPcieAer, "BadTLP")->value, 25);
  EXPECT_EQ(*FindObs(s, "pcie/" + gpu3, ObsKind::kPcieLinkWidth)->value, 8);
  EXPECT_EQ(*FindObs(s, "pcie/" + gpu3, ObsKind::kPcieLinkSpeed)->value, 16);
  EXPECT_EQ(*FindObs(s, "ib/mlx5_2/1", ObsKind::kIbSymbolError)->value, 7);
  EXPECT_EQ(*FindObs(s, "ib/mlx5_2/1", ObsKind::kIbPortState)->value, 1);
  const std::string rp = tree_->RootPortOf(gpu3);
  EXPECT_EQ(*FindObs(s, "pcie/" + rp, ObsKind::kPcieAer, "ROOTPORT_TOTAL_ERR_COR")->value, 25);
}

TEST_F(SysfsCollectorTest, CachesIdentityAndNeverReadsHwCounters) {
  SysfsCollector c = MakeCollector();
  (void)c.Collect();
  const size_t first = faulty_->reads().size();
  (void)c.Collect();
  const std::vector<std::string> second(faulty_->reads().begin() + static_cast<long>(first), faulty_->reads().end());
  for (const std::string& p : faulty_->reads()) {
    EXPECT_EQ(p.find("hw_counters"), std::string::npos) << p;
  }
  for (const std::string& p : second) {
    const std::string file = p.substr(p.rfind('/') + 1);
    EXPECT_NE(file, "class") << "identity re-read: " << p;
    EXPECT_NE(file, "vendor") << p;
    EXPECT_EQ(p.find("max_link"), std::string::npos) << p;
    EXPECT_EQ(p.find("link_layer"), std::string::npos) << p;
  }
  EXPECT_LT(second.size(), first);
  c.Rescan();
  const size_t before = faulty_->reads().size();
  (void)c.Collect();
  EXPECT_EQ(faulty_->reads().size() - before, first);
}

TEST_F(SysfsCollectorTest, AttachesRiserAndSwitchKeysFromTopology) {
  const std::string gpu0 = tree_->Bdfs("gpu").front();
  const std::string us = tree_->Find(tree_->Find(gpu0)->parent)->parent;  // the switch upstream port
  auto topo = ParseTopology(R"({"pcie_slots": [{"bdf": ")" + us + R"(", "riser": "RISER-A"}],
      "ib": [{"device": "mlx5_0", "port": 1, "switch": "leaf-1", "switch_port": "7", "cable": "C-7"}]})");
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  SysfsCollector c = MakeCollector(&*topo);
  SysfsSample s = c.Collect();
  EXPECT_EQ(FindObs(s, "pcie/" + gpu0, ObsKind::kPcieLinkWidth)->component.keys.at("riser"), "RISER-A");
  const Observation* ib = FindObs(s, "ib/mlx5_0/1", ObsKind::kIbRate);
  EXPECT_EQ(ib->component.keys.at("switch"), "leaf-1");
  EXPECT_EQ(ib->component.keys.at("switch_port"), "7");
  EXPECT_EQ(ib->component.keys.at("cable"), "C-7");
  const std::string gpu7 = tree_->Bdfs("gpu").back();  // under another switch: no riser
  EXPECT_EQ(FindObs(s, "pcie/" + gpu7, ObsKind::kPcieLinkWidth)->component.keys.count("riser"), 0u);
}

TEST_F(SysfsCollectorTest, MissingFilesAreReportedPerFile) {
  SysfsCollector c = MakeCollector();
  (void)c.Collect();
  const std::string gpu1 = tree_->Bdfs("gpu")[1];
  fs::remove(dir_ / ("sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error"));
  fs::remove(dir_.string() + tree_->Find(gpu1)->dir + "/current_link_width");
  SysfsSample s = c.Collect();
  EXPECT_TRUE(HasError(s, StatusCode::kNotFound, "mlx5_1/ports/1/counters/symbol_error"));
  EXPECT_TRUE(HasError(s, StatusCode::kNotFound, gpu1 + "/current_link_width"));
  EXPECT_EQ(FindObs(s, "pcie/" + gpu1, ObsKind::kPcieLinkWidth), nullptr);
  EXPECT_NE(FindObs(s, "pcie/" + gpu1, ObsKind::kPcieLinkSpeed), nullptr);  // the rest still comes
  EXPECT_NE(FindObs(s, "ib/mlx5_1/1", ObsKind::kIbLinkDowned), nullptr);
}

TEST_F(SysfsCollectorTest, PermissionErrorsThroughTheFsInterface) {
  SysfsCollector c = MakeCollector();
  const std::string gpu2 = tree_->Bdfs("gpu")[2];
  const std::string aer = "/sys/bus/pci/devices/" + gpu2 + "/aer_dev_correctable";
  faulty_->Fail(aer, Status(StatusCode::kPermissionDenied, aer + ": Permission denied"));
  faulty_->Fail("/sys/class/infiniband/mlx5_3/ports/1/state",
                Status(StatusCode::kPermissionDenied, "/sys/class/infiniband/mlx5_3/ports/1/state: Permission denied"));
  SysfsSample s = c.Collect();
  EXPECT_TRUE(HasError(s, StatusCode::kPermissionDenied, aer));
  EXPECT_TRUE(HasError(s, StatusCode::kPermissionDenied, "mlx5_3/ports/1/state"));
  EXPECT_EQ(FindObs(s, "pcie/" + gpu2, ObsKind::kPcieAer, "TOTAL_ERR_COR"), nullptr);
  EXPECT_NE(FindObs(s, "pcie/" + gpu2, ObsKind::kPcieAer, "TOTAL_ERR_FATAL"), nullptr);
  EXPECT_NE(FindObs(s, "ib/mlx5_3/1", ObsKind::kIbRate), nullptr);
}

TEST_F(SysfsCollectorTest, PermissionErrorsOnTheRealFilesystem) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads mode-000 files; covered through FaultInjectingFs";
  const std::string gpu2 = tree_->Bdfs("gpu")[2];
  const std::string path = dir_.string() + tree_->Find(gpu2)->dir + "/aer_dev_correctable";
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  SysfsSample s = MakeCollector().Collect();
  EXPECT_TRUE(HasError(s, StatusCode::kPermissionDenied, "aer_dev_correctable"));
}

TEST_F(SysfsCollectorTest, GarbageContentIsACorruptErrorNotACrash) {
  SysfsCollector c = MakeCollector();
  (void)c.Collect();
  const FakePcieDevice* g = tree_->Find(tree_->Bdfs("gpu")[4]);
  ASSERT_TRUE(tree_->WriteRaw(g->dir + "/aer_dev_correctable", "RxErr lots\n\xff\xfe").ok());
  ASSERT_TRUE(tree_->WriteRaw(g->dir + "/current_link_speed", "warp 9\n").ok());
  ASSERT_TRUE(tree_->WriteRaw("/sys/class/infiniband/mlx5_4/ports/1/counters/link_downed", "-3\n").ok());
  ASSERT_TRUE(tree_->WriteRaw("/sys/class/infiniband/mlx5_4/ports/1/rate", std::string(5000, 'x')).ok());
  ASSERT_TRUE(tree_->WriteRaw("/sys/class/infiniband/mlx5_5/ports/1/state", "").ok());
  SysfsSample s = c.Collect();
  EXPECT_TRUE(HasError(s, StatusCode::kCorrupt, g->bdf + "/aer_dev_correctable"));
  EXPECT_TRUE(HasError(s, StatusCode::kCorrupt, g->bdf + "/current_link_speed"));
  EXPECT_TRUE(HasError(s, StatusCode::kCorrupt, "mlx5_4/ports/1/counters/link_downed"));
  EXPECT_TRUE(HasError(s, StatusCode::kCorrupt, "mlx5_4/ports/1/rate"));  // oversized
  EXPECT_TRUE(HasError(s, StatusCode::kCorrupt, "mlx5_5/ports/1/state"));
  EXPECT_NE(FindObs(s, "ib/mlx5_4/1", ObsKind::kIbSymbolError), nullptr);
}

TEST_F(SysfsCollectorTest, EmptyRootAndEscapingLinks) {
  fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  RootFs bare(empty.string());
  SysfsCollector c(bare, clock_, SysfsOptions{}, nullptr);
  SysfsSample s = c.Collect();
  EXPECT_TRUE(s.observations.empty());
  EXPECT_TRUE(HasError(s, StatusCode::kNotFound, "/sys/bus/pci/devices"));
  // A device link pointing outside the root is refused, not followed.
  fs::create_directory_symlink("/proc", dir_ / "sys/bus/pci/devices/0000:ff:00.0");
  SysfsSample s2 = MakeCollector().Collect();
  EXPECT_TRUE(HasError(s2, StatusCode::kCorrupt, "0000:ff:00.0"));
  EXPECT_FALSE(s2.observations.empty());
}

TEST_F(SysfsCollectorTest, IdentityKeysLetDetectorsCompareSiblings) {
  SysfsSample s = MakeCollector().Collect();
  const Observation* ib = FindObs(s, "ib/mlx5_0/1", ObsKind::kIbRate);
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->component.keys.at("model"), "MT4129");
  EXPECT_EQ(ib->component.keys.at("board_id"), "MT_0000000900");
  EXPECT_EQ(ib->component.keys.at("fw_ver"), "28.41.1000");
  const Observation* eth = FindObs(s, "ib/mlx5_8/1", ObsKind::kIbRate);
  ASSERT_NE(eth, nullptr);
  EXPECT_EQ(eth->component.keys.at("link_layer"), "Ethernet");
  EXPECT_EQ(eth->component.keys.at("model"), "MT4125");
  const std::string gpu0 = tree_->Bdfs("gpu").front();
  EXPECT_EQ(FindObs(s, "pcie/" + gpu0, ObsKind::kPcieLinkWidth)->component.keys.at("pci_id"), "10de:2330");
}

TEST_F(SysfsCollectorTest, ModelFallsBackToThePciIdAndGarbledIdentityIsIgnored) {
  fs::remove(dir_ / "sys/class/infiniband/mlx5_0/hca_type");
  ASSERT_TRUE(tree_->WriteRaw("/sys/class/infiniband/mlx5_1/board_id", "MT_\x01\x02 garbage\n").ok());
  ASSERT_TRUE(tree_->WriteRaw("/sys/class/infiniband/mlx5_2/fw_ver", std::string(300, 'x') + "\n").ok());
  SysfsSample s = MakeCollector().Collect();
  EXPECT_TRUE(s.errors.empty()) << s.errors.front().ToString();  // identity files are optional
  EXPECT_EQ(FindObs(s, "ib/mlx5_0/1", ObsKind::kIbRate)->component.keys.at("model"), "15b3:1021");
  EXPECT_EQ(FindObs(s, "ib/mlx5_1/1", ObsKind::kIbRate)->component.keys.count("board_id"), 0u);
  EXPECT_EQ(FindObs(s, "ib/mlx5_2/1", ObsKind::kIbRate)->component.keys.count("fw_ver"), 0u);
}

TEST_F(SysfsCollectorTest, EveryPortOfMultiPortHcas) {
  FakeSysfsOptions o;
  o.ib_hcas = 2;
  o.ib_ports_per_hca = 2;
  o.hca_type = "MT4123";
  o.ib_rate = "200 Gb/sec (4X HDR)";
  const fs::path dir = dir_.string() + "_dual";
  fs::remove_all(dir);
  auto tree = FakeSysfsTree::Create(dir.string(), o);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  RootFs root(dir.string());
  SysfsCollector c(root, clock_, SysfsOptions{"node-b"}, nullptr);
  SysfsSample s = c.Collect();
  fs::remove_all(dir);
  EXPECT_EQ(c.ib_ports().size(), 6u);  // 2 cards x 2 ports + 2 Ethernet NICs
  for (const char* id : {"ib/mlx5_0/1", "ib/mlx5_0/2", "ib/mlx5_1/1", "ib/mlx5_1/2"}) {
    const Observation* r = FindObs(s, id, ObsKind::kIbRate);
    ASSERT_NE(r, nullptr) << id;
    EXPECT_EQ(*r->value, 200);
    EXPECT_EQ(r->component.keys.at("model"), "MT4123");
  }
}

TEST_F(SysfsCollectorTest, CountersAtTheirMaximumAreMarkedSaturated) {
  struct Case {
    const char* counter;
    uint64_t value;
    bool saturated;
  };
  const Case cases[] = {{"link_downed", 255, true},
                        {"link_downed", 254, false},
                        {"symbol_error", 65535, true},
                        {"symbol_error", 255, false},  // 16-bit: 255 is an ordinary count
                        {"local_link_integrity_errors", 15, true},
                        {"port_rcv_errors", 4294967295ULL, true},
                        {"port_xmit_discards", 65535, true},
                        {"link_error_recovery", 0, false}};
  SysfsCollector c = MakeCollector();
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(k.counter) + "=" + std::to_string(k.value));
    ASSERT_TRUE(tree_->SetIbCounter("mlx5_3", k.counter, k.value).ok());
    SysfsSample s = c.Collect();
    const Observation* o = nullptr;
    for (const Observation& x : s.observations) {
      if (x.component.Id() == "ib/mlx5_3/1" && x.attrs.count("counter") && x.attrs.at("counter") == k.counter) o = &x;
    }
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(*o->value, static_cast<double>(k.value));
    EXPECT_EQ(o->attrs.count("saturated") > 0, k.saturated);
    if (k.saturated) {
      EXPECT_EQ(o->attrs.at("counter_max"), std::to_string(k.value));
    }
    ASSERT_TRUE(tree_->SetIbCounter("mlx5_3", k.counter, 0).ok());
  }
}

TEST_F(SysfsCollectorTest, NoPmaAnswerIsSkippedNotAnError) {
  SysfsCollector c = MakeCollector();
  ASSERT_TRUE(tree_->WriteRaw("/sys/class/infiniband/mlx5_6/ports/1/counters/symbol_error", "N/A (no PMA)\n").ok());
  SysfsSample s = c.Collect();
  EXPECT_TRUE(s.errors.empty()) << s.errors.front().ToString();
  EXPECT_EQ(FindObs(s, "ib/mlx5_6/1", ObsKind::kIbSymbolError), nullptr);
  EXPECT_NE(FindObs(s, "ib/mlx5_6/1", ObsKind::kIbLinkDowned), nullptr);
}

}  // namespace
}  // namespace faultline
