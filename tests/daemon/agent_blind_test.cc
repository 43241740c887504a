// The agent's blind state (daemon/agent.h "Blind", docs/agent.md "Blind"): with every source
// failing no "none" diagnosis is stored nor replaces a real one, the state is recorded in the
// store for `check --slurm` and `serve`, and it clears when a source reads again. A source
// whose poll hangs counts as failing after kBlindAfterIntervals intervals; one source still
// reading is enough to see.
#include <gtest/gtest.h>

#include <condition_variable>
#include <sstream>
#include <thread>

#include "daemon/agent.h"
#include "store/agent_state.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::kBoot;
using testing::kSec;
using testing::kT0;
using testing::QuietConfig;
using testing::ScratchDir;
using testing::ScriptedSource;
using testing::Step;

Status Unavailable(const std::string& why) { return Status(StatusCode::kUnavailable, why); }

// A source whose polls block until Release() (or Cancel()): a BMC that stops answering
// without the connection ever failing.
class HangingSource final : public AgentSource {
 public:
  std::string name() const override { return "workload"; }
  Layer layer() const override { return Layer::kWorkload; }
  Result<SourceBatch> Poll(int64_t) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++polls_;
    wake_.notify_all();
    wake_.wait(lock, [this] { return released_; });
    return SourceBatch{};
  }
  void Cancel() override { Release(); }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    wake_.notify_all();
  }
  void WaitForFirstPoll() {
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait(lock, [this] { return polls_ > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  int polls_ = 0;
  bool released_ = false;
};

class DaemonAgentBlind : public ::testing::Test {
 protected:
  DaemonAgentBlind() : dir_("blind"), clock_(kT0, kBoot), logger_(log_, LogLevel::kDebug, clock_) {
    config_ = QuietConfig(dir_);
  }
  // An agent over the given sources (borrowed pointers stay valid: the agent owns them).
  std::unique_ptr<Agent> NewAgent(std::vector<std::unique_ptr<AgentSource>> sources) {
    auto agent = Agent::CreateWithSources(config_, std::move(sources), clock_, logger_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    return agent.ok() ? std::move(agent).value() : nullptr;
  }
  // Two scripted sources (kernel log and NVML), both failing at first.
  std::unique_ptr<Agent> AgentWithFailingKmsgAndNvml(ScriptedSource** kmsg, ScriptedSource** nvml) {
    auto k = std::make_unique<ScriptedSource>("kmsg", Layer::kOs);
    auto n = std::make_unique<ScriptedSource>("nvml", Layer::kGpu);
    k->Add(Unavailable("/dev/kmsg: Permission denied"));
    n->Add(Unavailable("NVML_ERROR_DRIVER_NOT_LOADED"));
    *kmsg = k.get();
    *nvml = n.get();
    std::vector<std::unique_ptr<AgentSource>> sources;
    sources.push_back(std::move(k));
    sources.push_back(std::move(n));
    return NewAgent(std::move(sources));
  }
  std::optional<AgentState> Recorded() {
    auto store = Store::Open(config_.agent.store_path);
    EXPECT_TRUE(store.ok());
    if (!store.ok()) return std::nullopt;
    auto state = GetAgentState(**store, "node7");
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? *state : std::nullopt;
  }
  int64_t DiagnosesStored() {
    auto store = Store::Open(config_.agent.store_path);
    EXPECT_TRUE(store.ok());
    auto stats = (*store)->Stats();
    return stats.ok() ? stats->diagnoses : -1;
  }

  ScratchDir dir_;
  FakeClock clock_;
  std::ostringstream log_;
  Logger logger_;
  AgentConfig config_;
};

TEST_F(DaemonAgentBlind, EverySourceFailingStoresNoNoneAndIsRecordedBlind) {
  ScriptedSource* kmsg = nullptr;
  ScriptedSource* nvml = nullptr;
  auto agent = AgentWithFailingKmsgAndNvml(&kmsg, &nvml);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());  // failing sources are not an agent error

  const AgentState sight = agent->Sight();
  EXPECT_TRUE(sight.blind);
  EXPECT_EQ(sight.since_ns, kT0);
  ASSERT_EQ(sight.sources.size(), 2u);
  EXPECT_TRUE(sight.sources[0].failing);
  EXPECT_NE(sight.sources[0].error.find("Permission denied"), std::string::npos) << sight.sources[0].error;
  EXPECT_NE(sight.sources[1].error.find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos);
  EXPECT_EQ(agent->stats().diagnoses_stored, 0u);
  EXPECT_EQ(agent->stats().nones_withheld, 1u);
  EXPECT_NE(log_.str().find("agent blind: every source is failing"), std::string::npos) << log_.str();
  ASSERT_TRUE(agent->Stop().ok());

  EXPECT_EQ(DiagnosesStored(), 0);  // "none" was never written: a reader sees no healthy verdict
  auto recorded = Recorded();
  ASSERT_TRUE(recorded.has_value());
  EXPECT_TRUE(recorded->blind);
  EXPECT_EQ(recorded->since_ns, kT0);
  EXPECT_EQ(recorded->sources, sight.sources);
}

TEST_F(DaemonAgentBlind, ASourceReadingAgainClearsItAndStoresNone) {
  ScriptedSource* kmsg = nullptr;
  ScriptedSource* nvml = nullptr;
  auto agent = AgentWithFailingKmsgAndNvml(&kmsg, &nvml);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->Sight().blind);
  clock_.Advance(30 * kSec);
  nvml->Add(Unavailable("NVML_ERROR_DRIVER_NOT_LOADED"));  // NVML still down; kmsg reads (empty)
  ASSERT_TRUE(agent->RunOnce().ok());

  const AgentState sight = agent->Sight();
  EXPECT_FALSE(sight.blind);
  EXPECT_EQ(sight.since_ns, kT0 + 30 * kSec);
  EXPECT_FALSE(sight.sources[0].failing);
  EXPECT_TRUE(sight.sources[1].failing);           // still named: partly failing, not blind
  EXPECT_EQ(agent->stats().diagnoses_stored, 1u);  // "none", now that a source sees
  ASSERT_FALSE(agent->LastDiagnoses().empty());
  EXPECT_EQ(agent->LastDiagnoses().front().fault_class, FaultClass::kNone);
  EXPECT_NE(log_.str().find("agent sees again"), std::string::npos);
  ASSERT_TRUE(agent->Stop().ok());
  auto recorded = Recorded();
  ASSERT_TRUE(recorded.has_value());
  EXPECT_FALSE(recorded->blind);
  EXPECT_EQ(DiagnosesStored(), 1);
}

TEST_F(DaemonAgentBlind, APartlyFailingAgentIsNotBlind) {
  auto kmsg = std::make_unique<ScriptedSource>("kmsg", Layer::kOs);
  kmsg->Add(Unavailable("/dev/kmsg: Permission denied"));
  std::vector<std::unique_ptr<AgentSource>> sources;
  sources.push_back(std::move(kmsg));
  sources.push_back(std::make_unique<ScriptedSource>("nvml", Layer::kGpu));  // reads, empty
  auto agent = NewAgent(std::move(sources));
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_FALSE(agent->Sight().blind);
  EXPECT_EQ(agent->stats().diagnoses_stored, 1u);
  EXPECT_EQ(agent->stats().nones_withheld, 0u);
  const std::vector<SourceStatus> status = agent->SourceStatuses();
  ASSERT_EQ(status.size(), 2u);
  EXPECT_TRUE(status[0].failing);
  EXPECT_NE(status[0].error.find("Permission denied"), std::string::npos);
  EXPECT_FALSE(status[1].failing);
  EXPECT_TRUE(status[1].error.empty());
  ASSERT_TRUE(agent->Stop().ok());
  auto recorded = Recorded();
  ASSERT_TRUE(recorded.has_value());  // the first judgement is recorded: serve can tell "seeing"
  EXPECT_FALSE(recorded->blind);
}

TEST_F(DaemonAgentBlind, BlindnessNeverReplacesTheLastRealDiagnosisByNone) {
  auto owned = std::make_unique<ScriptedSource>();
  ScriptedSource* source = owned.get();
  SourceBatch slow;  // steps that slow down: a workload imbalance
  for (int i = 0; i < 20; ++i) slow.observations.push_back(Step(kT0 + i * 10 * kSec, i < 12 ? 1.0 : 1.9));
  source->Add(slow);
  clock_.Set(kT0 + 200 * kSec);
  std::vector<std::unique_ptr<AgentSource>> sources;
  sources.push_back(std::move(owned));
  auto agent = NewAgent(std::move(sources));
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_EQ(agent->stats().diagnoses_stored, 1u);
  // The source fails; the finding leaves the 30-minute window, so the isolator answers "none".
  clock_.Advance(40 * 60 * kSec);
  source->Add(Unavailable("connection refused"));
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_EQ(agent->LastDiagnoses().front().fault_class, FaultClass::kNone);
  EXPECT_TRUE(agent->Sight().blind);
  EXPECT_EQ(agent->stats().diagnoses_stored, 1u);
  auto latest = agent->store().LatestDiagnosis("node7");
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->value.fault_class, FaultClass::kWorkloadImbalance);
  // It reads again: now "none" is news and is stored.
  clock_.Advance(10 * kSec);
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_FALSE(agent->Sight().blind);
  latest = agent->store().LatestDiagnosis("node7");
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->value.fault_class, FaultClass::kNone);
}

