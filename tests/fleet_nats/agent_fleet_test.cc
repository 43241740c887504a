// The agent's [fleet] section: parsing, and the publisher running on the agent's store
// between Start and Stop.
#include <gtest/gtest.h>

#include <sstream>

#include "daemon/agent.h"
#include "daemon/config.h"
#include "daemon/fleet_publisher.h"
#include "fleet/wire.h"
#include "nats_server.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {

using fleet::nats::ConsumerConfig;
using fleet::nats::StreamConfig;
using fleet::nats::testing::ConnectOrFail;
using fleet::nats::testing::EnsureStreamRetrying;
using fleet::nats::testing::NatsServer;
using fleet::nats::testing::OptionsFor;
using fleet::nats::testing::TempDir;
using fleet::nats::testing::WaitUntil;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1764410400LL * kSec;

TEST(AgentFleetConfig, OffByDefaultAndEveryKeyIsRead) {
  auto empty = ParseAgentConfig("");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->fleet.enabled);
  auto printed = ParseAgentConfig(DefaultAgentConfigToml());
  ASSERT_TRUE(printed.ok()) << printed.status().ToString();
  EXPECT_EQ(printed->fleet.enabled, empty->fleet.enabled);
  EXPECT_EQ(printed->fleet.interval_ns, empty->fleet.interval_ns);
  EXPECT_EQ(printed->fleet.max_backoff_ns, empty->fleet.max_backoff_ns);
  EXPECT_EQ(printed->fleet.site, empty->fleet.site);

  auto c = ParseAgentConfig(R"(
[fleet]
enabled = true
urls = "nats://127.0.0.1:4222, nats://127.0.0.1:4223"
site = "dc1"
rack = "r12"
credentials_file = "/etc/faultline/nats.creds"
ca_file = "/etc/faultline/ca.pem"
interval = "250ms"
max_backoff = "30s"
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->fleet.enabled);
  EXPECT_EQ(c->fleet.site, "dc1");
  EXPECT_EQ(c->fleet.rack, "r12");
  EXPECT_EQ(c->fleet.credentials_file, "/etc/faultline/nats.creds");
  EXPECT_EQ(c->fleet.ca_file, "/etc/faultline/ca.pem");
  EXPECT_EQ(c->fleet.interval_ns, 250'000'000);
  EXPECT_EQ(c->fleet.max_backoff_ns, 30 * kSec);
  auto o = FleetPublisherOptionsFor(c->fleet, "gpu-07");
  EXPECT_EQ(o.connect.urls, (std::vector<std::string>{"nats://127.0.0.1:4222", "nats://127.0.0.1:4223"}));
  EXPECT_EQ(o.node, "gpu-07");
  EXPECT_EQ(o.connect.credentials_file, "/etc/faultline/nats.creds");
}

TEST(AgentFleetConfig, BadValuesNameTheKey) {
  for (const char* bad :
       {"[fleet]\nenabled = true\n", "[fleet]\nenabled = true\nurls = \" , \"\n", "[fleet]\nsite = \"\"\n",
        "[fleet]\nurl = \"nats://x\"\n", "[fleet]\ninterval = -1\n", "[fleet]\nenabled = \"yes\"\n"}) {
    auto c = ParseAgentConfig(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("fleet."), std::string::npos) << c.status().message();
  }
}

