#include "daemon/agent.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>
#include <vector>

#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::AppendText;
using testing::kBoot;
using testing::kSec;
using testing::kT0;
using testing::QuietConfig;
using testing::ScratchDir;
using testing::ScriptedSource;
using testing::Step;

constexpr char kFellOffBus[] =
    "[  103.000001] NVRM: Xid (PCI:0000:b5:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";
constexpr char kUserXid[] =
    "[  200.000001] NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics SM Warp Exception on "
    "(GPC 0, TPC 1, SM 0): Out Of Range Address\n";

StoreStats StatsOf(const std::string& path) {
  auto store = Store::Open(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return {};
  auto stats = (*store)->Stats();
  EXPECT_TRUE(stats.ok());
  return stats.ok() ? *stats : StoreStats{};
}

class DaemonAgentKmsg : public ::testing::Test {
 protected:
  // Booted 150 s ago: the log lines below ("[ 103.0]", "[ 200.0]") are recent.
  DaemonAgentKmsg() : dir_("kmsg"), clock_(kT0, 150 * kSec), logger_(log_, LogLevel::kDebug, clock_) {
    config_ = QuietConfig(dir_);
    config_.kmsg.enabled = true;
    config_.kmsg.path = dir_.File("kern.log");
  }
  std::unique_ptr<Agent> NewAgent() {
    auto agent = Agent::Create(config_, clock_, logger_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    return agent.ok() ? std::move(agent).value() : nullptr;
  }
  // RunDue as the daemon's evaluator thread at ticks 0..last, 1 s apart (kmsg polled every
  // second, evaluated every 5 s), with `line` written to the log at tick `at`: the ticks
  // that evaluated.
  std::vector<int> TicksEvaluatedAsTheDaemon(Agent& agent, int last, int at, const char* line) {
    std::vector<int> evaluated_at;
    for (int t = 0; t <= last; ++t) {
      if (t == at) AppendText(config_.kmsg.path, line);
      bool evaluated = false;
      EXPECT_TRUE(agent.RunDue(&evaluated, Agent::DueEvaluation::kAsTheDaemon).ok());
      if (evaluated) evaluated_at.push_back(t);
      clock_.Advance(kSec);
    }
    return evaluated_at;
  }

  ScratchDir dir_;
  FakeClock clock_;
  std::ostringstream log_;
  Logger logger_;
  AgentConfig config_;
};

TEST_F(DaemonAgentKmsg, StoresObservationsFindingsAndADiagnosis) {
  AppendText(config_.kmsg.path, kFellOffBus);
  auto agent = NewAgent();
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  const AgentStats s = agent->stats();
  EXPECT_EQ(s.observations_inserted, 1u);
  EXPECT_GE(s.findings_stored, 1u);
  EXPECT_EQ(s.diagnoses_stored, 1u);
  const auto dx = agent->LastDiagnoses();
  ASSERT_FALSE(dx.empty());
  EXPECT_EQ(dx.front().fault_class, FaultClass::kGpuFellOffBus);
  ASSERT_TRUE(agent->Stop().ok());

  const StoreStats stored = StatsOf(config_.agent.store_path);
  EXPECT_EQ(stored.observations, 1);
  EXPECT_GE(stored.findings, 1);
  EXPECT_EQ(stored.diagnoses, 1);
}

TEST_F(DaemonAgentKmsg, PollingAgainStoresNothingTwice) {
  AppendText(config_.kmsg.path, kFellOffBus);
  auto agent = NewAgent();
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->RunOnce().ok());
  const AgentStats s = agent->stats();
  EXPECT_EQ(s.observations_inserted, 1u);
  EXPECT_EQ(s.diagnoses_stored, 1u);  // unchanged primary is not stored again
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_EQ(StatsOf(config_.agent.store_path).observations, 1);
}

TEST_F(DaemonAgentKmsg, RestartResumesWithoutDuplicates) {
  AppendText(config_.kmsg.path, kFellOffBus);
  {
    auto agent = NewAgent();
    ASSERT_NE(agent, nullptr);
    ASSERT_TRUE(agent->RunOnce().ok());
    ASSERT_TRUE(agent->Stop().ok());
  }
  const StoreStats before = StatsOf(config_.agent.store_path);
  AppendText(config_.kmsg.path, kUserXid);
  clock_.Advance(60 * kSec);
  auto agent = NewAgent();
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  const AgentStats s = agent->stats();
  EXPECT_EQ(s.observations_inserted, 1u);   // only the new line was read
  EXPECT_EQ(s.observations_duplicate, 0u);  // the cursor, not the dedup key, skipped the old one
  ASSERT_TRUE(agent->Stop().ok());
  const StoreStats after = StatsOf(config_.agent.store_path);
  EXPECT_EQ(after.observations, before.observations + 1);
  // The fell-off-bus finding was warm-started from the store, not stored again.
  EXPECT_EQ(after.diagnoses, before.diagnoses);
  EXPECT_GT(after.findings, before.findings);  // the new user-program finding
}

TEST_F(DaemonAgentKmsg, MissingLogFileIsReportedOnceAndRetried) {
  auto agent = NewAgent();
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_EQ(agent->stats().poll_failures, 2u);
  const std::string log = log_.str();
  const auto first = log.find("warn source kmsg unavailable");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("warn source kmsg unavailable", first + 1), std::string::npos) << log;

  AppendText(config_.kmsg.path, kFellOffBus);
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_NE(log_.str().find("source kmsg recovered"), std::string::npos);
  EXPECT_EQ(agent->stats().observations_inserted, 1u);
}

