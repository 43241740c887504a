// A BMC's pushed event reaches the evaluation at once (issue 16, "fault to diagnosis"):
// critical thermal readings and events join PSU/leak as critical (engine/detect/critical.h),
// and the Redfish source hands an SSE event over as soon as it arrives (WaitForData)
// without an extra sweep, so a critical one is evaluated at once instead of after the
// next Redfish interval.
//
// Nothing here asserts a duration: waits are bounded by a generous watchdog only.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <sstream>
#include <thread>

#include "core/json.h"
#include "daemon/agent.h"
#include "daemon/sources.h"
#include "engine/detect/critical.h"
#include "parse/redfish_map.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::kBoot;
using testing::kSec;
using testing::kT0;
using testing::ScratchDir;

constexpr int64_t kHour = 3600 * kSec;

redfish::MapContext Ctx() {
  redfish::MapContext ctx;
  ctx.node = "node7";
  ctx.read_time_ns = kT0;
  return ctx;
}

// The temperatures a deprecated Thermal resource with one sensor maps to.
std::vector<Observation> Thermal(const std::string& sensor_json) {
  const std::string json = R"({"@odata.type":"#Thermal.v1_7_0.Thermal","@odata.id":"/redfish/v1/Chassis/1/Thermal",)"
                           R"("Temperatures":[)" +
                           sensor_json + "]}";
  auto r = redfish::MapThermal(Json::parse(json), Ctx());
  std::vector<Observation> temps;
  for (Observation& o : r.observations) {
    if (o.kind == ObsKind::kTemperature) temps.push_back(std::move(o));
  }
  EXPECT_EQ(temps.size(), 1u) << json;
  return temps;
}

bool CriticalTemperature(const std::string& sensor_json) {
  auto temps = Thermal(sensor_json);
  return !temps.empty() && IsCritical(temps.front());
}

TEST(DaemonCriticalThermal, BmcTemperaturesAtCriticalHealthOrPastTheirCriticalThresholdAreCritical) {
  // The BMC says Critical.
  EXPECT_TRUE(CriticalTemperature(R"({"MemberId":"0","Name":"Inlet Temp","ReadingCelsius":52,)"
                                  R"("PhysicalContext":"Intake","Status":{"State":"Enabled","Health":"Critical"}})"));
  // Past its own critical threshold while the BMC still says OK (some BMCs lag).
  EXPECT_TRUE(CriticalTemperature(R"({"MemberId":"1","Name":"CPU1 Temp","ReadingCelsius":101,)"
                                  R"("UpperThresholdCritical":100,"Status":{"State":"Enabled","Health":"OK"}})"));
  EXPECT_TRUE(CriticalTemperature(R"({"MemberId":"2","Name":"PSU1 Temp","ReadingCelsius":90,)"
                                  R"("UpperThresholdFatal":90,"Status":{"State":"Enabled","Health":"Warning"}})"));
  // Warm but within limits, at Warning, or a threshold a BMC wrote as 0 (no threshold).
  EXPECT_FALSE(CriticalTemperature(R"({"MemberId":"3","Name":"Inlet Temp","ReadingCelsius":38,)"
                                   R"("UpperThresholdNonCritical":35,"UpperThresholdCritical":45,)"
                                   R"("Status":{"State":"Enabled","Health":"Warning"}})"));
  EXPECT_FALSE(CriticalTemperature(R"({"MemberId":"4","Name":"GPU Zone","ReadingCelsius":60,)"
                                   R"("UpperThresholdCritical":0,"Status":{"State":"Enabled","Health":"OK"}})"));
}

TEST(DaemonCriticalThermal, HostileThresholdsAndOtherLayersAreNotCritical) {
  Observation t;
  t.layer = Layer::kOob;
  t.source = Source::kRedfish;
  t.kind = ObsKind::kTemperature;
  t.value = 70;
  for (const char* bad : {"", "hot", "70C", "nan", "inf", "-", "1e", " 60"}) {
    t.attrs["upper_critical"] = bad;
    EXPECT_FALSE(IsCritical(t)) << "'" << bad << "'";
  }
  t.attrs["upper_critical"] = "69.5";
  EXPECT_TRUE(IsCritical(t));
  t.value.reset();  // no reading: nothing to compare
  EXPECT_FALSE(IsCritical(t));
  // A GPU's own temperature (NVML) is the GPU detectors' business, whatever its attrs.
  Observation gpu;
  gpu.layer = Layer::kGpu;
  gpu.source = Source::kNvml;
  gpu.kind = ObsKind::kTemperature;
  gpu.value = 120;
  gpu.attrs = {{"health", "Critical"}, {"upper_critical", "90"}};
  EXPECT_FALSE(IsCritical(gpu));
  // Coolant past its critical threshold.
  Observation coolant = t;
  coolant.kind = ObsKind::kCoolantTemp;
  coolant.value = 61;
  coolant.attrs = {{"upper_critical", "60"}};
  EXPECT_TRUE(IsCritical(coolant));
}