// A nats-server with the stream, and an agent (no sources) publishing to it as gpu-07 in
// site dc1, rack r12.
class AgentFleet : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NATS_SERVER();
    server_ = std::make_unique<NatsServer>(dir_.File("srv"), "s1");
    ASSERT_TRUE(server_->Start());
    c_ = ConnectOrFail(OptionsFor({server_->url()}));
    ASSERT_NE(c_, nullptr);
    StreamConfig sc;
    sc.max_bytes = 256 << 20;
    ASSERT_TRUE(EnsureStreamRetrying(*c_, sc).ok());
    AgentConfig config;
    config.agent.node = "gpu-07";
    config.agent.store_path = dir_.File("agent.db");
    config.kmsg.enabled = false;
    config.nvml.enabled = false;
    config.sysfs.enabled = false;
    config.assistant.incident_notes = false;
    config.fleet.enabled = true;
    config.fleet.urls = server_->url();
    config.fleet.site = "dc1";
    config.fleet.rack = "r12";
    config.fleet.interval_ns = 50'000'000;
    auto agent = Agent::CreateWithSources(config, {}, clock_, logger_);
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    agent_ = std::move(agent).value();
  }

  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
  std::unique_ptr<fleet::nats::Connection> c_;
  FakeClock clock_{kT0, kSec};
  std::ostringstream log_;
  Logger logger_{log_, LogLevel::kDebug, clock_};
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentFleet, TheAgentPublishesItsStoreWhileRunning) {
  ASSERT_NE(agent_->fleet_publisher(), nullptr);
  Observation o;
  o.time_ns = kT0;
  o.node = "gpu-07";
  o.layer = Layer::kGpu;
  o.component = ComponentRef{ComponentType::kGpu, "3", {}};
  o.kind = ObsKind::kTemperature;
  o.value = 71;
  o.source = Source::kNvml;
  ASSERT_TRUE(agent_->store().Append({o}).ok());
  agent_->Start();
  ASSERT_TRUE(WaitUntil([&] { return agent_->fleet_publisher()->stats().observations >= 1; }));
  ASSERT_TRUE(agent_->Stop().ok());
  EXPECT_NE(log_.str().find("fleet: connected to"), std::string::npos) << log_.str();

  ConsumerConfig cc;
  cc.durable = "check";
  cc.filter_subject = "faultline.dc1.r12.gpu-07.obs";
  auto consumer = c_->BindPullConsumer(cc);
  ASSERT_TRUE(consumer.ok());
  auto msgs = (*consumer)->Fetch(10, 2 * kSec);
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 1u);
  auto e = fleet::Decode((*msgs)[0].data());
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->observations.size(), 1u);
  EXPECT_EQ(e->observations[0].value, 71);
}

// The fleet analyzer's verdict comes back to the agent while it runs: the publisher's thread
// reads the site's fleet diagnoses and stores the link for the policy (fleet_links.h).
TEST_F(AgentFleet, TheFleetsVerdictOnThisNodeReachesItsStore) {
  Diagnosis d;
  d.fault_class = FaultClass::kPowerInsufficient;
  d.component = ComponentRef{ComponentType::kPsu, "0", {}};
  d.action = Action::kFacilityTicket;
  d.first_ns = kT0;
  d.last_ns = kT0 + kSec;
  auto row = agent_->store().PutDiagnosis("gpu-07", d, d.last_ns);
  ASSERT_TRUE(row.ok());

  fleet::Envelope e;
  e.kind = fleet::RecordKind::kFleetDiagnosis;
  e.place = {"dc1", "fleet", "fleet"};
  e.msg_id = "pdu/r12-a@1";
  e.sent_ns = kT0;
  e.fleet = fleet::FleetDiagnosis{};
  e.fleet->id = "pdu/r12-a/1";
  e.fleet->cause = "pdu";
  e.fleet->component = "pdu/r12-a";
  e.fleet->linked = {"gpu-06#4", "gpu-07#" + std::to_string(*row)};
  ASSERT_TRUE(c_->Publish(fleet::Subject(e.place, e.kind), fleet::Encode(e), e.msg_id).ok());

  agent_->Start();
  ASSERT_TRUE(WaitUntil([&] {
    auto links = agent_->store().ListCursors("gpu-07", "fleet_link");
    return links.ok() && !links->empty();
  }));
  ASSERT_TRUE(agent_->Stop().ok());
  EXPECT_NE(log_.str().find("linked to pdu pdu/r12-a"), std::string::npos) << log_.str();
}

}  // namespace
}  // namespace faultline::daemon
