// Fleet scenario files: the documented format parses into a resolved topology, jobs,
// faults and truth; every kind of bad input is refused with an error naming the place.
#include "sim/fleet/fleet_scenario.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

namespace faultline::sim {
namespace {

constexpr const char* kGood = R"(
name: two-racks
description: a small fleet
duration_s: 500
seed: 4
node: {gpus: 4}
agent: {step_report_s: 2, batch_s: 3}
fleet:
  site: lab
  racks: 2
  nodes_per_rack: 4
  racks_per_loop: 2
  hcas: 2
  cables:
    - {id: X-1, a: {node: r01-n01, device: mlx5_3}, b: {node: r02-n04, device: mlx5_3, port: 1}}
    - {id: U-1, a: {node: r01-n02}, b: {switch: spine-1, switch_port: "7"}}
jobs:
  - {name: a, first: 0, count: 4, step_s: 1.5, checkpoint_every: 50}
  - {name: b, racks: [r02], end_s: 400}
faults:
  - {at: 200, fault: pdu_sag, pdu: r02-pdu-b, value: 150, ramp_s: 10}
  - {at: 100.5, fault: straggler_gpu, node: r01-n03, gpu: 2, value: 20}
  - {at: 150, fault: driver_rollout, driver: "560.1", nodes: [r02-n02, r02-n01], every_s: 5}
truth:
  causes:
    - {cause: pdu, component: pdu/r02-pdu-b, nodes: [r02-n04, r02-n03], start_s: 203.5}
  stragglers:
    - {node: r01-n03, gpu: 2, job: a, start_s: 100.5}
)";

TEST(FleetScenarioParse, GeneratesTheFleetAndResolvesEveryReference) {
  auto sc = ParseFleetScenario(kGood);
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->name, "two-racks");
  EXPECT_EQ(sc->node.gpus, 4);
  EXPECT_EQ(sc->agent.step_report_s, 2);
  EXPECT_EQ(sc->agent.gpu_sample_s, 10);  // default kept
  const auto& t = sc->topology;
  EXPECT_EQ(t.site, "lab");
  ASSERT_EQ(t.nodes.size(), 8u);
  EXPECT_EQ(t.nodes[0].name, "r01-n01");
  EXPECT_EQ(t.nodes[0].pdu, "r01-pdu-a");
  EXPECT_EQ(t.nodes[3].pdu, "r01-pdu-b");  // second half of the rack
  EXPECT_EQ(t.nodes[3].feed, "feed-b");
  EXPECT_EQ(t.nodes[7].cooling_loop, "loop-01");  // two racks per loop
  EXPECT_EQ(t.nodes[7].leaf_switch, "leaf-02");
  // 8 nodes x 2 HCAs to the leaves + the two explicit cables.
  ASSERT_EQ(t.cables.size(), 18u);
  EXPECT_EQ(t.cables[0].id, "C-r01-n01-0");
  EXPECT_EQ(t.cables[0].b.switch_name, "leaf-01");
  EXPECT_EQ(t.cables[16].a.device, "mlx5_3");
  EXPECT_EQ(t.cables[17].b.switch_name, "spine-1");
  EXPECT_EQ(t.cables[17].b.switch_port, "7");
  EXPECT_EQ(t.cables[17].a.device, "mlx5_0");  // a node end's default
  ASSERT_EQ(sc->jobs.size(), 2u);
  EXPECT_EQ(sc->jobs[0].nodes, (std::vector<std::string>{"r01-n01", "r01-n02", "r01-n03", "r01-n04"}));
  EXPECT_EQ(sc->jobs[1].nodes.size(), 4u);
  ASSERT_TRUE(sc->jobs[1].end_s);
  EXPECT_EQ(*sc->jobs[1].end_s, 400);
  ASSERT_EQ(sc->faults.size(), 3u);  // sorted by time
  EXPECT_EQ(sc->faults[0].kind, FleetFaultKind::kStragglerGpu);
  EXPECT_EQ(sc->faults[0].node_class, FaultClass::kGpuThermal);  // the kind's default
  EXPECT_EQ(sc->faults[1].kind, FleetFaultKind::kDriverRollout);
  EXPECT_EQ(sc->faults[1].nodes, (std::vector<std::string>{"r02-n02", "r02-n01"}));  // rollout order kept
  EXPECT_EQ(sc->faults[2].target, "r02-pdu-b");
  // The topology shows the fleet after the roll-out; the initial versions are kept apart.
  EXPECT_EQ(t.nodes[4].driver, "560.1");
  EXPECT_EQ(t.nodes[5].driver, "560.1");
  EXPECT_EQ(t.nodes[6].driver, "550.54.15");
  EXPECT_EQ(sc->initial_driver.at(4), "550.54.15");
  ASSERT_EQ(sc->truth.causes.size(), 1u);
  EXPECT_EQ(sc->truth.causes[0].nodes, (std::vector<std::string>{"r02-n03", "r02-n04"}));  // sorted
  ASSERT_EQ(sc->truth.stragglers.size(), 1u);
  EXPECT_EQ(sc->truth.stragglers[0].gpu, 2);
}

