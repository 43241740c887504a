// The agent hands every new diagnosis to the remediation policy (daemon/remediation.h,
// docs/remediation.md "In the agent"): dry runs by default, one action per fault however
// often it is evaluated and across restarts, a failing platform stored as failed and retried
// while the agent keeps diagnosing, a user-program fault never drains.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "../policy/policy_fakes.h"
#include "blocking_actuator.h"
#include "daemon/agent.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using policy::testing::FakeActuator;
using policy::testing::FakeFleet;
using policy::testing::FakePlatform;
using testing::AppendText;
using testing::kSec;
using testing::kT0;
using testing::QuietConfig;
using testing::ScratchDir;

constexpr char kFellOffBus[] =
    "[  103.000001] NVRM: Xid (PCI:0000:b5:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";
// A program's fault: its XID 13 (two lines) and its segfault right after.
constexpr char kUserXid[] =
    "[  120.000001] NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics SM Warp Exception on "
    "(GPC 0, TPC 1, SM 0): Out Of Range Address\n"
    "[  120.000101] NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics Exception: ESR "
    "0x51e730=0x20000 0x51e734=0x0 0x51e728=0x4c1eb72 0x51e72c=0x174\n"
    "[  121.500000] python3[4242]: segfault at 0 ip 00007f3a2c1b2e10 sp 00007ffd1e8a9c40 error 4 in "
    "libtorch_cuda.so[7f3a2a000000+2e00000]\n";

// The same GPU falls off the bus after the program's fault (later than kUserXid).
constexpr char kFellOffBusLater[] =
    "[  130.000001] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";

using actions::ActionClass;

class AgentRemediation : public ::testing::Test {
 protected:
  AgentRemediation() : dir_("remediation"), clock_(kT0, 150 * kSec), logger_(log_, LogLevel::kDebug, clock_) {
    config_ = QuietConfig(dir_);
    config_.kmsg.enabled = true;
    config_.kmsg.path = dir_.File("kern.log");
  }
  // An agent whose actuators are the fakes over `platform_` (or `actuator`).
  std::unique_ptr<Agent> NewAgent(actions::Actuator& actuator) {
    auto agent = Agent::Create(config_, clock_, logger_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    if (!agent.ok()) return nullptr;
    (*agent)->UseActuators({&actuator}, &fleet_);
    return std::move(agent).value();
  }
  // The latest stored state per action class (attrs.class -> attrs.state).
  std::map<std::string, std::string> LatestStates() {
    auto store = Store::Open(config_.agent.store_path);
    EXPECT_TRUE(store.ok());
    std::map<std::string, std::string> latest;
    if (!store.ok()) return latest;
    auto rows = (*store)->ListActions(RecordQuery{});
    EXPECT_TRUE(rows.ok());
    if (!rows.ok()) return latest;
    for (const auto& r : rows->rows) {
      if (!r.value.attrs.count("state")) continue;  // not a policy decision (an incident note)
      latest[r.value.attrs.at("class")] = r.value.attrs.at("state");
    }
    return latest;
  }

  ScratchDir dir_;
  FakeClock clock_;
  std::ostringstream log_;
  Logger logger_;
  AgentConfig config_;
  FakePlatform platform_;
  FakeFleet fleet_;
};

TEST_F(AgentRemediation, ByDefaultEveryDecisionIsAStoredDryRunAndNothingIsApplied) {
  AppendText(config_.kmsg.path, kFellOffBus);
  FakeActuator actuator(platform_, {ActionClass::kDrain, ActionClass::kCordon, ActionClass::kWebhook});
  auto agent = NewAgent(actuator);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_GT(agent->stats().policy_decisions, 0u);
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_TRUE(actuator.applied.empty());
  const auto states = LatestStates();
  ASSERT_TRUE(states.count("drain")) << log_.str();
  EXPECT_EQ(states.at("drain"), "dry_run");
  EXPECT_NE(log_.str().find("policy: drain for diagnosis"), std::string::npos) << log_.str();
}

TEST_F(AgentRemediation, AnEnabledDrainIsAppliedOnceAcrossEvaluationsAndRestarts) {
  config_.policy.enable = {ActionClass::kDrain};
  AppendText(config_.kmsg.path, kFellOffBus);
  {
    FakeActuator actuator(platform_, {ActionClass::kDrain});
    auto agent = NewAgent(actuator);
    ASSERT_NE(agent, nullptr);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(agent->RunOnce().ok());
      clock_.Advance(40 * kSec);  // past retry_initial: the policy looks again each time
    }
    ASSERT_TRUE(agent->Stop().ok());
    EXPECT_EQ(actuator.applied.size(), 1u);
  }
  EXPECT_EQ(platform_.applies(), 1);
  EXPECT_EQ(LatestStates().at("drain"), "done");
  // A restart re-derives the same fault from the store: still one drain.
  FakeActuator again(platform_, {ActionClass::kDrain});
  auto agent = NewAgent(again);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_TRUE(again.applied.empty());
  EXPECT_EQ(platform_.applies(), 1);
}

