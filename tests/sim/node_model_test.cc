// The node model's physics and events: what each fault does to the node, and what it
// must not do (a redundant PSU loss brakes nothing; a buggy program is one process).
#include "sim/node/node_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace faultline::sim {
namespace {

NodeScenario Scenario(std::vector<NodeFault> faults, NodeSpec node = {}) {
  NodeScenario sc;
  sc.name = "t";
  sc.node = node;
  sc.noise = NoiseSpec{0, 0, 0, 0, 0};  // deterministic physics; noise has its own test
  sc.faults = std::move(faults);
  return sc;
}

NodeFault Fault(NodeFaultKind kind, double at) {
  NodeFault f;
  f.kind = kind;
  f.at = at;
  return f;
}

double MeanStep(NodeModel& m) {
  auto steps = m.TakeSteps();
  if (steps.empty()) return 0;
  double sum = 0;
  for (const auto& s : steps) sum += s.step_time_s;
  return sum / static_cast<double>(steps.size());
}

TEST(NodeModel, HealthyNodeRunsAtNominalClocksAndStepTime) {
  NodeModel m(Scenario({}), DefaultNodeLayout(8));
  m.AdvanceTo(60);
  EXPECT_FALSE(m.state().power_brake);
  EXPECT_GT(m.state().capacity_w, m.state().load_w);
  for (const SimGpu& g : m.state().gpus) {
    EXPECT_EQ(g.reasons, 0u);
    EXPECT_EQ(g.clock_sm, 1980);
    EXPECT_LT(g.temp_gpu, 87);
  }
  EXPECT_NEAR(MeanStep(m), 1.0, 1e-9);
}

TEST(NodeModel, OnePsuLostWithRedundancyBrakesNothing) {
  NodeFault f = Fault(NodeFaultKind::kPsuFail, 10);
  f.psu = 3;
  NodeModel m(Scenario({f}), DefaultNodeLayout(8));
  m.AdvanceTo(60);
  EXPECT_EQ(m.state().psus[2].state, "UnavailableOffline");
  EXPECT_FALSE(m.state().power_brake);
  for (const SimGpu& g : m.state().gpus) EXPECT_EQ(g.reasons & 0x80, 0u);
  auto sel = m.TakeSel();
  ASSERT_EQ(sel.size(), 1u);
  EXPECT_EQ(sel[0].message_id, "Power.1.0.PowerSupplyFailed");
  EXPECT_NE(sel[0].origin.find("/PowerSupplies/PSU3"), std::string::npos);
}

TEST(NodeModel, LosingAFeedBelowTheLoadBrakesEveryGpuAndSlowsTheJob) {
  NodeFault f = Fault(NodeFaultKind::kFeedLoss, 30);
  f.psus = {1, 2, 3};
  NodeModel m(Scenario({f}), DefaultNodeLayout(8));
  m.AdvanceTo(29);
  const double before = MeanStep(m);
  m.AdvanceTo(120);
  (void)m.TakeSteps();
  m.AdvanceTo(180);
  const double after = MeanStep(m);
  EXPECT_TRUE(m.state().power_brake);
  EXPECT_LT(m.state().capacity_w, m.state().load_w);
  for (const SimGpu& g : m.state().gpus) {
    EXPECT_EQ(g.reasons & 0x80, 0x80u);  // HW_POWER_BRAKE
    EXPECT_EQ(g.clock_sm, 990);
  }
  EXPECT_NEAR(after / before, 2.0, 0.01);
  auto sel = m.TakeSel();
  EXPECT_TRUE(std::any_of(sel.begin(), sel.end(),
                          [](const SimSel& s) { return s.message_id == "Power.1.0.PowerCapacityExceeded"; }));
}

TEST(NodeModel, HotInletAirDrivesGpusIntoThermalSlowdown) {
  NodeFault f = Fault(NodeFaultKind::kInletHigh, 10);
  f.value = 47;
  f.ramp_s = 100;
  NodeModel m(Scenario({f}), DefaultNodeLayout(8));
  m.AdvanceTo(50);
  EXPECT_EQ(m.state().gpus[0].reasons & 0x40, 0u);  // half way: warm, not throttling
  m.AdvanceTo(200);
  EXPECT_NEAR(m.state().inlet_c, 47, 1e-9);
  EXPECT_EQ(m.state().gpus[0].reasons & 0x40, 0x40u);  // HW_THERMAL
  EXPECT_LT(m.state().gpus[0].clock_sm, 1980);
}

TEST(NodeModel, DbeRemapsARowAndKillsTheJob) {
  NodeFault f = Fault(NodeFaultKind::kDbe, 10);
  f.gpu = 3;
  NodeModel m(Scenario({f}), DefaultNodeLayout(8));
  m.AdvanceTo(20);
  const SimGpu& g = m.state().gpus[3];
  EXPECT_EQ(g.dbe_volatile, 1u);
  EXPECT_TRUE(g.remap_pending);
  EXPECT_FALSE(m.state().job_running);
  auto lines = m.TakeKmsg();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].text.find("): 48, "), std::string::npos);
  EXPECT_NE(lines[1].text.find("): 63, "), std::string::npos);
  EXPECT_NE(lines[0].text.find("PCI:" + DefaultNodeLayout(8).gpu_bdfs[3].substr(0, 10)), std::string::npos);
}