TEST_F(DaemonAgentBlind, ARestartedAgentStartsFromTheRecordedStateAndClearsIt) {
  {
    ScriptedSource* kmsg = nullptr;
    ScriptedSource* nvml = nullptr;
    auto agent = AgentWithFailingKmsgAndNvml(&kmsg, &nvml);
    ASSERT_NE(agent, nullptr);
    ASSERT_TRUE(agent->RunOnce().ok());
    ASSERT_TRUE(agent->Stop().ok());
  }
  clock_.Advance(60 * kSec);
  std::vector<std::unique_ptr<AgentSource>> sources;
  sources.push_back(std::make_unique<ScriptedSource>("kmsg", Layer::kOs));
  auto agent = NewAgent(std::move(sources));
  ASSERT_NE(agent, nullptr);
  EXPECT_TRUE(agent->Sight().blind);  // not yet judged: what the store says, never "fine"
  EXPECT_EQ(agent->Sight().since_ns, kT0);
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_FALSE(agent->Sight().blind);
  ASSERT_TRUE(agent->Stop().ok());
  auto recorded = Recorded();
  ASSERT_TRUE(recorded.has_value());
  EXPECT_FALSE(recorded->blind);
  EXPECT_EQ(recorded->since_ns, kT0 + 60 * kSec);
}