TEST_F(AgentRemediation, AFailingPlatformIsStoredFailedRetriedAndNeverFatal) {
  config_.policy.enable = {ActionClass::kDrain};
  AppendText(config_.kmsg.path, kFellOffBus);
  FakeActuator actuator(platform_, {ActionClass::kDrain});
  actuator.fail_with = Status(StatusCode::kUnavailable, "slurmctld down");
  auto agent = NewAgent(actuator);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());  // the agent keeps diagnosing
  EXPECT_EQ(LatestStates().at("drain"), "failed");
  EXPECT_EQ(agent->stats().diagnoses_stored, 1u);
  // Not retried before it is due...
  const size_t tries = actuator.applied.size();
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_EQ(actuator.applied.size(), tries);
  // ...and done once the platform is back and the retry is due.
  actuator.fail_with = Status::Ok();
  clock_.Advance(31 * kSec);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_EQ(LatestStates().at("drain"), "done");
  EXPECT_EQ(platform_.applies(), 1);
  EXPECT_NE(log_.str().find("slurmctld down"), std::string::npos);
}

TEST_F(AgentRemediation, AUserProgramFaultNeverDrainsEvenWhenDrainIsEnabled) {
  config_.policy.enable = {ActionClass::kDrain, ActionClass::kCordon, ActionClass::kNotifyUser};
  config_.policy.webhook_url = "https://hooks.example/faultline";  // notify_user goes through it
  config_.policy.settle_ns = 0;  // the fake clock stands still: tell the owner at the first look
  AppendText(config_.kmsg.path, kUserXid);
  FakeActuator actuator(platform_, {ActionClass::kDrain, ActionClass::kCordon, ActionClass::kNotifyUser});
  auto agent = NewAgent(actuator);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->Stop().ok());
  ASSERT_FALSE(actuator.applied.empty()) << log_.str();
  for (const auto& d : actuator.applied) EXPECT_EQ(d.action_class, ActionClass::kNotifyUser);
  EXPECT_EQ(LatestStates().count("drain"), 0u);
}

