// The agent's Redfish source following the mock BMC's SSE event stream (loopback HTTPS).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <sstream>
#include <thread>

#include "daemon/agent.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::kBoot;
using testing::kT0;
using testing::ScratchDir;

const char kSelEntries[] = "/redfish/v1/Systems/1/LogServices/SEL/Entries";
const char kSsePath[] = "/redfish/v1/EventService/Subscriptions/SSE";

// Polls `done` every 10 ms for up to 20 s (a guard against hanging, not a timing check).
bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

class DaemonRedfishEvents : public ::testing::Test {
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
  }

  std::unique_ptr<Agent> StartAgent() {
    auto agent = Agent::Create(config_, clock_, logger_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    return agent.ok() ? std::move(agent).value() : nullptr;
  }

  // Stored observations that came from an SSE event (a Redfish entry of type Event).
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
      n += a.count("entry_type") && a.at("entry_type") == "Event" && a.count("message_id") &&
           a.at("message_id") == message_id;
    }
    return n;
  }

  ScratchDir dir_{"redfish_events"};
  std::unique_ptr<sim::MockBmc> bmc_;
  AgentConfig config_;
  FakeClock clock_{kT0, kBoot};
  std::ostringstream log_;
  Logger logger_{log_, LogLevel::kDebug, clock_};
};

TEST_F(DaemonRedfishEvents, EventPushedAfterTheFirstPollIsStoredAtTheNextPoll) {
  auto agent = StartAgent();
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(WaitUntil([&] { return bmc_->sse_subscribers() >= 1; })) << log_.str();
  const uint64_t log_reads = bmc_->requests_for(kSelEntries);
  const std::string id = "ResourceEvent.1.0.ResourceErrorsDetected";
  bmc_->PushEvent({.message_id = id,
                   .message_args = {"Bay1", "Failed"},
                   .severity = "Critical",
                   .message = "PSU Bay1 failed",
                   .origin = "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1"});
  ASSERT_TRUE(agent->RunOnce().ok());
  // One sweep for that poll, as always: the event is in no log, only the stream had it.
  EXPECT_EQ(bmc_->requests_for(kSelEntries), log_reads + 1);
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_EQ(StoredEvents(id), 1u) << log_.str();
}

TEST_F(DaemonRedfishEvents, StopEndsTheStreamAndDeletesTheSession) {
  auto agent = StartAgent();
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(WaitUntil([&] { return bmc_->sse_subscribers() >= 1; })) << log_.str();
  ASSERT_TRUE(agent->Stop().ok());  // joins the stream thread before it returns
  EXPECT_TRUE(WaitUntil([&] { return bmc_->sse_subscribers() == 0; }));
  EXPECT_EQ(bmc_->sessions_created(), 1u);
  EXPECT_EQ(bmc_->sessions_deleted(), 1u);
  EXPECT_TRUE(bmc_->open_sessions().empty());
  EXPECT_EQ(log_.str().find("mockpassword"), std::string::npos);
}

// A stop that lands mid-sweep cancels it, and the cancelled sweep reads like an expired
// session; the logout must still happen (it did not about 1 stop in 10 under load, with
// the source waiting on the stream between sweeps). Both ways the source can wait.
TEST_F(DaemonRedfishEvents, StreamRunningOnTheAgentsThreadsStopsWithIt) {
  config_.redfish.interval_ns = 20'000'000;  // sweeps back to back; the stream stays open
  for (int round = 0; round < 6; ++round) {
    config_.redfish.wait_for_events = round % 2 == 1;
    auto agent = StartAgent();
    ASSERT_NE(agent, nullptr);
    agent->Start();
    ASSERT_TRUE(WaitUntil([&] { return bmc_->sse_subscribers() >= 1; })) << log_.str();
    ASSERT_TRUE(agent->Stop().ok());
    EXPECT_TRUE(WaitUntil([&] { return bmc_->sse_subscribers() == 0; }));
    EXPECT_EQ(bmc_->sessions_deleted(), bmc_->sessions_created()) << "round " << round;
    EXPECT_TRUE(bmc_->open_sessions().empty()) << "round " << round;
  }
}

TEST_F(DaemonRedfishEvents, EventsOffNeverOpensTheStream) {
  config_.redfish.events = false;
  auto agent = StartAgent();
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_EQ(bmc_->requests_for(kSsePath), 0u);
  EXPECT_EQ(bmc_->sessions_deleted(), 1u);
}

}  // namespace
}  // namespace faultline::daemon