TEST(FleetScenarioParse, TopologyFileRoundTrips) {
  auto sc = ParseFleetScenario(kGood);
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  auto back = fleet::ParseFleetTopology(FleetTopologyJson(sc->topology));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->site, "lab");
  ASSERT_EQ(back->nodes.size(), sc->topology.nodes.size());
  for (size_t i = 0; i < back->nodes.size(); ++i) {
    const auto& a = back->nodes[i];
    const auto& b = sc->topology.nodes[i];
    EXPECT_EQ(std::tie(a.name, a.rack, a.pdu, a.feed, a.cooling_loop, a.leaf_switch, a.driver),
              std::tie(b.name, b.rack, b.pdu, b.feed, b.cooling_loop, b.leaf_switch, b.driver));
  }
  ASSERT_EQ(back->cables.size(), sc->topology.cables.size());
  for (size_t i = 0; i < back->cables.size(); ++i) {
    const auto& a = back->cables[i];
    const auto& b = sc->topology.cables[i];
    EXPECT_EQ(std::tie(a.id, a.a.node, a.a.device, a.a.port, a.b.switch_name, a.b.switch_port),
              std::tie(b.id, b.a.node, b.a.device, b.a.port, b.b.switch_name, b.b.switch_port));
  }
}

TEST(FleetScenarioParse, ExplicitNodesAndJson) {
  auto sc = ParseFleetScenario(R"({"name": "x", "fleet": {"driver": "535.1", "nodes": [
      {"name": "a", "rack": "R1", "pdu": "P1", "cooling_loop": "L1", "leaf_switch": "S1"},
      {"name": "b", "rack": "R1", "pdu": "P1", "driver": "550.2"}]},
      "faults": [{"at": 5, "fault": "pdu_sag", "pdu": "P1", "value": 120, "node_class": "power_insufficient"}],
      "truth": {}})");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->topology.nodes.size(), 2u);
  EXPECT_EQ(sc->topology.nodes[0].driver, "535.1");
  EXPECT_EQ(sc->topology.nodes[1].driver, "550.2");
  EXPECT_TRUE(sc->topology.cables.empty());  // no generated cables for a given list
  EXPECT_EQ(sc->faults.at(0).node_class, FaultClass::kPowerInsufficient);
}

// Each bad input and the place its error must name.
struct BadCase {
  const char* what;
  std::string text;
  const char* expect;
};

std::string With(const std::string& fleet, const std::string& rest) {
  return "name: bad\nfleet: " + fleet + "\n" + rest + "\ntruth: {}\n";
}