TEST_F(AgentRemediation, ANewDiagnosisGetsOneIncidentNoteWithItsEvidenceAndRunbook) {
  // A knowledge base of one runbook, written here.
  const std::string kb = dir_.File("kb");
  std::filesystem::create_directories(kb + "/runbooks");
  AppendText(kb + "/runbooks/gpu_fell_off_bus.md",
             "# GPU fell off the bus\n\n## Symptoms\n\nXID 79: the GPU has fallen off the bus; nvidia-smi "
             "no longer lists it.\n\n## Safe actions\n\nDrain the node, then reboot it; reseat the GPU if it "
             "falls off again.\n");
  config_.assistant.kb_dir = kb;
  AppendText(config_.kmsg.path, kFellOffBus);
  FakeActuator actuator(platform_, {});
  auto agent = NewAgent(actuator);
  ASSERT_NE(agent, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_EQ(agent->stats().incident_notes, 1u);  // one per new diagnosis, not per evaluation
  ASSERT_TRUE(agent->Stop().ok());
  auto store = Store::Open(config_.agent.store_path);
  ASSERT_TRUE(store.ok());
  auto rows = (*store)->ListActions(RecordQuery{});
  ASSERT_TRUE(rows.ok());
  int notes = 0;
  for (const auto& r : rows->rows) {
    auto kind = r.value.attrs.find("kind");
    if (kind == r.value.attrs.end() || kind->second != "assistant_transcript") continue;
    ++notes;
    EXPECT_TRUE(r.value.diagnosis_id.has_value());
    ASSERT_TRUE(r.value.attrs.count("answer"));
    const std::string all = r.value.reason + " " + r.value.attrs.at("answer");
    EXPECT_NE(all.find("gpu_fell_off_bus"), std::string::npos) << all.substr(0, 2000);
    EXPECT_NE(all.find("runbook/gpu_fell_off_bus"), std::string::npos) << all.substr(0, 2000);
  }
  EXPECT_EQ(notes, 1);
}

// The daemon (Start / Stop): actions run on the remediation worker. A webhook whose endpoint
// hangs holds neither the next fault's diagnosis nor the agent's stop, and the decision it
// left "decided" is finished at the next start. Asserted on the order of events, not on time.
TEST_F(AgentRemediation, AHungWebhookHoldsNeitherTheNextDiagnosisNorTheStop) {
  config_.policy.enable = {ActionClass::kWebhook, ActionClass::kNotifyUser};
  config_.policy.webhook_url = "https://hooks.example/faultline";
  config_.policy.settle_ns = 0;  // the fake clock stands still: act on a diagnosis at once
  auto events = std::make_shared<testing::EventLog>();
  testing::BlockingActuator hook(events, {ActionClass::kWebhook, ActionClass::kNotifyUser});
  auto agent = NewAgent(hook);
  ASSERT_NE(agent, nullptr);
  agent->SetEvaluationListener([events](const EvaluateResult& r, int64_t) {
    // A fault's diagnosis (an evaluation before the first line is read stores "none").
    if (!r.diagnosis_stored || r.diagnoses.front().fault_class == FaultClass::kNone) return;
    events->Add("diagnosis " + std::string(ToString(r.diagnoses.front().fault_class)));
  });
  agent->Start();
  AppendText(config_.kmsg.path, kUserXid);  // the job's owner is told: that webhook hangs
  ASSERT_TRUE(events->WaitForCount("apply ", 1)) << events->Joined() << "\n" << log_.str();
  AppendText(config_.kmsg.path, kFellOffBusLater);
  ASSERT_TRUE(events->WaitFor("diagnosis gpu_fell_off_bus")) << events->Joined() << "\n" << log_.str();
  ASSERT_TRUE(agent->Stop().ok());
  events->Add("stopped");
  EXPECT_NE(log_.str().find("stopping without waiting for an action still running"), std::string::npos) << log_.str();
  const auto latest = LatestStates();
  ASSERT_TRUE(latest.count("notify_user")) << log_.str();
  EXPECT_EQ(latest.at("notify_user"), "decided");

  // The next start sends it again (a webhook cannot tell whether it went) and finishes it.
  FakeActuator again(platform_, {ActionClass::kWebhook, ActionClass::kNotifyUser}, false);
  auto restarted = NewAgent(again);
  ASSERT_NE(restarted, nullptr);
  ASSERT_TRUE(restarted->RunOnce().ok());
  ASSERT_TRUE(restarted->Stop().ok());
  EXPECT_EQ(LatestStates().at("notify_user"), "done");

  // Only now does the hung endpoint answer; the abandoned call returns into a closed store.
  events->Open();
  ASSERT_TRUE(events->WaitForCount("applied ", 1)) << events->Joined();
  std::vector<std::string> order;  // "apply 2" -> "apply": the ids are the store's
  for (const std::string& e : events->events()) order.push_back(e.starts_with("appl") ? e.substr(0, e.find(' ')) : e);
  EXPECT_EQ(order, (std::vector<std::string>{"diagnosis user_application", "apply", "diagnosis gpu_fell_off_bus",
                                             "stopped", "applied"}))
      << events->Joined();
}

TEST_F(AgentRemediation, ABadPolicyKeepsTheAgentFromStartingCleanly) {
  config_.policy.enable = {ActionClass::kNotifyUser};  // notify_user without a webhook URL
  auto agent = Agent::Create(config_, clock_, logger_);
  ASSERT_FALSE(agent.ok());
  EXPECT_NE(agent.status().message().find("policy."), std::string::npos) << agent.status().ToString();
}

TEST_F(AgentRemediation, AnUnusableWebhookConfigKeepsTheAgentFromStarting) {
  config_.policy.webhook_url = "ftp://hooks.invalid/x";
  auto agent = Agent::Create(config_, clock_, logger_);
  ASSERT_FALSE(agent.ok());
  EXPECT_NE(agent.status().message().find("policy.webhook_url"), std::string::npos) << agent.status().ToString();
}

}  // namespace
}  // namespace faultline::daemon