Observation FromEvent(const std::string& json) {
  auto r = redfish::MapEvent(Json::parse(json), Ctx());
  EXPECT_EQ(r.observations.size(), 1u) << json;
  return r.observations.empty() ? Observation{} : r.observations.front();
}

TEST(DaemonCriticalThermal, CriticalThermalEventsAreCritical) {
  EXPECT_TRUE(IsCritical(FromEvent(
      R"({"EventId":"51","MessageSeverity":"Critical","MessageId":"SensorEvent.1.0.ReadingAboveUpperCriticalThreshold",)"
      R"("Message":"Temperature sensor 'CPU2 Temp' reading 103 is above the critical threshold.","MessageArgs":[]})")));
  EXPECT_TRUE(IsCritical(FromEvent(R"({"EventId":"52","Severity":"Critical","MessageId":"OEM.1.0.ThermalTrip",)"
                                   R"("Message":"Shutdown imminent."})")));
  EXPECT_TRUE(IsCritical(FromEvent(
      R"({"EventId":"53","MessageSeverity":"Critical","MessageId":"ResourceEvent.1.0.ResourceErrorsDetected",)"
      R"("MessageArgs":["CDU1","Failed"],"OriginOfCondition":{"@odata.id":"/redfish/v1/ThermalEquipment/CDUs/1/Coolant"}})")));
  // The same at Warning waits for the timer, as does a critical event about something else.
  EXPECT_FALSE(IsCritical(FromEvent(
      R"({"EventId":"54","MessageSeverity":"Warning","MessageId":"SensorEvent.1.0.ReadingAboveUpperCautionThreshold",)"
      R"("Message":"Temperature sensor 'Inlet' reading 36 is above the caution threshold."})")));
  EXPECT_FALSE(IsCritical(FromEvent(R"({"EventId":"55","MessageSeverity":"Critical","MessageId":"Base.1.0.Failed",)"
                                    R"("Message":"The firmware update failed."})")));
}

// --- the Redfish source wakes for a pushed event -------------------------------------

const char kSelEntries[] = "/redfish/v1/Systems/1/LogServices/SEL/Entries";

// Polls `done` every 10 ms for up to 30 s (a guard against hanging, not a timing check).
bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 3000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

class DaemonRedfishWake : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string mockup = std::string(FAULTLINE_SOURCE_DIR) + "/tests/mock_bmc/data/mini-server";
    if (!std::filesystem::exists(mockup)) GTEST_SKIP() << "mini-server mockup absent";
    sim::MockBmcOptions options;
    options.mockup_dir = mockup;  // its EventService advertises ServerSentEventUri
    auto bmc = sim::MockBmc::Start(options);
    ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();
    bmc_ = std::move(bmc).value();
    const std::string password_file = dir_.File("bmc.pw");
    testing::AppendText(password_file, options.password + "\n");
    std::filesystem::permissions(password_file,
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    config_ = testing::QuietConfig(dir_);
    config_.redfish.url = bmc_->base_url();
    config_.redfish.user = options.username;
    config_.redfish.password_file = password_file;
    config_.redfish.ca_file = bmc_->ca_cert_path();
    // Neither the sweep nor the timer would come in the test's lifetime.
    config_.redfish.interval_ns = kHour;
    // wait_for_events is left at its default (on): the early hand-over under test.
    config_.agent.evaluate_interval_ns = kHour;
  }

  size_t StoredEvents(const std::string& message_id) {
    auto store = Store::Open(config_.agent.store_path);
    EXPECT_TRUE(store.ok());
    ObservationQuery q;
    q.kind = ObsKind::kSelEntry;
    q.limit = 0;
    auto rows = (*store)->QueryObservations(q);
    EXPECT_TRUE(rows.ok());
    size_t n = 0;
    for (const auto& row : rows->rows) {
      const auto& a = row.value.attrs;
      n += a.count("message_id") && a.at("message_id") == message_id;
    }
    return n;
  }

  ScratchDir dir_{"redfish_wake"};
  std::unique_ptr<sim::MockBmc> bmc_;
  AgentConfig config_;
  FakeClock clock_{kT0, kBoot};
  std::ostringstream log_;
  Logger logger_{log_, LogLevel::kDebug, clock_};
};