// RunDue as the daemon's evaluator thread: the interval, and at once after a stored batch
// held a critical observation (XID 79); a poll alone evaluates nothing.
TEST_F(DaemonAgentKmsg, RunDueAsTheDaemonEvaluatesOnTheIntervalAndAtOnceAfterACriticalLine) {
  config_.kmsg.interval_ns = kSec;
  config_.agent.evaluate_interval_ns = 5 * kSec;
  auto agent = NewAgent();
  ASSERT_NE(agent, nullptr);
  // The critical line's evaluation restarts the interval, as the thread's timer does.
  EXPECT_EQ(TicksEvaluatedAsTheDaemon(*agent, 12, 7, kFellOffBus), (std::vector<int>{0, 5, 7, 12}));
  const AgentStats s = agent->stats();
  EXPECT_EQ(s.evaluations, 4u);
  EXPECT_EQ(s.evaluations_on_demand, 1u);
  EXPECT_EQ(s.observations_inserted, 1u);
  ASSERT_FALSE(agent->LastDiagnoses().empty());
  EXPECT_EQ(agent->LastDiagnoses().front().fault_class, FaultClass::kGpuFellOffBus);
}

// A benign line is stored at its poll and evaluated at the next interval, not at once.
TEST_F(DaemonAgentKmsg, RunDueAsTheDaemonLeavesABenignLineToTheInterval) {
  config_.kmsg.interval_ns = kSec;
  config_.agent.evaluate_interval_ns = 5 * kSec;
  auto agent = NewAgent();
  ASSERT_NE(agent, nullptr);
  EXPECT_EQ(TicksEvaluatedAsTheDaemon(*agent, 6, 2, kUserXid), (std::vector<int>{0, 5}));
  EXPECT_EQ(agent->stats().observations_inserted, 1u);
  EXPECT_EQ(agent->stats().evaluations_on_demand, 0u);
}

