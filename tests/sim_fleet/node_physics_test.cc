// The fleet's node physics is the node simulator's: for the same conditions, NodeModel
// (ticked the way `faultline sim` ticks it) and EvaluateNodePhysics give the same clocks,
// throttle reasons, temperatures, power brake and step time.
#include "sim/fleet/node_physics.h"

#include <gtest/gtest.h>

#include "sim/node/node_model.h"

namespace faultline::sim {
namespace {

NodeScenario QuietScenario() {
  NodeScenario sc;
  sc.name = "physics";
  sc.noise = NoiseSpec{0, 0, 0, 0, 0};  // no drift, no jitter: the two models must agree exactly
  sc.workload.step_s = 1.0;
  return sc;
}

void ExpectSame(const NodeModel& model, const NodePhysics& p) {
  const NodeState& s = model.state();
  ASSERT_EQ(p.gpu_count, static_cast<int>(s.gpus.size()));
  EXPECT_EQ(p.power_brake, s.power_brake);
  EXPECT_DOUBLE_EQ(p.load_w, s.load_w);
  EXPECT_DOUBLE_EQ(p.capacity_w, s.capacity_w);
  double slowest = 1;
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    EXPECT_DOUBLE_EQ(p.gpus[i].clock_sm, s.gpus[i].clock_sm) << "gpu " << i;
    EXPECT_EQ(p.gpus[i].reasons, s.gpus[i].reasons) << "gpu " << i;
    EXPECT_NEAR(p.gpus[i].temp_gpu, s.gpus[i].temp_gpu, 1e-9) << "gpu " << i;
    EXPECT_NEAR(p.gpus[i].power_w, s.gpus[i].power_w, 1e-9) << "gpu " << i;
    slowest = std::max(slowest, 1980 / s.gpus[i].clock_sm);
  }
  EXPECT_DOUBLE_EQ(p.step_factor, slowest);
  EXPECT_NEAR(model.state().step_time_s, p.step_factor, 1e-9);  // step_s = 1, no jitter
}

TEST(NodePhysics, HealthyNodeMatchesTheNodeModel) {
  NodeModel model(QuietScenario(), DefaultNodeLayout(8));
  model.AdvanceTo(20, 0.25);
  NodeConditions c;
  const NodePhysics p = EvaluateNodePhysics(NodeSpec{}, c);
  ExpectSame(model, p);
  EXPECT_EQ(p.step_factor, 1);
}

TEST(NodePhysics, InputSagBelowTheBrakePointMatches) {
  for (double volts : {215.0, 180.0, 140.0, 80.0}) {
    NodeScenario sc = QuietScenario();
    NodeFault f;
    f.kind = NodeFaultKind::kInputSag;
    f.at = 5;
    f.psus = {1, 2, 3, 4, 5, 6};
    f.value = volts;
    sc.faults.push_back(f);
    NodeModel model(sc, DefaultNodeLayout(8));
    model.AdvanceTo(30, 0.25);
    NodeConditions c;
    c.input_v = volts;
    SCOPED_TRACE(volts);
    const NodePhysics p = EvaluateNodePhysics(sc.node, c);
    ExpectSame(model, p);
    EXPECT_EQ(p.power_brake, volts < 147);  // 6 x 3300 W x (V - 90) / 110 < 10.2 kW
  }
}

TEST(NodePhysics, HotColdPlateOnOneGpuMatches) {
  for (double hotter : {10.0, 22.0}) {
    NodeScenario sc = QuietScenario();
    NodeFault f;
    f.kind = NodeFaultKind::kGpuCooling;
    f.at = 5;
    f.gpu = 5;
    f.value = hotter;
    sc.faults.push_back(f);
    NodeModel model(sc, DefaultNodeLayout(8));
    model.AdvanceTo(30, 0.25);
    NodeConditions c;
    c.gpu_extra_c[5] = hotter;
    SCOPED_TRACE(hotter);
    const NodePhysics p = EvaluateNodePhysics(sc.node, c);
    ExpectSame(model, p);
    EXPECT_EQ(p.gpus[5].reasons != 0, hotter > 15);  // 70 C + 2 C slot offset + the extra vs 87 C
  }
}

TEST(NodePhysics, WarmCoolantSupplyMatches) {
  for (double supply : {40.0, 52.0}) {
    NodeScenario sc = QuietScenario();
    sc.node.coolant_supply_c = supply;
    NodeModel model(sc, DefaultNodeLayout(8));
    model.AdvanceTo(30, 0.25);
    NodeConditions c;
    c.coolant_supply_c = supply;
    SCOPED_TRACE(supply);
    const NodePhysics p = EvaluateNodePhysics(sc.node, c);
    ExpectSame(model, p);
    EXPECT_NEAR(p.coolant_return_c, model.state().coolant.return_c, 1e-9);
  }
}

}  // namespace
}  // namespace faultline::sim