TEST(FleetScenarioParse, RefusesBadInputNamingThePlace) {
  const std::string f = "{racks: 2, nodes_per_rack: 4}";
  const std::vector<BadCase> cases = {
      {"unknown top key", "name: x\nfleet: {}\ntruth: {}\nnodez: 3\n", "unknown key 'nodez'"},
      {"no fleet", "name: x\ntruth: {}\n", "scenario.fleet: required"},
      {"no truth", "name: x\nfleet: {}\n", "scenario.truth: required"},
      {"bad name", "name: ../x\nfleet: {}\ntruth: {}\n", "scenario.name"},
      {"unknown fleet key", With("{rackz: 2}", ""), "fleet: unknown key 'rackz'"},
      {"racks out of range", With("{racks: 0}", ""), "fleet.racks: out of range"},
      {"shape with explicit nodes", With("{racks: 2, nodes: [{name: a}]}", ""), "fleet.racks: not with"},
      {"duplicate node", With("{nodes: [{name: a}, {name: a}]}", ""), "fleet.nodes[1].name: duplicate"},
      {"node name with a slash", With("{nodes: [{name: a/b}]}", ""), "fleet.nodes[0].name: not a plain name"},
      {"cable to a missing node", With("{racks: 1, cables: [{id: c, a: {node: zz}, b: {switch: s}}]}", ""),
       "fleet.cables[0].a.node: no such node 'zz'"},
      {"cable end both", With("{racks: 1, cables: [{id: c, a: {node: r01-n01, switch: s}, b: {switch: s}}]}", ""),
       "fleet.cables[0].a: one of 'node' or 'switch'"},
      {"switch end with a port", With("{racks: 1, cables: [{id: c, a: {node: r01-n01}, b: {switch: s, port: 3}}]}", ""),
       "fleet.cables[0].b.port: a switch end names its port with 'switch_port'"},
      {"duplicate cable", With("{racks: 1, cables: [{id: C-r01-n01-0, a: {switch: x}, b: {switch: y}}]}", ""),
       "duplicate cable"},
      {"job without nodes", With(f, "jobs: [{name: j}]"), "jobs[0]: name the nodes"},
      {"job two ways", With(f, "jobs: [{name: j, first: 0, count: 2, racks: [r01]}]"), "jobs[0]: name the nodes"},
      {"job past the fleet", With(f, "jobs: [{name: j, first: 4, count: 5}]"), "jobs[0].count: runs past"},
      {"job unknown node", With(f, "jobs: [{name: j, nodes: [r09-n01]}]"), "jobs[0].nodes[0]: no such node"},
      {"node in two jobs", With(f, "jobs: [{name: j, first: 0, count: 3}, {name: k, first: 2, count: 2}]"),
       "jobs[1].nodes: node 'r01-n03' is already in job 'j'"},
      {"job end before start", With(f, "jobs: [{name: j, first: 0, count: 2, start_s: 9, end_s: 3}]"),
       "jobs[0].end_s: not after start_s"},
      {"unknown fault kind", With(f, "faults: [{at: 1, fault: meteor}]"), "faults[0].fault: unknown fault kind"},
      {"fault without at", With(f, "faults: [{fault: node_slow, node: r01-n01, value: 2}]"), "faults[0].at: required"},
      {"missing value", With(f, "faults: [{at: 1, fault: pdu_sag, pdu: r01-pdu-a}]"), "faults[0].value: required"},
      {"missing gpu", With(f, "faults: [{at: 1, fault: straggler_gpu, node: r01-n01, value: 20}]"),
       "faults[0].gpu: required"},
      {"gpu out of range", With(f, "faults: [{at: 1, fault: straggler_gpu, node: r01-n01, gpu: 8, value: 20}]"),
       "faults[0].gpu: out of range [0, 7]"},
      {"no such PDU", With(f, "faults: [{at: 1, fault: pdu_sag, pdu: r09-pdu-a, value: 150}]"),
       "faults[0].pdu: no such PDU 'r09-pdu-a'"},
      {"no such loop", With(f, "faults: [{at: 1, fault: loop_degrade, loop: loop-09, value: 50}]"),
       "faults[0].loop: no such cooling loop"},
      {"no such cable", With(f, "faults: [{at: 1, fault: cable_errors, cable: nope, value: 5}]"),
       "faults[0].cable: no such cable"},
      {"parameter of another kind", With(f, "faults: [{at: 1, fault: pdu_sag, pdu: r01-pdu-a, value: 150, gpu: 1}]"),
       "faults[0].gpu: not a parameter of pdu_sag"},
      {"target of another kind", With(f, "faults: [{at: 1, fault: pdu_sag, pdu: r01-pdu-a, value: 150, loop: x}]"),
       "faults[0].loop: not a parameter of pdu_sag"},
      {"until before at", With(f, "faults: [{at: 9, until: 2, fault: node_slow, node: r01-n01, value: 2}]"),
       "faults[0].until: not after 'at'"},
      {"fault after the end",
       "name: x\nduration_s: 10\nfleet: " + f +
           "\nfaults: [{at: 20, fault: node_slow, node: r01-n01, value: 2}]\ntruth: {}\n",
       "faults[0].at: after the scenario's end"},
      {"unknown node class",
       With(f, "faults: [{at: 1, fault: pdu_sag, pdu: r01-pdu-a, value: 150, node_class: gremlins}]"),
       "faults[0].node_class: unknown fault class"},
      {"rollout without driver", With(f, "faults: [{at: 1, fault: driver_rollout, racks: [r01]}]"),
       "faults[0].driver: required"},
      {"value as a string", With(f, "faults: [{at: 1, fault: node_slow, node: r01-n01, value: fast}]"),
       "faults[0].value: expected a number"},
      {"truth unknown key", "name: x\nfleet: {}\ntruth: {causez: []}\n", "truth: unknown key 'causez'"},
      {"truth cause without component", "name: x\nfleet: {}\ntruth: {causes: [{cause: pdu}]}\n",
       "truth.causes[0]: exactly one of 'component' or 'components'"},
      {"truth straggler unknown node", "name: x\nfleet: {}\ntruth: {stragglers: [{node: zz, start_s: 1}]}\n",
       "truth.stragglers[0].node: no such node"},
      {"truth straggler without start", "name: x\nfleet: {}\ntruth: {stragglers: [{node: r01-n01}]}\n",
       "truth.stragglers[0].start_s: required"},
      {"not a mapping", "- just\n- a list\n", "scenario: expected a mapping"},
      {"truncated", "name: x\nfleet: {racks: 2\n", ""},
      {"too many nodes", With("{racks: 10000, nodes_per_rack: 1000}", ""), "more than 100000 nodes"},
  };
  for (const BadCase& c : cases) {
    auto sc = ParseFleetScenario(c.text);
    ASSERT_FALSE(sc.ok()) << c.what;
    EXPECT_NE(sc.status().message().find(c.expect), std::string::npos)
        << c.what << ": got '" << sc.status().message() << "'";
  }
}