class DaemonAgentScripted : public ::testing::Test {
 protected:
  DaemonAgentScripted() : dir_("scripted"), clock_(kT0, kBoot), logger_(log_, LogLevel::kDebug, clock_) {
    config_ = QuietConfig(dir_);
  }
  std::unique_ptr<Agent> NewAgent(std::unique_ptr<ScriptedSource> source) {
    std::vector<std::unique_ptr<AgentSource>> sources;
    sources.push_back(std::move(source));
    auto agent = Agent::CreateWithSources(config_, std::move(sources), clock_, logger_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    return agent.ok() ? std::move(agent).value() : nullptr;
  }
  // An agent whose source hands over a step 40 days old (the store keeps 30) and one now.
  std::unique_ptr<Agent> AgentWithAStepPastMaxAge() {
    auto owned = std::make_unique<ScriptedSource>();
    SourceBatch batch;
    batch.observations = {Step(kT0 - 40LL * 86400 * kSec, 1.0), Step(kT0, 1.0)};
    owned->Add(batch);
    return NewAgent(std::move(owned));
  }

  ScratchDir dir_;
  FakeClock clock_;
  std::ostringstream log_;
  Logger logger_;
  AgentConfig config_;
};

TEST_F(DaemonAgentScripted, ThreadsPollUntilStopAndShutDownTheSource) {
  auto owned = std::make_unique<ScriptedSource>();
  ScriptedSource* source = owned.get();
  source->Add(Status(StatusCode::kUnavailable, "not yet"));
  SourceBatch batch;
  batch.observations = {Step(kT0, 1.0), Step(kT0 + kSec, 1.0)};
  batch.cursors = {{"node7", "workload", "k", "2"}};
  source->Add(batch);
  auto agent = NewAgent(std::move(owned));
  ASSERT_NE(agent, nullptr);
  agent->Start();
  // Wait (bounded) until the scripted steps were consumed; the loop does not assert time.
  for (int i = 0; i < 500 && agent->stats().observations_inserted < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_EQ(agent->stats().observations_inserted, 2u);
  EXPECT_GE(source->polls.load(), 2);
  EXPECT_EQ(source->shutdowns.load(), 1);
  EXPECT_GE(source->cancels.load(), 1);
  EXPECT_TRUE(agent->Stop().ok());  // idempotent
  EXPECT_EQ(source->shutdowns.load(), 1);

  auto store = Store::Open(config_.agent.store_path);
  ASSERT_TRUE(store.ok());
  auto cursor = (*store)->GetCursor("node7", "workload", "k");
  ASSERT_TRUE(cursor.ok());
  EXPECT_EQ(cursor->value_or(""), "2");
}

TEST_F(DaemonAgentScripted, RunForReturnsAfterTheDuration) {
  auto owned = std::make_unique<ScriptedSource>();
  ScriptedSource* source = owned.get();
  auto agent = NewAgent(std::move(owned));
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunFor(std::chrono::milliseconds(50)).ok());
  EXPECT_GE(source->polls.load(), 1);
  EXPECT_EQ(source->shutdowns.load(), 1);
  EXPECT_GE(agent->stats().evaluations, 1u);
}

TEST_F(DaemonAgentScripted, RequestStopFromAnotherThreadEndsRunFor) {
  auto agent = NewAgent(std::make_unique<ScriptedSource>());
  ASSERT_NE(agent, nullptr);
  std::thread stopper([&agent] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    agent->RequestStop();
  });
  // An hour: only RequestStop can end it.
  ASSERT_TRUE(agent->RunFor(std::chrono::hours(1)).ok());
  stopper.join();
}

TEST_F(DaemonAgentScripted, SlowStepsWithoutAHardwareCauseAreWorkloadImbalance) {
  auto owned = std::make_unique<ScriptedSource>();
  SourceBatch batch;
  for (int i = 0; i < 20; ++i) batch.observations.push_back(Step(kT0 + i * 10 * kSec, i < 12 ? 1.0 : 1.9));
  owned->Add(batch);
  clock_.Set(kT0 + 200 * kSec);
  auto agent = NewAgent(std::move(owned));
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  const auto dx = agent->LastDiagnoses();
  ASSERT_FALSE(dx.empty());
  EXPECT_EQ(dx.front().fault_class, FaultClass::kWorkloadImbalance);
}