// Threads: a poll that never returns fails nothing, yet once it has been in flight for
// kBlindAfterIntervals of its intervals on the agent's clock the source counts as failing and
// the agent is blind; before that it is pending (neither blind nor allowed to store "none").
TEST_F(DaemonAgentBlind, AHangingSourceMakesTheAgentBlindAfterThreeIntervals) {
  auto owned = std::make_unique<HangingSource>();
  HangingSource* source = owned.get();
  std::vector<std::unique_ptr<AgentSource>> sources;
  sources.push_back(std::move(owned));
  auto agent = NewAgent(std::move(sources));
  ASSERT_NE(agent, nullptr);
  agent->Start();
  source->WaitForFirstPoll();
  auto wait_until = [&](auto done) {
    for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  ASSERT_TRUE(wait_until([&] { return agent->stats().evaluations >= 2; }));
  EXPECT_FALSE(agent->Sight().blind);  // its first poll has not returned yet: pending
  EXPECT_EQ(agent->stats().diagnoses_stored, 0u);
  // The workload source polls every 10 ms (QuietConfig): 1 s of the agent's clock is 100 intervals.
  clock_.Advance(kSec);
  ASSERT_TRUE(wait_until([&] { return agent->Sight().blind; })) << log_.str();
  const AgentState sight = agent->Sight();
  ASSERT_EQ(sight.sources.size(), 1u);
  EXPECT_NE(sight.sources[0].error.find("a poll has not returned for 1 s"), std::string::npos)
      << sight.sources[0].error;
  source->Release();  // it answers: sight comes back
  ASSERT_TRUE(wait_until([&] { return !agent->Sight().blind; })) << log_.str();
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_EQ(DiagnosesStored(), 1);  // "none", once the source had read
}

TEST_F(DaemonAgentBlind, RemediationCountersAreInTheStats) {
  std::vector<std::unique_ptr<AgentSource>> sources;
  sources.push_back(std::make_unique<ScriptedSource>("kmsg", Layer::kOs));
  auto agent = NewAgent(std::move(sources));
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunFor(std::chrono::milliseconds(60)).ok());
  // On the worker (Start): the first evaluation always hands it a call (Engine::Start's look).
  const RemediationStats r = agent->stats().remediation;
  EXPECT_GE(r.queued, 1u);
  EXPECT_GE(r.max_queued, 1u);
  EXPECT_EQ(r.abandoned, 0u);
}

}  // namespace
}  // namespace faultline::daemon
