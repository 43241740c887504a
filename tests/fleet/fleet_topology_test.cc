#include "fleet/fleet_topology.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline::fleet {
namespace {

constexpr char kExample[] = R"({
  "site": "dc-west",
  "nodes": [
    {"name": "gpu-001", "rack": "r12", "pdu": "r12-a", "feed": "A", "cooling_loop": "loop-3",
     "leaf_switch": "leaf-07", "driver": "550.54.15"},
    {"name": "gpu-002", "site": "dc-east", "rack": 12, "pdu": "r12-b", "feed": "B"},
    {"name": "gpu-003"}
  ],
  "cables": [
    {"id": "C-0193", "a": {"node": "gpu-001", "device": "mlx5_0", "port": 1},
                     "b": {"node": "gpu-002", "device": "mlx5_0", "port": 1}},
    {"id": "C-0194", "a": {"node": "gpu-001", "device": "mlx5_1"},
                     "b": {"switch": "leaf-07", "switch_port": 17}}
  ]
})";

TEST(FleetTopologyParse, ParsesEveryField) {
  auto t = ParseFleetTopology(kExample);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->site, "dc-west");
  ASSERT_EQ(t->nodes.size(), 3u);
  const FleetNode& n = t->nodes[0];
  EXPECT_EQ(n.name, "gpu-001");
  EXPECT_EQ(n.site, "");
  EXPECT_EQ(n.rack, "r12");
  EXPECT_EQ(n.pdu, "r12-a");
  EXPECT_EQ(n.feed, "A");
  EXPECT_EQ(n.cooling_loop, "loop-3");
  EXPECT_EQ(n.leaf_switch, "leaf-07");
  EXPECT_EQ(n.driver, "550.54.15");
  EXPECT_EQ(t->nodes[1].site, "dc-east");
  EXPECT_EQ(t->nodes[1].rack, "12");  // a number accepted as a name
  ASSERT_EQ(t->cables.size(), 2u);
  EXPECT_EQ(t->cables[1].a.port, 1);  // default port
  EXPECT_EQ(t->cables[1].b.switch_name, "leaf-07");
  EXPECT_EQ(t->cables[1].b.switch_port, "17");
}

TEST(FleetTopologyParse, LookUps) {
  auto t = ParseFleetTopology(kExample);
  ASSERT_TRUE(t.ok());
  ASSERT_NE(t->FindNode("gpu-003"), nullptr);
  EXPECT_EQ(t->FindNode("gpu-004"), nullptr);
  EXPECT_EQ(t->CablesOf("gpu-001").size(), 2u);
  ASSERT_EQ(t->CablesOf("gpu-001", "mlx5_0", 1).size(), 1u);
  EXPECT_EQ(t->CablesOf("gpu-001", "mlx5_0", 1)[0]->id, "C-0193");
  EXPECT_EQ(t->CablesOf("gpu-002", "mlx5_0").size(), 1u);
  EXPECT_TRUE(t->CablesOf("gpu-001", "mlx5_0", 2).empty());
  EXPECT_TRUE(t->CablesOf("leaf-07").empty());  // switch ends are not nodes
}

TEST(FleetTopologyParse, EmptyAndMinimal) {
  auto t = ParseFleetTopology("{}");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->site, "default");
  EXPECT_TRUE(t->nodes.empty());
}

void ExpectCorrupt(std::string_view text, std::string_view mentions) {
  auto t = ParseFleetTopology(text);
  ASSERT_FALSE(t.ok()) << text;
  EXPECT_EQ(t.status().code(), StatusCode::kCorrupt) << text;
  EXPECT_NE(t.status().message().find(mentions), std::string::npos) << t.status().message();
}

TEST(FleetTopologyParse, BadInputNamesWhere) {
  ExpectCorrupt(R"({"nodes": [{"name": "a", "rak": "r1"}]})", "nodes[0]: unknown key \"rak\"");
  ExpectCorrupt(R"({"sites": "x"})", "unknown key \"sites\"");
  ExpectCorrupt(R"({"nodes": [{"name": "a"}, {"name": "a"}]})", "duplicate node \"a\"");
  ExpectCorrupt(R"({"nodes": [{"rack": "r1"}]})", "nodes[0].name: required");
  ExpectCorrupt(R"({"nodes": [{"name": ["a"]}]})", "expected a string");
  ExpectCorrupt(R"({"nodes": {"name": "a"}})", "expected an array");
  ExpectCorrupt(R"({"cables": [{"id": "c", "a": {"node": "a", "device": "d"}}]})", "needs both ends");
  ExpectCorrupt(R"({"cables": [{"id": "c", "a": {"node": "a", "device": "d"}, "b": {}}]})",
                "exactly one of node or switch");
  ExpectCorrupt(R"({"cables": [{"id": "c", "a": {"node": "a"}, "b": {"switch": "s"}}]})", "device: required");
  ExpectCorrupt(R"({"cables": [{"id": "c", "a": {"node": "a", "device": "d", "port": -1}, "b": {"switch": "s"}}]})",
                "out of range");
  ExpectCorrupt(R"({"cables": [{"id": "c", "a": {"node": "a", "device": "d", "port": "1"}, "b": {"switch": "s"}}]})",
                "expected an integer");
  ExpectCorrupt(R"({"cables": [{"id": "c", "a": {"switch": "s"}, "b": {"switch": "t"}},
                               {"id": "c", "a": {"switch": "s"}, "b": {"switch": "t"}}]})",
                "duplicate cable");
  ExpectCorrupt("[]", "expected an object");
  ExpectCorrupt("", "not valid JSON");
}

TEST(FleetTopologyParse, TruncatedAtEveryPointIsRefused) {
  const std::string text = kExample;
  for (size_t cut = 0; cut + 2 < text.size(); cut += 5) {
    auto t = ParseFleetTopology(std::string_view(text).substr(0, cut));
    EXPECT_FALSE(t.ok()) << cut;
  }
}

TEST(FleetTopologyParse, HostileSizesAreRefused) {
  auto deep = ParseFleetTopology(std::string(100000, '[') + std::string(100000, ']'));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), StatusCode::kCorrupt);
  auto big = ParseFleetTopology(std::string(kMaxFleetTopologyBytes + 1, ' '));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  auto long_name = ParseFleetTopology(R"({"nodes": [{"name": ")" + std::string(5000, 'x') + "\"}]}");
  ASSERT_FALSE(long_name.ok());
  EXPECT_EQ(long_name.status().code(), StatusCode::kCorrupt);
  // Names are as long as the analyzer keeps them (fleet/names.h: 256 bytes), no longer:
  // a longer one could never match the cut name a node publishes.
  auto name_of = [](size_t n) { return R"({"nodes": [{"name": "n", "pdu": ")" + std::string(n, 'p') + "\"}]}"; };
  EXPECT_TRUE(ParseFleetTopology(name_of(256)).ok());
  auto over = ParseFleetTopology(name_of(257));
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("nodes[0].pdu: longer than 256"), std::string::npos)
      << over.status().message();
}

TEST(FleetTopologyParse, TenThousandNodes) {
  std::string text = R"({"nodes": [)";
  for (int i = 0; i < 10000; ++i) {
    if (i) text += ",";
    text += R"({"name": "n)" + std::to_string(i) + R"(", "rack": "r)" + std::to_string(i / 32) + "\"}";
  }
  text += "]}";
  auto t = ParseFleetTopology(text);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->nodes.size(), 10000u);
  EXPECT_EQ(t->FindNode("n9999")->rack, "r312");
}

}  // namespace
}  // namespace faultline::fleet