TEST(FleetScenarioParse, HostileInputIsBounded) {
  // Oversized text.
  std::string big = "name: x\ndescription: \"" + std::string(kMaxFleetScenarioBytes, 'a') + "\"\n";
  auto sc = ParseFleetScenario(big);
  ASSERT_FALSE(sc.ok());
  EXPECT_EQ(sc.status().code(), StatusCode::kInvalidArgument);
  // Deep nesting.
  std::string deep = "name: x\nfleet: " + std::string(200, '[') + std::string(200, ']') + "\ntruth: {}\n";
  EXPECT_FALSE(ParseFleetScenario(deep).ok());
  // An alias bomb: expanding it would take gigabytes.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'k'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
    prev = c;
  }
  EXPECT_FALSE(ParseFleetScenario(bomb).ok());
  // Binary garbage and control bytes in names.
  EXPECT_FALSE(ParseFleetScenario(std::string("\x00\xff\x01name", 7)).ok());
  EXPECT_FALSE(ParseFleetScenario("name: x\nfleet: {nodes: [{name: \"a\\u0001\"}]}\ntruth: {}\n").ok());
}

TEST(FleetScenarioParse, EveryShippedScenarioParses) {
  const std::string dir = std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/fleet/";
  for (const char* name : {"straggler-gpu.yaml", "cable-between-nodes.yaml", "pdu-sag-rack.yaml", "leaf-switch.yaml",
                           "driver-rollout.yaml", "rack-slow-cooling-loop.yaml", "healthy-checkpoints.yaml",
                           "healthy-pauses.yaml", "straggler-amid-pauses.yaml"}) {
    auto sc = LoadFleetScenario(dir + name);
    EXPECT_TRUE(sc.ok()) << name << ": " << sc.status().ToString();
  }
  EXPECT_EQ(LoadFleetScenario(dir + "no-such-file.yaml").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace faultline::sim