// A fault injected while the model runs (bench agent-rest's GPU losses) begins at the
// moment it is injected, never in the past, and before a scenario fault due later.
TEST(NodeModel, AnInjectedFaultBeginsNowAndKeepsTheScenarioInOrder) {
  NodeFault later = Fault(NodeFaultKind::kDbe, 30);
  later.gpu = 1;
  NodeModel m(Scenario({later}), DefaultNodeLayout(8));
  m.AdvanceTo(10);
  NodeFault lost = Fault(NodeFaultKind::kFallOffBus, 2);  // asked for the past: starts now
  lost.gpu = 5;
  m.Inject(lost);
  EXPECT_FALSE(m.state().gpus[5].lost);
  m.AdvanceTo(11);
  EXPECT_TRUE(m.state().gpus[5].lost);
  auto lines = m.TakeKmsg();
  ASSERT_FALSE(lines.empty());
  EXPECT_GE(lines.front().t, 10.0);
  EXPECT_EQ(m.state().gpus[1].dbe_volatile, 0u);
  m.AdvanceTo(31);
  EXPECT_EQ(m.state().gpus[1].dbe_volatile, 1u);  // the scenario's own fault still comes
}

TEST(NodeModel, AUserXidStormIsOneProcess) {
  NodeFault f = Fault(NodeFaultKind::kUserXid, 5);
  f.gpu = 1;
  f.count = 10;
  f.every_s = 1;
  NodeModel m(Scenario({f}), DefaultNodeLayout(8));
  m.AdvanceTo(6);
  auto lines = m.TakeKmsg();
  ASSERT_EQ(lines.size(), 10u);  // the whole storm is scheduled; its times run ahead
  std::string pid;
  for (const SimKmsg& k : lines) {
    const size_t p = k.text.find("pid=");
    ASSERT_NE(p, std::string::npos);
    const std::string this_pid = k.text.substr(p, k.text.find(',', p) - p);
    if (pid.empty()) pid = this_pid;
    EXPECT_EQ(this_pid, pid);
  }
  EXPECT_DOUBLE_EQ(lines.back().t, 14);
  EXPECT_TRUE(m.state().job_running);  // someone else's program: the training job carries on
}

TEST(NodeModel, DowntrainedLinkSlowsStepsWithoutAnyLogLine) {
  NodeFault f = Fault(NodeFaultKind::kPcieDowntrain, 10);
  f.gpu = 2;
  f.width = 8;
  NodeModel m(Scenario({f}), DefaultNodeLayout(8));
  m.AdvanceTo(9);
  const double before = MeanStep(m);
  m.AdvanceTo(100);
  const double after = MeanStep(m);
  EXPECT_EQ(m.state().gpu_pcie[2].width, 8);
  EXPECT_EQ(m.state().gpus[2].pcie_width, 8);
  EXPECT_GT(after, before * 1.2);
  EXPECT_TRUE(m.TakeKmsg().empty());
  EXPECT_TRUE(m.TakeSel().empty());
}

TEST(NodeModel, AReplayStormIsLoggedAtBothEndsOfTheLinkBackgroundAerOnlyAtTheDevice) {
  NodeFault f = Fault(NodeFaultKind::kPcieReplay, 10);
  f.gpu = 6;
  f.value = 120;  // per minute
  NodeScenario sc = Scenario({f});
  sc.noise.aer_corrected_per_hour = 3600;  // ~1/s of background on random GPUs
  NodeModel m(sc, DefaultNodeLayout(8));
  m.AdvanceTo(70);
  const SimPcieLink& bad = m.state().gpu_pcie[6];
  EXPECT_GE(bad.port_aer_corrected, 110u);  // 2/s for 60 s
  EXPECT_GE(bad.aer_corrected, bad.port_aer_corrected);
  EXPECT_EQ(m.state().gpus[6].pcie_replay, bad.port_aer_corrected);
  uint64_t background = 0;
  for (size_t i = 0; i < 8; ++i) {
    if (i == 6) continue;
    background += m.state().gpu_pcie[i].aer_corrected;
    EXPECT_EQ(m.state().gpu_pcie[i].port_aer_corrected, 0u);
  }
  EXPECT_GT(background, 0u);
}

TEST(NodeModel, DriverMismatchStopsNvmlAndTheJob) {
  NodeModel m(Scenario({Fault(NodeFaultKind::kDriverMismatch, 5)}), DefaultNodeLayout(8));
  m.AdvanceTo(4);
  EXPECT_FALSE(m.state().nvml_init_fails);
  m.AdvanceTo(6);
  EXPECT_TRUE(m.state().nvml_init_fails);
  EXPECT_FALSE(m.state().job_running);
}

TEST(NodeModel, SameSeedSameNoise) {
  NodeScenario sc = Scenario({});
  sc.noise = NoiseSpec{};
  sc.noise.sbe_per_gpu_hour = 500;
  sc.noise.aer_corrected_per_hour = 500;
  NodeModel a(sc, DefaultNodeLayout(8));
  NodeModel b(sc, DefaultNodeLayout(8));
  a.AdvanceTo(600);
  b.AdvanceTo(600);
  uint64_t sbe = 0;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(a.state().gpus[i].sbe_volatile, b.state().gpus[i].sbe_volatile);
    EXPECT_EQ(a.state().gpu_pcie[i].aer_corrected, b.state().gpu_pcie[i].aer_corrected);
    sbe += a.state().gpus[i].sbe_volatile;
  }
  EXPECT_GT(sbe, 0u);  // 500/h/GPU for 10 minutes: some, surely
  sc.seed = 2;
  NodeModel c(sc, DefaultNodeLayout(8));
  c.AdvanceTo(600);
  uint64_t differ = 0;
  for (size_t i = 0; i < 8; ++i) differ += a.state().gpus[i].sbe_volatile != c.state().gpus[i].sbe_volatile;
  EXPECT_GT(differ, 0u);
}

}  // namespace
}  // namespace faultline::sim
