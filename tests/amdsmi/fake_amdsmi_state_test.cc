// The fake AMD SMI state parser: the documented shape, and bad input (truncated,
// oversized, wrong types, unknown keys and functions, out-of-range values, hostile).
#include "sim/fake_amdsmi/fake_amdsmi_state.h"

#include <gtest/gtest.h>

#include "amd_test_env.h"
#include "sources/amdsmi/amdsmi_abi.h"

namespace faultline::fake_amdsmi {
namespace {

TEST(FakeAmdsmiState, ParsesTheDocumentedShape) {
  auto st = ParseFakeAmdsmiState(R"({
    "errors": {"amdsmi_get_socket_handles": "BUSY"},
    "gpus": [{"bdf": "0000:0c:00.0", "uuid": "u0",
              "ecc": {"umc": {"ce": 3, "ue": 1, "de": 2}, "xgmi_wafl": {"ce": 9}},
              "bad_pages": {"reserved": 4, "pending": 1, "unreservable": 0},
              "temperature": {"hotspot": 70, "hotspot_critical": 105, "memory": 60},
              "power": {"socket_w": 650, "limit_w": 750},
              "violation": {"socket_thermal": true},
              "xgmi_status": 1, "pcie_replay": 7,
              "errors": {"amdsmi_get_power_info": 30}, "lost": false}]})");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->errors.at("amdsmi_get_socket_handles"), amdsmi::kBusy);
  const FakeGpu& g = st->gpus.at(0);
  EXPECT_EQ(g.ecc.at("umc").de, 2u);
  EXPECT_EQ(*g.bad_reserved, 4u);
  EXPECT_EQ(*g.temps.at("hotspot").critical, 105);
  EXPECT_FALSE(g.temps.at("memory").critical.has_value());
  EXPECT_EQ(*g.power_w, 650u);
  EXPECT_TRUE(g.violation->at("socket_thermal"));
  EXPECT_EQ(g.errors.at("amdsmi_get_power_info"), 30u);
}

TEST(FakeAmdsmiState, BadInputRefusedWithThePath) {
  struct Case {
    std::string text;
    const char* says;
  } cases[] = {
      {"", "not valid JSON"},
      {"{\"gpus\": [", "not valid JSON"},  // truncated
      {"[]", "not an object"},
      {"{\"gpu\": []}", "$.gpu"},
      {"{\"gpus\": {}}", "not an array"},
      {"{\"gpus\": [{\"ecc\": {\"hbm\": {}}}]}", "not a RAS block"},
      {"{\"gpus\": [{\"ecc\": {\"umc\": {\"ce\": -1}}}]}", "$.gpus[0].ecc.umc.ce"},
      {"{\"gpus\": [{\"ecc\": {\"umc\": {\"ce\": \"3\"}}}]}", "non-negative integer"},
      {"{\"gpus\": [{\"xgmi_status\": 3}]}", "out of range"},
      {"{\"gpus\": [{\"bad_pages\": {\"reserved\": 99999999}}]}", "out of range"},
      {"{\"gpus\": [{\"temperature\": {\"hotspot\": 1.5}}]}", "not an integer"},
      {"{\"gpus\": [{\"violation\": {\"socket_thermal\": 1}}]}", "not a boolean"},
      {"{\"gpus\": [{\"errors\": {\"amdsmi_get_everything\": \"BUSY\"}}]}", "not an AMD SMI function"},
      {"{\"gpus\": [{\"errors\": {\"amdsmi_get_power_info\": \"SOMETIMES\"}}]}", "unknown status name"},
      {"{\"gpus\": [{\"bdf\": \"" + std::string(300, 'x') + "\"}]}", "longer than 256"},
      {"{\"gpus\": [{\"lost\": \"yes\"}]}", "not a boolean"},
  };
  for (const Case& c : cases) {
    auto st = ParseFakeAmdsmiState(c.text);
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_EQ(st.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(st.status().message().find(c.says), std::string::npos) << st.status().message();
  }
  std::string many = "{\"gpus\": [";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + "{}";
  EXPECT_FALSE(ParseFakeAmdsmiState(many + "]}").ok());
  EXPECT_FALSE(ParseFakeAmdsmiState(std::string(kMaxStateBytes + 1, ' ')).ok());
  std::string deep(100000, '[');
  EXPECT_FALSE(ParseFakeAmdsmiState(deep).ok());
}

}  // namespace
}  // namespace faultline::fake_amdsmi