TEST_F(DaemonRedfishWake, APushedCriticalEventIsStoredAndEvaluatedAtOnceWithoutASweep) {
  auto made = Agent::Create(config_, clock_, logger_);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  auto agent = std::move(made).value();
  agent->Start();
  ASSERT_TRUE(WaitUntil([&] { return bmc_->sse_subscribers() >= 1; })) << log_.str();
  ASSERT_TRUE(WaitUntil([&] { return agent->stats().observations_inserted > 0; }));  // the first sweep's
  const uint64_t sweeps = bmc_->requests_for(kSelEntries);
  const AgentStats before = agent->stats();

  // A warning is handed over at once too, but waits for the timer to be evaluated.
  const std::string warning = "Power.1.0.PowerSupplyPredictiveFailure";
  bmc_->PushEvent({.message_id = warning, .severity = "Warning", .message = "PSU Bay2 predicts a failure"});
  ASSERT_TRUE(WaitUntil([&] { return StoredEvents(warning) == 1; })) << log_.str();
  EXPECT_EQ(agent->stats().critical_batches, before.critical_batches);
  EXPECT_EQ(agent->stats().evaluations_on_demand, before.evaluations_on_demand);

  const std::string critical = "ResourceEvent.1.0.ResourceErrorsDetected";
  bmc_->PushEvent({.message_id = critical,
                   .message_args = {"Bay1", "Failed"},
                   .severity = "Critical",
                   .message = "PSU Bay1 lost its input",
                   .origin = "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1"});
  ASSERT_TRUE(WaitUntil([&] { return agent->stats().evaluations_on_demand > before.evaluations_on_demand; }))
      << log_.str();
  EXPECT_EQ(StoredEvents(critical), 1u);
  EXPECT_GT(agent->stats().critical_batches, before.critical_batches);
  // No sweep was made for either event: the stream alone carried them.
  EXPECT_EQ(bmc_->requests_for(kSelEntries), sweeps);
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_EQ(bmc_->sessions_deleted(), bmc_->sessions_created());
}

// Off, the source never waits on the stream: the agent sleeps its interval and a pushed
// event is handed over with the next sweep.
TEST_F(DaemonRedfishWake, TurnedOffTheSourceDoesNotWaitForPushes) {
  EXPECT_TRUE(AgentConfig{}.redfish.wait_for_events);  // the default, as docs/agent.md says
  config_.redfish.wait_for_events = false;
  auto source = MakeRedfishSource(config_.redfish, "node7", clock_, {});
  EXPECT_FALSE(source->CanWaitForData());
  source->Shutdown();
}

TEST_F(DaemonRedfishWake, WaitForDataEndsAtCancelAndWhenTheSweepIsDue) {
  auto source = MakeRedfishSource(config_.redfish, "node7", clock_, {});
  ASSERT_TRUE(source->CanWaitForData());
  auto first = source->Poll(clock_.MonotonicNs() + 60 * kSec);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // Cancel from another thread ends the wait (the interval is an hour).
  auto waited = std::async(std::launch::async, [&] { source->WaitForData(kHour); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  source->Cancel();
  EXPECT_EQ(waited.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  source->WaitForData(kHour);  // and every later one at once
  source->Shutdown();

  // A short interval: the wait ends when the next sweep is due, and the poll sweeps.
  config_.redfish.interval_ns = 200'000'000;
  auto quick = MakeRedfishSource(config_.redfish, "node7", clock_, {});
  ASSERT_TRUE(quick->Poll(clock_.MonotonicNs() + 60 * kSec).ok());
  const uint64_t sweeps = bmc_->requests_for(kSelEntries);
  auto due = std::async(std::launch::async, [&] { quick->WaitForData(kHour); });
  EXPECT_EQ(due.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_TRUE(quick->Poll(clock_.MonotonicNs() + 60 * kSec).ok());
  EXPECT_EQ(bmc_->requests_for(kSelEntries), sweeps + 1);
  quick->Shutdown();
}

}  // namespace
}  // namespace faultline::daemon