TEST_F(DaemonAgentScripted, RetentionDropsObservationsPastTheStoreMaxAge) {
  config_.agent.retention_interval_ns = kSec;
  auto agent = AgentWithAStepPastMaxAge();
  ASSERT_NE(agent, nullptr);
  agent->Start();
  for (int i = 0; i < 500 && agent->stats().observations_inserted < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  clock_.Advance(2 * kSec);  // retention is due on the monotonic clock
  for (int i = 0; i < 500 && agent->stats().retention_runs == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_NE(log_.str().find("store retention: 1 observations"), std::string::npos) << log_.str();
  auto store = Store::Open(config_.agent.store_path);
  ASSERT_TRUE(store.ok());
  auto stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->observations, 1);
}

TEST_F(DaemonAgentScripted, StoreThatCannotOpenIsAnError) {
  config_.agent.store_path = dir_.File("no/such/dir/store.db");
  std::vector<std::unique_ptr<AgentSource>> none;
  auto agent = Agent::CreateWithSources(config_, std::move(none), clock_, logger_);
  EXPECT_FALSE(agent.ok());
}

}  // namespace
// RunDue: the daemon's schedule on the caller's thread (the simulator's lockstep).
TEST_F(DaemonAgentScripted, RunDuePollsEachSourceOnItsOwnIntervalByTheClock) {
  config_.kmsg.interval_ns = kSec;
  config_.nvml.interval_ns = 5 * kSec;
  config_.agent.evaluate_interval_ns = 2 * kSec;
  config_.agent.max_backoff_ns = 8 * kSec;
  auto fast = std::make_unique<ScriptedSource>("kmsg", Layer::kOs);
  auto slow = std::make_unique<ScriptedSource>("nvml", Layer::kGpu);
  auto broken = std::make_unique<ScriptedSource>("sysfs", Layer::kFabric);
  ScriptedSource* f = fast.get();
  ScriptedSource* s = slow.get();
  ScriptedSource* b = broken.get();
  config_.sysfs.interval_ns = kSec;
  for (int i = 0; i < 20; ++i) b->Add(Status(StatusCode::kUnavailable, "no sysfs"));
  std::vector<std::unique_ptr<AgentSource>> sources;
  sources.push_back(std::move(fast));
  sources.push_back(std::move(slow));
  sources.push_back(std::move(broken));
  auto agent = Agent::CreateWithSources(config_, std::move(sources), clock_, logger_);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  int evaluated_ticks = 0;
  for (int t = 0; t <= 15; ++t) {  // 16 ticks of 1 s
    bool evaluated = false;
    ASSERT_TRUE((*agent)->RunDue(&evaluated).ok());
    evaluated_ticks += evaluated;
    clock_.Advance(kSec);
  }
  EXPECT_EQ(f->polls, 16);         // every second
  EXPECT_EQ(s->polls, 4);          // t = 0, 5, 10, 15
  EXPECT_EQ(b->polls, 5);          // failing: back-off 1, 2, 4, 8 s -> t = 0, 1, 3, 7, 15
  EXPECT_EQ(evaluated_ticks, 16);  // a poll happened every tick, so each evaluated
  EXPECT_EQ((*agent)->stats().evaluations, 16u);
}

TEST_F(DaemonAgentScripted, RunDueWithNothingToPollEvaluatesOnTheEvaluateInterval) {
  config_.workload.interval_ns = 100 * kSec;
  config_.agent.evaluate_interval_ns = 3 * kSec;
  auto agent = NewAgent(std::make_unique<ScriptedSource>());
  ASSERT_NE(agent, nullptr);
  std::vector<int> evaluated_at;
  for (int t = 0; t <= 9; ++t) {
    bool evaluated = false;
    ASSERT_TRUE(agent->RunDue(&evaluated).ok());
    if (evaluated) evaluated_at.push_back(t);
    clock_.Advance(kSec);
  }
  EXPECT_EQ(evaluated_at, (std::vector<int>{0, 3, 6, 9}));  // t=0 also polled the source
}

// RunDue applies the store's retention as the evaluator thread does: an interval after the
// first evaluation, then every interval, with the age limit on the clock's wall time.
TEST_F(DaemonAgentScripted, RunDueAppliesTheStoresRetentionOnItsInterval) {
  config_.agent.retention_interval_ns = 10 * kSec;
  config_.agent.evaluate_interval_ns = kSec;
  config_.workload.interval_ns = kSec;
  auto agent = AgentWithAStepPastMaxAge();
  ASSERT_NE(agent, nullptr);
  std::vector<uint64_t> runs;
  for (int t = 0; t <= 25; ++t) {
    ASSERT_TRUE(agent->RunDue(nullptr, Agent::DueEvaluation::kAsTheDaemon).ok());
    runs.push_back(agent->stats().retention_runs);
    clock_.Advance(kSec);
  }
  EXPECT_EQ(runs[9], 0u);
  EXPECT_EQ(runs[10], 1u);
  EXPECT_EQ(runs[19], 1u);
  EXPECT_EQ(runs[20], 2u);
  EXPECT_EQ(runs[25], 2u);
  ASSERT_TRUE(agent->Stop().ok());
  auto store = Store::Open(config_.agent.store_path);
  ASSERT_TRUE(store.ok());
  auto stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->observations, 1);  // the 40-day-old one is gone
}

}  // namespace faultline::daemon
