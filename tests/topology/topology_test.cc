#include "parse/topology.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline {
namespace {

constexpr char kExample[] = R"({
  "node": "gpu-node-17",
  "expected_ib_rate_gbps": 400,
  "gpus": [
    {"index": 0, "bdf": "0000:1B:00.0", "serial": "1654922000123",
     "nvlinks": [{"link": 0, "nvswitch": "0", "port": 32}, {"link": 1, "nvswitch": "1", "port": 33}]},
    {"index": 1, "nvlinks": [{"link": 0, "peer_gpu": 2, "peer_link": 0, "cable": "NVL-C7"}]}
  ],
  "nvswitches": [{"name": "0", "bdf": "0000:05:00.0"}, {"name": "1", "bdf": "0000:06:00.0"}],
  "ib": [
    {"device": "mlx5_0", "port": 1, "switch": "leaf-07", "switch_port": "17", "cable": "CBL-A17"},
    {"device": "mlx5_1", "port": 1, "switch": "leaf-07", "switch_port": 18, "cable": "CBL-A18", "expected_rate_gbps": 200}
  ],
  "pcie_slots": [{"slot": "3", "riser": "RISER-1"}, {"bdf": "0000:02:00.0", "riser": "RISER-2"}]
})";

TEST(TopologyParse, ParsesEveryField) {
  auto t = ParseTopology(kExample);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->node, "gpu-node-17");
  ASSERT_EQ(t->gpus.size(), 2u);
  EXPECT_EQ(t->gpus[0].bdf, "0000:1b:00.0");  // normalized
  EXPECT_EQ(t->gpus[0].serial, "1654922000123");
  const TopoNvlink* l = t->FindNvlink(0, 1);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->nvswitch, "1");
  EXPECT_EQ(l->port, 33);
  const TopoNvlink* direct = t->FindNvlink(1, 0);
  ASSERT_NE(direct, nullptr);
  EXPECT_EQ(direct->peer_gpu, 2);
  EXPECT_EQ(direct->cable, "NVL-C7");
  EXPECT_EQ(t->FindNvlink(0, 7), nullptr);
  EXPECT_EQ(t->GpuLinksOnSwitchPort("0", 32), (std::vector<std::pair<int, int>>{{0, 0}}));
}

TEST(TopologyParse, IbLookupsBothWays) {
  auto t = ParseTopology(kExample);
  ASSERT_TRUE(t.ok());
  const TopoIbPort* p = t->FindIbPort("mlx5_1", 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->switch_port, "18");  // numbers accepted for names
  EXPECT_EQ(t->FindIbBySwitchPort("leaf-07", "17")->device, "mlx5_0");
  EXPECT_EQ(t->FindIbBySwitchPort("leaf-07", "99"), nullptr);
  EXPECT_DOUBLE_EQ(t->ExpectedIbRate("mlx5_0", 1), 400);
  EXPECT_DOUBLE_EQ(t->ExpectedIbRate("mlx5_1", 1), 200);
  EXPECT_DOUBLE_EQ(t->ExpectedIbRate("mlx5_9", 1), 400);
}

TEST(TopologyParse, RiserAndNvswitchLookups) {
  auto t = ParseTopology(kExample);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->RiserFor("3", ""), "RISER-1");
  EXPECT_EQ(t->RiserFor("", "0000:02:00.0"), "RISER-2");
  EXPECT_EQ(t->RiserFor("9", "0000:09:00.0"), "");
  EXPECT_EQ(t->NvswitchName("0000:06:00.0"), "1");
  EXPECT_EQ(t->NvswitchName("0"), "0");
  EXPECT_EQ(t->NvswitchName("7"), "");
}

TEST(TopologyParse, EmptyObjectIsAnEmptyTopology) {
  auto t = ParseTopology("{}");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->gpus.empty());
  EXPECT_EQ(t->FindIbPort("mlx5_0", 1), nullptr);
}

struct BadCase {
  const char* name;
  const char* text;
  const char* needle;  // in the error message
};

class TopologyBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(TopologyBadInput, IsRejectedWithAClearError) {
  auto t = ParseTopology(GetParam().text);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(t.status().message().find(GetParam().needle), std::string::npos) << t.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Topology, TopologyBadInput,
    ::testing::Values(BadCase{"truncated", R"({"gpus": [{"index": 0, )", "topology"},
                      BadCase{"not_object", "[1,2]", "expected an object"},
                      BadCase{"unknown_key", R"({"gpu": []})", "unknown key \"gpu\""},
                      BadCase{"nested_unknown", R"({"ib": [{"device": "mlx5_0", "cabel": "x"}]})", "ib[0]"},
                      BadCase{"wrong_type", R"({"gpus": {"index": 0}})", "expected an array"},
                      BadCase{"negative_port", R"({"gpus": [{"index": 0, "nvlinks": [{"link": 0, "port": -3}]}]})",
                              "out of range"},
                      BadCase{"missing_index", R"({"gpus": [{"bdf": "0000:01:00.0"}]})", "index: required"},
                      BadCase{"bad_bdf", R"({"gpus": [{"index": 0, "bdf": "zz"}]})", "not a PCI address"},
                      BadCase{"slot_without_key", R"({"pcie_slots": [{"riser": "R1"}]})", "needs slot or bdf"},
                      BadCase{"nan_rate", R"({"expected_ib_rate_gbps": "fast"})", "expected a number"},
                      BadCase{"binary", "\x01\x02\xff{", "topology"},
                      BadCase{"deep", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]",
                              "nested too deeply"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(TopologyBadInput, OversizedIsRefused) {
  std::string big = "{\"node\": \"" + std::string(kMaxTopologyBytes, 'x') + "\"}";
  auto t = ParseTopology(big);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace faultline
