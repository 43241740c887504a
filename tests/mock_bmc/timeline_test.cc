// A scenario file driving the served tree: set, ramp and append land at the right scenario
// times (manual AdvanceTo, and time_scale with a fake clock), events reach SSE.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fixture.h"

namespace faultline::sim::testing {
namespace {

using nlohmann::json;

constexpr char kBay1[] = "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1";
constexpr char kBay2Metrics[] = "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay2/Metrics";
constexpr char kThermal[] = "/redfish/v1/Chassis/1U/Thermal";
constexpr char kEntries[] = "/redfish/v1/Systems/1/LogServices/SEL/Entries";
constexpr char kLeak[] = "/redfish/v1/Chassis/1U/ThermalSubsystem/LeakDetection/LeakDetectors/ColdPlate";

class MockBmcTimeline : public MockBmcFixture {
 protected:
  void SetUp() override {
    MockBmcOptions o = MiniOptions();
    o.scenario_file = DataDir() + "/scenarios/psu-loss-inlet-ramp.yaml";
    StartBmc(o);
  }
  double Inlet() { return Json(Get(kThermal))["Temperatures"][0]["ReadingCelsius"].get<double>(); }
};

TEST_F(MockBmcTimeline, StepsApplyAtTheirScenarioTimes) {
  EXPECT_EQ(Json(Get(kBay1))["Status"]["State"], "Enabled");
  EXPECT_EQ(Json(Get(kEntries))["Members@odata.count"], 3);
  bmc_->AdvanceTo(4.99);
  EXPECT_EQ(Json(Get(kBay1))["Status"]["State"], "Enabled");

  bmc_->AdvanceTo(5);
  json bay1 = Json(Get(kBay1));
  EXPECT_EQ(bay1["Status"], json({{"State", "Absent"}, {"Health", "Critical"}}));
  EXPECT_EQ(Json(Get("/redfish/v1/Chassis/1U/Power"))["PowerSupplies"][0]["Status"]["Health"], "Critical");
  json entries = Json(Get(kEntries));
  EXPECT_EQ(entries["Members@odata.count"], 4);
  json sel = Json(Get(entries["Members"][3]["@odata.id"]));
  EXPECT_EQ(sel["SensorType"], "Power Supply");
  EXPECT_EQ(sel["Id"], "4");
  EXPECT_FALSE(sel["Created"].get<std::string>().empty());

  bmc_->AdvanceTo(7);  // halfway through the voltage sag
  EXPECT_DOUBLE_EQ(Json(Get(kBay2Metrics))["InputVoltage"]["Reading"].get<double>(), 210.25);
  EXPECT_DOUBLE_EQ(Inlet(), 24);
  bmc_->AdvanceTo(40);  // inlet ramp 24 -> 42 over 10..70 s
  EXPECT_DOUBLE_EQ(Inlet(), 33);
  EXPECT_DOUBLE_EQ(Json(Get("/redfish/v1/Chassis/1U/Sensors/Inlet"))["Reading"].get<double>(), 33);
  EXPECT_DOUBLE_EQ(Json(Get(kBay2Metrics))["InputVoltage"]["Reading"].get<double>(), 190);
  EXPECT_EQ(Json(Get(kLeak))["DetectorState"], "OK");
  bmc_->AdvanceTo(80);
  EXPECT_DOUBLE_EQ(Inlet(), 42);
  EXPECT_EQ(Json(Get(kLeak))["DetectorState"], "Critical");
  EXPECT_DOUBLE_EQ(bmc_->scenario_time(), 80);
  EXPECT_TRUE(bmc_->scenario_errors().empty());
}

TEST_F(MockBmcTimeline, ScenarioEventsAreStreamed) {
  bmc_->AdvanceTo(5);
  HttpRequest req = Req("/redfish/v1/EventService/SSE");
  req.keep_body = false;
  std::string buffer;
  req.on_data = [&](const std::string& chunk) {
    buffer += chunk;
    return buffer.find("\n\n") == std::string::npos;
  };
  Fetch(req);
  EXPECT_NE(buffer.find("id: 1\n"), std::string::npos);
  EXPECT_NE(buffer.find("ResourceEvent.1.3.ResourceErrorsDetected"), std::string::npos);
}

TEST(MockBmcTimelineClock, TimeScaleRunsTheScenarioFromTheClock) {
  FakeClock clock(1'700'000'000'000'000'000, 1'000'000'000);
  MockBmcOptions o = MiniOptions();
  o.scenario_file = DataDir() + "/scenarios/psu-loss-inlet-ramp.yaml";
  o.time_scale = 10;  // ten scenario seconds per clock second
  o.clock = &clock;
  auto bmc = MockBmc::Start(o);
  ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();
  clock.Advance(600'000'000);  // 0.6 s -> scenario 6 s
  for (int i = 0; i < 400 && (*bmc)->scenario_time() < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_DOUBLE_EQ((*bmc)->scenario_time(), 6);
  auto bay1 = json::parse(*(*bmc)->ResourceJson(kBay1));
  EXPECT_EQ(bay1["Status"]["State"], "Absent");
  auto entry = json::parse(*(*bmc)->ResourceJson(std::string(kEntries) + "/4"));
  EXPECT_EQ(entry["Created"], "2023-11-14T22:13:20.600000Z");  // the fake wall clock's time
}

TEST(MockBmcTimelineStart, ScenarioNamingAnAbsentResourceFailsStart) {
  const auto path = std::filesystem::temp_directory_path() / ("mock-bmc-scn-" + std::to_string(::getpid()) + ".yaml");
  { std::ofstream(path) << "steps:\n  - {at: 1, set: {resource: /redfish/v1/Chassis/9Z, pointer: /A, value: 1}}\n"; }
  MockBmcOptions o = MiniOptions();
  o.scenario_file = path.string();
  auto bmc = MockBmc::Start(o);
  std::filesystem::remove(path);
  ASSERT_FALSE(bmc.ok());
  EXPECT_NE(bmc.status().message().find("/redfish/v1/Chassis/9Z"), std::string::npos);
}

TEST(MockBmcTimelineStart, StepsThatFailAtRunTimeAreReported) {
  const auto path = std::filesystem::temp_directory_path() / ("mock-bmc-scn2-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream(path) << R"({"steps": [{"at": 2, "set": {"resource": "/redfish/v1/Chassis/1U",
                                  "pointer": "/Status/State/Deeper", "value": 1}}]})";
  }
  MockBmcOptions o = MiniOptions();
  o.scenario_file = path.string();
  auto bmc = MockBmc::Start(o);
  std::filesystem::remove(path);
  ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();
  (*bmc)->AdvanceTo(3);
  EXPECT_EQ((*bmc)->scenario_errors().size(), 1u);
}

}  // namespace
}  // namespace faultline::sim::testing
