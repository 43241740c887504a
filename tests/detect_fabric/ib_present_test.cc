// What the InfiniBand detector says without history: a port down in the first sample,
// a port slower than its siblings, a counter pegged at its maximum; and how the agent's
// persistence rule takes over later.
#include <gtest/gtest.h>

#include "engine/detect/fabric_ib.h"
#include "fabric_test_util.h"

namespace faultline {
namespace {

using namespace testing_fabric;  // NOLINT(build/namespaces)

// A port as the sysfs collector names it, with the identity keys siblings are compared by.
ComponentRef Port(const std::string& dev, int port, const std::string& model = "MT4129",
                  const std::string& link_layer = "InfiniBand", const std::string& board = "MT_0000000900",
                  const std::string& fw = "28.41.1000") {
  ComponentRef r = IbRef(dev, std::to_string(port));
  r.keys = {{"device", dev},
            {"port", std::to_string(port)},
            {"link_layer", link_layer},
            {"model", model},
            {"board_id", board},
            {"fw_ver", fw}};
  return r;
}

struct PortStateText {
  int state;
  const char* name;
  int phys;
  const char* phys_name;
};

Observation StateObs(const ComponentRef& ref, PortStateText s, int64_t t) {
  return Obs(ref, ObsKind::kIbPortState, s.state, t,
             {{"state", s.name}, {"phys_state", s.phys_name}, {"phys_state_num", std::to_string(s.phys)}});
}

constexpr PortStateText kActive{4, "ACTIVE", 5, "LinkUp"};
constexpr PortStateText kPolling{1, "DOWN", 2, "Polling"};
constexpr PortStateText kDisabled{1, "DOWN", 3, "Disabled"};
constexpr PortStateText kInitLinkUp{2, "INIT", 5, "LinkUp"};

class FabricDetectIbPresent : public ::testing::Test {
 protected:
  // `n` single-port HCAs of one model, all ACTIVE at `rate`, in one sample at `t`.
  void Healthy(IbFabricDetector& d, int n, double rate, int64_t t, const std::string& model = "MT4129") {
    for (int i = 0; i < n; ++i) {
      const ComponentRef ref = Port("mlx5_" + std::to_string(i), 1, model);
      d.Observe(StateObs(ref, kActive, t));
      d.Observe(Obs(ref, ObsKind::kIbRate, rate, t));
    }
  }
  static std::vector<Finding> Of(const std::vector<Finding>& fs, FaultClass cls) {
    std::vector<Finding> out;
    for (const Finding& f : fs) {
      if (f.fault_class == cls) out.push_back(f);
    }
    return out;
  }
  FabricOptions opt_;
};

TEST_F(FabricDetectIbPresent, EveryNotActiveStateIsReportedNowWhenTheTopologyListsThePort) {
  Topology topo;
  topo.ib_ports.push_back(TopoIbPort{"mlx5_3", 1, "leaf-1", "9", "CBL-9", 0});
  for (PortStateText s : {kPolling, kDisabled, kInitLinkUp}) {
    SCOPED_TRACE(std::string(s.name) + "/" + s.phys_name);
    IbFabricDetector det(opt_, &topo);
    det.Observe(StateObs(Port("mlx5_3", 1), s, kT0));
    auto fs = det.Findings();
    ASSERT_EQ(fs.size(), 1u);
    EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
    EXPECT_EQ(fs[0].severity, Severity::kWarning);  // not yet critical: the duration is unknown
    EXPECT_EQ(Attr(fs[0], "since"), "unknown");
    EXPECT_EQ(Attr(fs[0], "mode"), "down");
    EXPECT_LE(fs[0].confidence, 0.6);
    EXPECT_EQ(Attr(fs[0], "cable"), "CBL-9");
    EXPECT_NE(fs[0].summary.find("since unknown"), std::string::npos) << fs[0].summary;
    EXPECT_NE(fs[0].summary.find(s.phys_name), std::string::npos) << fs[0].summary;
    EXPECT_EQ(fs[0].evidence.size(), 1u);
  }
}

TEST_F(FabricDetectIbPresent, InitWithLinkUpPointsAtTheSubnetManager) {
  Topology topo;
  topo.ib_ports.push_back(TopoIbPort{"mlx5_0", 1, "", "", "", 0});
  IbFabricDetector det(opt_, &topo);
  det.Observe(StateObs(Port("mlx5_0", 1), kInitLinkUp, kT0));
  auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].summary.find("subnet manager"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricDetectIbPresent, ActiveSiblingsAreEvidenceWithoutATopology) {
  IbFabricDetector det(opt_, nullptr);
  Healthy(det, 7, 400, kT0);
  det.Observe(StateObs(Port("mlx5_7", 1), kPolling, kT0));
  auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_7/1");
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_EQ(fs[0].action, Action::kReseatOrReplaceLink);
  EXPECT_LE(fs[0].confidence, 0.5);
  EXPECT_NE(fs[0].summary.find("7 of 7 sibling ports"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricDetectIbPresent, PersistenceUpgradesTheFirstSampleFindingInTheAgent) {
  IbFabricDetector det(opt_, nullptr);
  for (int64_t t : {kT0, kT0 + 60 * kSec, kT0 + 180 * kSec}) {
    Healthy(det, 3, 400, t);
    det.Observe(StateObs(Port("mlx5_3", 1), kPolling, t));
    auto fs = det.Findings();
    ASSERT_EQ(fs.size(), 1u);
    EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
    if (t < kT0 + opt_.ib_down_after_ns) {
      EXPECT_EQ(fs[0].severity, Severity::kWarning);
      EXPECT_EQ(Attr(fs[0], "since"), "unknown");
    } else {
      EXPECT_EQ(fs[0].severity, Severity::kCritical);
      EXPECT_EQ(Attr(fs[0], "since"), "");
      EXPECT_GT(fs[0].confidence, 0.5);
      EXPECT_NE(fs[0].summary.find("at least 3 min"), std::string::npos) << fs[0].summary;
    }
  }
  // Back up: nothing new is said about the present (the drop stays on record).
  Healthy(det, 4, 400, kT0 + 240 * kSec);
  for (const Finding& f : det.Findings()) EXPECT_NE(Attr(f, "since"), "unknown");
}

TEST_F(FabricDetectIbPresent, AGoingDownAfterBeingUpStillWaitsForThePersistenceRule) {
  IbFabricDetector det(opt_, nullptr);
  Healthy(det, 4, 400, kT0);
  det.Observe(StateObs(Port("mlx5_2", 1), kPolling, kT0 + 10 * kSec));  // a blip, maybe
  // A link down from this sample on, but only a watched note until it persists.
  auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_EQ(fs[0].action, Action::kMonitor);
  EXPECT_NE(Attr(fs[0], "since"), "unknown");
}

TEST_F(FabricDetectIbPresent, EthernetPortsAreNotHeldToInfiniBandRules) {
  IbFabricDetector det(opt_, nullptr);
  Healthy(det, 4, 400, kT0);
  // Two RoCE ports of another model: one administratively down, one at 100 GbE.
  const ComponentRef eth0 = Port("mlx5_8", 1, "MT4125", "Ethernet");
  const ComponentRef eth1 = Port("mlx5_9", 1, "MT4125", "Ethernet");
  det.Observe(StateObs(eth0, kDisabled, kT0));
  det.Observe(StateObs(eth1, kActive, kT0));
  det.Observe(Obs(eth1, ObsKind::kIbRate, 100, kT0));
  EXPECT_TRUE(det.Findings().empty());
  // Not even with a node-wide expected InfiniBand rate.
  FabricOptions with_rate = opt_;
  with_rate.expected_ib_rate_gbps = 400;
  IbFabricDetector det2(with_rate, nullptr);
  det2.Observe(StateObs(eth1, kActive, kT0));
  det2.Observe(Obs(eth1, ObsKind::kIbRate, 100, kT0));
  EXPECT_TRUE(det2.Findings().empty());
}

TEST_F(FabricDetectIbPresent, AListedEthernetPortDownIsReported) {
  Topology topo;
  topo.ib_ports.push_back(TopoIbPort{"mlx5_8", 1, "", "", "", 100});
  IbFabricDetector det(opt_, &topo);
  det.Observe(StateObs(Port("mlx5_8", 1, "MT4125", "Ethernet"), kDisabled, kT0));
  ASSERT_EQ(det.Findings().size(), 1u);
}

TEST_F(FabricDetectIbPresent, APortSlowerThanItsSiblingsIsDowntrainedWithoutATopology) {
  IbFabricDetector det(opt_, nullptr);
  Healthy(det, 7, 400, kT0);
  const ComponentRef slow = Port("mlx5_7", 1);
  det.Observe(StateObs(slow, kActive, kT0));
  det.Observe(Obs(slow, ObsKind::kIbRate, 200, kT0));
  auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_7/1");
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_EQ(Attr(fs[0], "rate_gbps"), "200");
  EXPECT_EQ(Attr(fs[0], "expected_gbps"), "400");
  EXPECT_EQ(Attr(fs[0], "expected_from"), "siblings");
  EXPECT_NE(fs[0].summary.find("7 of 8 active ports of this model (MT4129)"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricDetectIbPresent, DualPortHcasCompareEveryPort) {
  // 4 dual-port HDR cards (MT4123): 7 ports at 200, port 2 of the third card at 100.
  IbFabricDetector det(opt_, nullptr);
  for (int card = 0; card < 4; ++card) {
    for (int port = 1; port <= 2; ++port) {
      const ComponentRef ref = Port("mlx5_" + std::to_string(card), port, "MT4123", "InfiniBand", "MT_0000000920");
      det.Observe(StateObs(ref, kActive, kT0));
      det.Observe(Obs(ref, ObsKind::kIbRate, card == 2 && port == 2 ? 100 : 200, kT0));
    }
  }
  auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_2/2");
  EXPECT_EQ(Attr(fs[0], "expected_gbps"), "200");
}

TEST_F(FabricDetectIbPresent, NoMajorityOrDifferentModelsAreNotCompared) {
  // A dual-port card split across a 400 and a 200 Gb/s network: no majority.
  IbFabricDetector split(opt_, nullptr);
  for (int port = 1; port <= 2; ++port) {
    split.Observe(StateObs(Port("mlx5_0", port), kActive, kT0));
    split.Observe(Obs(Port("mlx5_0", port), ObsKind::kIbRate, port == 1 ? 400 : 200, kT0));
  }
  EXPECT_TRUE(split.Findings().empty());
  // Half and half: two networks, not a fault.
  IbFabricDetector halves(opt_, nullptr);
  for (int i = 0; i < 8; ++i) {
    const ComponentRef ref = Port("mlx5_" + std::to_string(i), 1);
    halves.Observe(StateObs(ref, kActive, kT0));
    halves.Observe(Obs(ref, ObsKind::kIbRate, i < 4 ? 400 : 200, kT0));
  }
  EXPECT_TRUE(halves.Findings().empty());
  // Compute HCAs (CX-7 at 400) and storage HCAs (CX-6 at 200) are different models.
  IbFabricDetector models(opt_, nullptr);
  Healthy(models, 6, 400, kT0);
  for (int i = 6; i < 8; ++i) {
    const ComponentRef ref = Port("mlx5_" + std::to_string(i), 1, "MT4123");
    models.Observe(StateObs(ref, kActive, kT0));
    models.Observe(Obs(ref, ObsKind::kIbRate, 200, kT0));
  }
  EXPECT_TRUE(models.Findings().empty());
  // No model known (no hca_type, no PCI id): nothing to compare against.
  IbFabricDetector anonymous(opt_, nullptr);
  for (int i = 0; i < 8; ++i) {
    ComponentRef ref = IbRef("mlx5_" + std::to_string(i), "1");
    anonymous.Observe(Obs(ref, ObsKind::kIbRate, i == 0 ? 200 : 400, kT0));
  }
  EXPECT_TRUE(anonymous.Findings().empty());
}

TEST_F(FabricDetectIbPresent, FirmwareDifferenceIsNamed) {
  IbFabricDetector det(opt_, nullptr);
  Healthy(det, 5, 400, kT0);
  const ComponentRef old_fw = Port("mlx5_5", 1, "MT4129", "InfiniBand", "MT_0000000900", "28.33.0800");
  det.Observe(StateObs(old_fw, kActive, kT0));
  det.Observe(Obs(old_fw, ObsKind::kIbRate, 200, kT0));
  auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].summary.find("firmware 28.33.0800, theirs 28.41.1000"), std::string::npos) << fs[0].summary;
}

TEST_F(FabricDetectIbPresent, AnExplicitExpectedRateWinsOverSiblings) {
  Topology topo;
  topo.ib_ports.push_back(TopoIbPort{"mlx5_7", 1, "", "", "", 200});  // meant to run at 200
  IbFabricDetector det(opt_, &topo);
  Healthy(det, 7, 400, kT0);
  det.Observe(StateObs(Port("mlx5_7", 1), kActive, kT0));
  det.Observe(Obs(Port("mlx5_7", 1), ObsKind::kIbRate, 200, kT0));
  EXPECT_TRUE(det.Findings().empty());
}

Observation Counter(const ComponentRef& ref, ObsKind kind, const std::string& name, double v, int64_t t,
                    bool saturated) {
  std::map<std::string, std::string> attrs{{"counter", name}};
  if (saturated) attrs["saturated"] = "true", attrs["counter_max"] = std::to_string(static_cast<uint64_t>(v));
  return Obs(ref, kind, v, t, attrs);
}

TEST_F(FabricDetectIbPresent, APeggedCounterMeansRateUnknownNeverZero) {
  struct Case {
    ObsKind kind;
    const char* name;
    double max;
    Severity severity;
  };
  const Case cases[] = {{ObsKind::kIbLinkDowned, "link_downed", 255, Severity::kWarning},
                        {ObsKind::kIbSymbolError, "symbol_error", 65535, Severity::kWarning},
                        {ObsKind::kIbRcvError, "port_rcv_errors", 4294967295.0, Severity::kWarning},
                        {ObsKind::kIbLinkIntegrity, "local_link_integrity_errors", 15, Severity::kWarning},
                        {ObsKind::kIbXmitDiscards, "port_xmit_discards", 65535, Severity::kInfo}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    IbFabricDetector det(opt_, nullptr);
    const ComponentRef ref = Port("mlx5_1", 1);
    for (int i = 0; i < 3; ++i) det.Observe(Counter(ref, c.kind, c.name, c.max, kT0 + i * 60 * kSec, true));
    auto fs = det.Findings();
    ASSERT_EQ(fs.size(), 1u);
    EXPECT_EQ(Attr(fs[0], "mode"), "counter_saturated");
    EXPECT_EQ(Attr(fs[0], "counter"), c.name);
    EXPECT_EQ(Attr(fs[0], "rate"), "unknown");
    EXPECT_EQ(fs[0].severity, c.severity);
    EXPECT_EQ(fs[0].action, Action::kMonitor);
    EXPECT_NE(fs[0].summary.find("unknown"), std::string::npos);
    EXPECT_EQ(fs[0].summary.find("0/min"), std::string::npos) << fs[0].summary;
    if (c.kind == ObsKind::kIbLinkDowned) {
      EXPECT_NE(fs[0].summary.find("at least 255 times"), std::string::npos) << fs[0].summary;
    }
    // Counters cleared: a new baseline, no negative rate, nothing pegged any more.
    det.Observe(Counter(ref, c.kind, c.name, 0, kT0 + 240 * kSec, false));
    det.Observe(Counter(ref, c.kind, c.name, 0, kT0 + 300 * kSec, false));
    EXPECT_TRUE(det.Findings().empty());
  }
}

TEST_F(FabricDetectIbPresent, ReachingThePegIsStillALowerBoundRate) {
  IbFabricDetector det(opt_, nullptr);
  const ComponentRef ref = Port("mlx5_4", 1);
  det.Observe(Counter(ref, ObsKind::kIbSymbolError, "symbol_error", 65000, kT0, false));
  det.Observe(Counter(ref, ObsKind::kIbSymbolError, "symbol_error", 65535, kT0 + 60 * kSec, true));
  auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 2u);
  bool rate = false, pegged = false;
  for (const Finding& f : fs) {
    pegged = pegged || Attr(f, "mode") == "counter_saturated";
    if (f.summary.find("symbol errors 535/min") != std::string::npos) {
      rate = true;
      EXPECT_NE(f.summary.find("at least"), std::string::npos) << f.summary;
    }
  }
  EXPECT_TRUE(rate);
  EXPECT_TRUE(pegged);
}

}  // namespace
}  // namespace faultline
