// The fake NVML state file parser: what it accepts, and bad input it must refuse with a
// clear error (truncated, oversized, malformed, hostile).
#include "sim/fake_nvml/fake_nvml_state.h"

#include <gtest/gtest.h>

#include <string>

#include "fake_nvml_env.h"

namespace faultline::fake_nvml {
namespace {

using nvml::testing::H100;
using nvml::testing::Json;

std::string Error(const std::string& text) {
  auto r = ParseFakeNvmlState(text);
  EXPECT_FALSE(r.ok()) << text.substr(0, 200);
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  return r.status().message();
}

std::string GpuError(const Json& gpu) { return Error(Json{{"gpus", {gpu}}}.dump()); }

TEST(NvmlFakeStateTest, ParsesAFullGpu) {
  Json gpu = H100(2);
  gpu["errors"] = {{"nvmlDeviceGetPowerUsage", "NO_PERMISSION"}, {"nvmlDeviceGetClockInfo", 10}};
  gpu["lost"] = "RESET_REQUIRED";
  gpu["lost_after_s"] = 5;
  gpu["clock_event_reasons"] = "0x80";
  auto r = ParseFakeNvmlState(Json{{"gpus", {gpu}}, {"errors", {{"nvmlDeviceGetCount_v2", "TIMEOUT"}}}}.dump());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->gpus.size(), 1u);
  const FakeGpu& g = r->gpus[0];
  EXPECT_EQ(*g.uuid, "GPU-6b4c1d2e-90ab-4c1d-8e2f-000000000002");
  EXPECT_EQ(*g.pci_bus_id, "00000000:3a:00.0");
  EXPECT_EQ(*g.ecc[0][0], 3u);                 // corrected volatile
  EXPECT_EQ(*g.ecc[1][1], 1u);                 // uncorrected aggregate
  EXPECT_EQ(g.ecc_locations[0][0].at(2), 3u);  // corrected volatile dram
  EXPECT_EQ(g.ecc_locations[0][0].at(7), 0u);  // sram
  EXPECT_TRUE(g.ecc_locations[0][1].empty());
  EXPECT_EQ(g.remapped_rows->correctable, 2u);
  EXPECT_EQ(*g.temp_slowdown, 87u);
  EXPECT_EQ(*g.power_mw, 312456u);
  EXPECT_EQ(*g.clock_event_reasons, 0x80u);
  EXPECT_EQ(g.nvlinks.size(), 18u);
  EXPECT_EQ(g.nvlinks[5].crc_flit, 5u);
  EXPECT_EQ(g.errors.at("nvmlDeviceGetPowerUsage"), 4);
  EXPECT_EQ(g.errors.at("nvmlDeviceGetClockInfo"), 10);
  EXPECT_EQ(g.lost_code, 16);
  EXPECT_EQ(*g.lost_after_s, 5);
  EXPECT_EQ(r->errors.at("nvmlDeviceGetCount_v2"), 10);
}

TEST(NvmlFakeStateTest, AbsentFieldsStayUnset) {
  auto r = ParseFakeNvmlState(R"({"gpus": [{}, {"lost": true}, {"lost": false}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const FakeGpu& g = r->gpus[0];
  EXPECT_FALSE(g.uuid || g.ecc[0][0] || g.remapped_rows || g.temp_gpu || g.clock_event_reasons || g.lost_after_s);
  EXPECT_TRUE(g.nvlinks.empty());
  EXPECT_EQ(*r->gpus[1].lost_after_s, 0);
  EXPECT_EQ(r->gpus[1].lost_code, 15);
  EXPECT_FALSE(r->gpus[2].lost_after_s);
  EXPECT_TRUE(ParseFakeNvmlState("{}").ok());
}

TEST(NvmlFakeStateTest, RefusesTruncatedAndMalformedJson) {
  const std::string full = Json{{"gpus", {H100(0)}}}.dump();
  for (size_t cut : {size_t{0}, size_t{1}, full.size() / 3, full.size() / 2, full.size() - 1}) {
    EXPECT_NE(Error(full.substr(0, cut)).find("not valid JSON"), std::string::npos) << cut;
  }
  EXPECT_NE(Error("[1,2,3]").find("must be an object"), std::string::npos);
  EXPECT_NE(Error("\"gpus\"").find("must be an object"), std::string::npos);
  EXPECT_NE(Error(R"({"gpus": {}})").find("$.gpus: must be an array"), std::string::npos);
  EXPECT_NE(Error(R"({"gpus": [3]})").find("$.gpus[0]: must be an object"), std::string::npos);
}

TEST(NvmlFakeStateTest, RefusesUnknownKeysAndNames) {
  EXPECT_NE(Error(R"({"gpu": []})").find("unknown key \"gpu\""), std::string::npos);
  EXPECT_NE(GpuError({{"temprature", {{"gpu", 40}}}}).find("unknown key \"temprature\""), std::string::npos);
  EXPECT_NE(GpuError({{"ecc", {{"volatile", {{"correctd", 1}}}}}}).find("$.gpus[0].ecc.volatile"), std::string::npos);
  EXPECT_NE(
      GpuError({{"ecc_locations", {{"volatile", {{"corrected", {{"hbm", 1}}}}}}}}).find("unknown memory location"),
      std::string::npos);
  EXPECT_NE(GpuError({{"errors", {{"nvmlDeviceGetFanSpeed", "TIMEOUT"}}}}).find("unknown NVML function"),
            std::string::npos);
  EXPECT_NE(GpuError({{"errors", {{"nvmlDeviceGetUUID", "GPU_ON_FIRE"}}}}).find("NVML error name"), std::string::npos);
  EXPECT_NE(GpuError({{"lost", "MAYBE"}}).find("$.gpus[0].lost"), std::string::npos);
}

TEST(NvmlFakeStateTest, RefusesWrongTypesAndOutOfRangeValues) {
  EXPECT_NE(GpuError({{"uuid", 12}}).find("$.gpus[0].uuid: must be a string"), std::string::npos);
  EXPECT_NE(GpuError({{"temperature", {{"gpu", -4}}}}).find("non-negative integer"), std::string::npos);
  EXPECT_NE(GpuError({{"temperature", {{"gpu", 40.5}}}}).find("non-negative integer"), std::string::npos);
  EXPECT_NE(GpuError({{"power", {{"usage_mw", 4294967296ull}}}}).find("out of range"), std::string::npos);
  EXPECT_NE(GpuError({{"remapped_rows", {{"pending", 1}}}}).find("true or false"), std::string::npos);
  EXPECT_NE(GpuError({{"clock_event_reasons", "48"}}).find("0x"), std::string::npos);
  EXPECT_NE(GpuError({{"clock_event_reasons", "0xZZ"}}).find("not a hex number"), std::string::npos);
  EXPECT_NE(GpuError({{"clock_event_reasons", "0x1ffffffffffffffff"}}).find("not a hex number"), std::string::npos);
  EXPECT_NE(GpuError({{"clock_event_reasons", -1}}).find("must be"), std::string::npos);
  EXPECT_NE(GpuError({{"lost_after_s", -1}}).find("seconds"), std::string::npos);
  EXPECT_NE(GpuError({{"lost_after_s", "soon"}}).find("seconds"), std::string::npos);
  EXPECT_NE(GpuError({{"errors", {{"nvmlDeviceGetUUID", -3}}}}).find("out of range"), std::string::npos);
  EXPECT_NE(GpuError({{"nvlink", {{{"active", "yes"}}}}}).find("$.gpus[0].nvlink[0].active"), std::string::npos);
  EXPECT_NE(GpuError({{"event_types", -1}}).find("$.gpus[0].event_types"), std::string::npos);
  EXPECT_NE(GpuError({{"event_types", "0x8"}}).find("unsigned integer"), std::string::npos);
  EXPECT_NE(GpuError({{"xid_events", 48}}).find("must be an array"), std::string::npos);
  EXPECT_NE(GpuError({{"xid_events", {{{"at_s", -1}, {"xid", 48}}}}}).find("xid_events[0].at_s"), std::string::npos);
  EXPECT_NE(GpuError({{"xid_events", {{{"at_s", 1}}}}}).find("xid_events[0].xid"), std::string::npos);
  EXPECT_NE(GpuError({{"xid_events", {{{"at_s", 1}, {"xid", 48}, {"gpu", 2}}}}}).find("unknown"), std::string::npos);
  Json many = Json::array();
  for (int i = 0; i < 1001; ++i) many.push_back({{"at_s", i}, {"xid", 13}});
  EXPECT_NE(GpuError({{"xid_events", many}}).find("more than 1000"), std::string::npos);
}

TEST(NvmlFakeStateTest, ReadsEventsAndDefaultsToWhatEveryGpuSupports) {
  auto r = ParseFakeNvmlState(R"({"gpus": [{}, {"event_types": 0, "xid_events": [{"at_s": 2.5, "xid": 94}]}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->gpus[0].event_types, 0xbu);
  EXPECT_TRUE(r->gpus[0].xid_events.empty());
  EXPECT_EQ(r->gpus[1].event_types, 0u);
  ASSERT_EQ(r->gpus[1].xid_events.size(), 1u);
  EXPECT_DOUBLE_EQ(r->gpus[1].xid_events[0].at_s, 2.5);
  EXPECT_EQ(r->gpus[1].xid_events[0].xid, 94u);
}

TEST(NvmlFakeStateTest, RefusesOversizedInput) {
  Json many = Json::array();
  for (int i = 0; i < 65; ++i) many.push_back(Json::object());
  EXPECT_NE(Error(Json{{"gpus", many}}.dump()).find("more than 64 GPUs"), std::string::npos);
  Json links = Json::array();
  for (int i = 0; i < 19; ++i) links.push_back(Json::object());
  EXPECT_NE(GpuError({{"nvlink", links}}).find("more than 18 links"), std::string::npos);
  EXPECT_NE(GpuError({{"name", std::string(300, 'n')}}).find("longer than 256"), std::string::npos);
  const std::string huge = "{\"gpus\": [], \"pad\": \"" + std::string(kMaxStateBytes, ' ') + "\"}";
  EXPECT_NE(Error(huge).find("larger than 4 MiB"), std::string::npos);
}

TEST(NvmlFakeStateTest, SurvivesHostileInput) {
  Error(std::string(100000, '['));
  static constexpr char kBinary[] = "{\"gpus\": [{\"uuid\": \"\0\xff\xfe\"}]}";
  Error(std::string(kBinary, sizeof(kBinary) - 1));  // NUL and invalid UTF-8 inside a string
  Error("{\"gpus\": [{\"name\": \"\\ud800\"}]}");
  auto nul_name = ParseFakeNvmlState(R"({"gpus": [{"name": "a\u0000b"}]})");
  ASSERT_TRUE(nul_name.ok());
  EXPECT_EQ(nul_name->gpus[0].name->size(), 3u);
}

TEST(NvmlFakeStateTest, KnowsTheFunctionsItExports) {
  EXPECT_TRUE(IsFakeNvmlFunction("nvmlDeviceGetRemappedRows"));
  EXPECT_TRUE(IsFakeNvmlFunction("nvmlInit_v2"));
  EXPECT_FALSE(IsFakeNvmlFunction("nvmlDeviceGetFanSpeed"));
  EXPECT_FALSE(IsFakeNvmlFunction(""));
}

}  // namespace
}  // namespace faultline::fake_nvml
