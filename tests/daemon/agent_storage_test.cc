// What the agent promises about its store (docs/agent.md): a full disk loses nothing
// (the batch the store refused is held and the source waits, so its cursor never runs
// past an uncommitted batch), findings and diagnoses are stored when they appear or
// change and never again only because an evaluation ran (also across restarts), and
// re-reading an identical kernel log adds no rows.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <sstream>

#include "daemon/agent.h"
#include "daemon/pipeline.h"
#include "daemon/sources.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::AppendText;
using testing::kSec;
using testing::kT0;
using testing::QuietConfig;
using testing::ScratchDir;
using testing::ScriptedSource;
using testing::Step;

// `n` distinct XID 13 lines in dmesg form (monotonic time only), GPUs and pids varied.
std::string XidLines(int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i) {
    char line[320];
    std::snprintf(line, sizeof line,
                  "[%6d.%06d] NVRM: Xid (PCI:0000:%02x:00): 13, pid=%d, name=trainer_%d, Graphics SM Warp "
                  "Exception on (GPC %d, TPC %d, SM 0): Out Of Range Address\n",
                  1000 + i, 1000 + i, i % 2 == 0 ? 0x3b : 0xb5, 10000 + i, i % 7, i % 8, i % 4);
    out += line;
  }
  return out;
}

std::unique_ptr<Store> OpenStore(const std::string& path) {
  auto store = Store::Open(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

int64_t Count(const std::string& path, int64_t StoreStats::*field) {
  auto store = Store::Open(path);
  if (!store.ok()) return -1;
  auto stats = (*store)->Stats();
  return stats.ok() ? (*stats).*field : -1;
}

class DaemonAgentStorage : public ::testing::Test {
 protected:
  // Booted ~3 h ago, so the log's "[ 1000.0]".."[ 1800.0]" lines are in the past.
  DaemonAgentStorage() : dir_("storage"), clock_(kT0, 10'000 * kSec), logger_(log_, LogLevel::kDebug, clock_) {
    config_ = QuietConfig(dir_);
    config_.isolate.window_ns = 3650LL * 86400 * kSec;
  }

  // An agent over an already open store, reading the kernel log `log` from `cursor`.
  std::unique_ptr<Agent> KmsgAgent(std::unique_ptr<Store> store, const std::string& log,
                                   std::optional<std::string> cursor) {
    std::vector<std::unique_ptr<AgentSource>> sources;
    sources.push_back(MakeKmsgFileSource(log, "node7", clock_, std::move(cursor)));
    auto agent = Agent::CreateWithStore(config_, std::move(store), std::move(sources), clock_, logger_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    return agent.ok() ? std::move(agent).value() : nullptr;
  }

  // What reading `log` whole, with room to spare, stores: (observations, cursor).
  std::pair<int64_t, std::string> Control(const std::string& log) {
    const std::string path = dir_.File("control.db");
    auto agent = KmsgAgent(OpenStore(path), log, std::nullopt);
    EXPECT_TRUE(agent->RunOnce().ok());
    EXPECT_TRUE(agent->Stop().ok());
    auto store = OpenStore(path);
    return {store->Stats()->observations, store->GetCursor("node7", "kmsg", "file:" + log)->value_or("")};
  }

  ScratchDir dir_;
  FakeClock clock_;
  std::ostringstream log_;
  Logger logger_;
  AgentConfig config_;
};

TEST_F(DaemonAgentStorage, KernelLinesReadWhileTheDiskIsFullAreStoredWhenSpaceComesBack) {
  const std::string log = dir_.File("kern.log");
  const std::string path = dir_.File("store.db");
  AppendText(log, XidLines(0, 10));
  auto owned = OpenStore(path);
  Store* store = owned.get();
  auto agent = KmsgAgent(std::move(owned), log, std::nullopt);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  const int64_t before = store->Stats()->observations;
  ASSERT_GT(before, 0);
  const std::string cursor_before = store->GetCursor("node7", "kmsg", "file:" + log)->value_or("");

  ASSERT_TRUE(store->SetFileSizeLimit(1).ok());  // the disk is full from here on
  AppendText(log, XidLines(10, 400));
  (void)agent->RunOnce();  // fails: the batch is held
  AppendText(log, XidLines(400, 800));
  (void)agent->RunOnce();  // still full: the held batch is retried, the file is not read on
  EXPECT_GE(agent->stats().store_failures, 2u);
  EXPECT_EQ(store->Stats()->observations, before);  // nothing half-stored
  EXPECT_EQ(store->GetCursor("node7", "kmsg", "file:" + log)->value_or(""), cursor_before);
  EXPECT_NE(log_.str().find("pausing it until they are stored"), std::string::npos) << log_.str();

  ASSERT_TRUE(store->SetFileSizeLimit(0).ok());  // space came back
  (void)agent->RunOnce();
  const auto [expected, expected_cursor] = Control(log);
  EXPECT_EQ(store->Stats()->observations, expected);  // every line, once
  EXPECT_EQ(store->GetCursor("node7", "kmsg", "file:" + log)->value_or(""), expected_cursor);
  EXPECT_NE(log_.str().find("held batch stored"), std::string::npos);
  (void)agent->Stop();  // returns the full-disk error: the agent's first error stays reported
}

TEST_F(DaemonAgentStorage, RestartDuringAFullDiskRereadsFromTheLastCommittedCursor) {
  const std::string log = dir_.File("kern.log");
  const std::string path = dir_.File("store.db");
  AppendText(log, XidLines(0, 10));
  {
    auto owned = OpenStore(path);
    Store* store = owned.get();
    auto agent = KmsgAgent(std::move(owned), log, std::nullopt);
    ASSERT_TRUE(agent->RunOnce().ok());
    ASSERT_TRUE(store->SetFileSizeLimit(1).ok());
    AppendText(log, XidLines(10, 500));
    (void)agent->RunOnce();
    (void)agent->Stop();  // stopped with the batch still held
  }
  EXPECT_NE(log_.str().find("never stored"), std::string::npos) << log_.str();
  // The next start, with space: the source resumes from the stored (older) cursor.
  auto owned = OpenStore(path);
  Store* store = owned.get();
  auto cursor = store->GetCursor("node7", "kmsg", "file:" + log);
  ASSERT_TRUE(cursor.ok() && cursor->has_value());
  auto agent = KmsgAgent(std::move(owned), log, *cursor);
  ASSERT_TRUE(agent->RunOnce().ok());
  const int64_t stored = store->Stats()->observations;
  ASSERT_TRUE(agent->Stop().ok());
  EXPECT_EQ(stored, Control(log).first);
}

TEST_F(DaemonAgentStorage, AHeldBatchIsRetriedAloneAndTheSourceWaits) {
  const std::string path = dir_.File("store.db");
  auto owned_store = OpenStore(path);
  Store* store = owned_store.get();
  auto owned = std::make_unique<ScriptedSource>();
  ScriptedSource* source = owned.get();
  SourceBatch big;
  for (int i = 0; i < 600; ++i) big.observations.push_back(Step(kT0 + i * kSec, 1.0));
  big.cursors = {{"node7", "workload", "pos", "600"}};
  SourceBatch small;
  small.observations = {Step(kT0 + 1000 * kSec, 1.0)};
  small.cursors = {{"node7", "workload", "pos", "601"}};
  source->Add(big);
  source->Add(small);
  std::vector<std::unique_ptr<AgentSource>> sources;
  sources.push_back(std::move(owned));
  auto agent = Agent::CreateWithStore(config_, std::move(owned_store), std::move(sources), clock_, logger_);
  ASSERT_TRUE(agent.ok());
  ASSERT_TRUE(store->SetFileSizeLimit(1).ok());
  for (int i = 0; i < 3; ++i) (void)(*agent)->RunOnce();
  // Polled once: while its batch is held the source is not asked for more, so the small
  // batch's cursor (601) can never be committed ahead of the big one.
  EXPECT_EQ(source->polls.load(), 1);
  EXPECT_FALSE(store->GetCursor("node7", "workload", "pos")->has_value());
  ASSERT_TRUE(store->SetFileSizeLimit(0).ok());
  (void)(*agent)->RunOnce();
  EXPECT_EQ(store->Stats()->observations, 601);
  EXPECT_EQ(store->GetCursor("node7", "workload", "pos")->value_or(""), "601");
  EXPECT_EQ((*agent)->stats().observations_inserted, 601u);
}

// XID 13 exceptions of two processes on one GPU in the same second (the log's time has
// whole seconds), each a GPC/TPC line and an ESR line: two distinct findings of one class
// on one component that began in the same instant (what used to give two findings one
// key, so each evaluation stored them again in turn), plus unrelated faults.
constexpr char kBusyLog[] =
    "Mar  1 09:58:05 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics SM Warp "
    "Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n"
    "Mar  1 09:58:05 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics Exception: ESR "
    "0x505648=0x102000e 0x505650=0x0 0x505644=0xd3eff2 0x50564c=0x7f\n"
    "Mar  1 09:58:05 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=5151, name=train.py, Graphics SM Global "
    "Exception on (GPC 4, TPC 2, SM 1): Multiple Warp Errors\n"
    "Mar  1 09:58:05 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=5151, name=train.py, Graphics Exception: ESR "
    "0x524e48=0x4000000 0x524e50=0x20 0x524e44=0x1e0000 0x524e4c=0x0\n"
    "Mar  1 09:58:40 node7 kernel: NVRM: Xid (PCI:0000:b5:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
    "off the bus.\n"
    "Mar  1 09:59:10 node7 kernel: NVRM: Xid (PCI:0000:1a:00): 31, pid=777, name=infer, Ch 00000008, intr "
    "10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. Fault is of type "
    "FAULT_PDE ACCESS_TYPE_READ\n"
    "Mar  1 09:59:11 node7 kernel: NVRM: Xid (PCI:0000:1a:00): 31, pid=778, name=infer, Ch 00000008, intr "
    "10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34570000. Fault is of type "
    "FAULT_PDE ACCESS_TYPE_READ\n";

TEST_F(DaemonAgentStorage, EvaluatingAgainWithoutNewInputStoresNothing) {
  config_.kmsg.enabled = true;
  config_.kmsg.path = dir_.File("kern.log");
  AppendText(config_.kmsg.path, std::string(kBusyLog) + XidLines(0, 60));
  int64_t findings = 0;
  {
    auto agent = Agent::Create(config_, clock_, logger_);
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    ASSERT_TRUE((*agent)->RunOnce().ok());
    findings = (*agent)->stats().findings_stored;
    ASSERT_GE(findings, 3u);
    for (int i = 0; i < 25; ++i) {
      clock_.Advance(5 * kSec);
      ASSERT_TRUE((*agent)->RunOnce().ok());
    }
    EXPECT_EQ((*agent)->stats().findings_stored, static_cast<uint64_t>(findings));
    EXPECT_EQ((*agent)->stats().diagnoses_stored, 1u);
    ASSERT_TRUE((*agent)->Stop().ok());
  }
  EXPECT_EQ(Count(config_.agent.store_path, &StoreStats::findings), findings);
  // Across a restart too: the warm start compares with what was stored.
  clock_.Advance(60 * kSec);
  {
    auto agent = Agent::Create(config_, clock_, logger_);
    ASSERT_TRUE(agent.ok());
    for (int i = 0; i < 5; ++i) {
      clock_.Advance(5 * kSec);
      ASSERT_TRUE((*agent)->RunOnce().ok());
    }
    EXPECT_EQ((*agent)->stats().findings_stored, 0u);
    EXPECT_EQ((*agent)->stats().diagnoses_stored, 0u);
    ASSERT_TRUE((*agent)->Stop().ok());
  }
  EXPECT_EQ(Count(config_.agent.store_path, &StoreStats::findings), findings);
  EXPECT_EQ(Count(config_.agent.store_path, &StoreStats::diagnoses), 1);
  // Every stored finding is a distinct one: no key holds two rows.
  auto store = OpenStore(config_.agent.store_path);
  auto rows = store->ListFindings({});
  ASSERT_TRUE(rows.ok());
  std::set<std::string> keys;
  for (const auto& row : rows->rows) EXPECT_TRUE(keys.insert(FindingKey(row.value)).second) << row.value.summary;
}

TEST_F(DaemonAgentStorage, NoFaultDiagnosisIsNotStoredAgainAtEveryStart) {
  for (int start = 0; start < 3; ++start) {
    auto agent = Agent::CreateWithSources(config_, {}, clock_, logger_);
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    ASSERT_TRUE((*agent)->RunOnce().ok());
    const auto dx = (*agent)->LastDiagnoses();
    ASSERT_FALSE(dx.empty());
    EXPECT_EQ(dx.front().fault_class, FaultClass::kNone);
    ASSERT_TRUE((*agent)->Stop().ok());
    clock_.Advance(3600 * kSec);
  }
  EXPECT_EQ(Count(config_.agent.store_path, &StoreStats::diagnoses), 1);
}

TEST_F(DaemonAgentStorage, ReadingAnIdenticalCopyOfAKernelLogAddsNoRows) {
  // dmesg form: dated from the boot-time estimate, which differs a little at each start.
  const std::string text = XidLines(0, 40) + std::string(kBusyLog);
  const std::string first = dir_.File("kern.log");
  const std::string copy = dir_.File("kern.log.copy");
  AppendText(first, text);
  AppendText(copy, text);
  int64_t stored = 0;
  int64_t findings = 0;
  {
    auto owned = OpenStore(dir_.File("store.db"));
    Store* store = owned.get();
    auto agent = KmsgAgent(std::move(owned), first, std::nullopt);
    ASSERT_TRUE(agent->RunOnce().ok());
    stored = store->Stats()->observations;
    findings = store->Stats()->findings;
    ASSERT_TRUE(agent->Stop().ok());
  }
  ASSERT_GT(stored, 40);
  // The next start: wall clock - boot clock comes out 1.234 us different.
  clock_.Advance(600 * kSec);
  clock_.Set(clock_.NowNs() + 1234);
  auto owned = OpenStore(dir_.File("store.db"));
  Store* store = owned.get();
  auto agent = KmsgAgent(std::move(owned), copy, std::nullopt);  // no cursor for the copy
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_EQ(store->Stats()->observations, stored);
  EXPECT_EQ(agent->stats().observations_inserted, 0u);
  // Nor are the findings stored again: the lines the store already had (and the warm
  // start replayed) are not counted a second time.
  EXPECT_EQ(agent->stats().findings_stored, 0u);
  EXPECT_EQ(store->Stats()->findings, findings);
  ASSERT_TRUE(agent->Stop().ok());
}

Finding UserFault(const std::string& first_line, int64_t at) {
  Finding f;
  f.layer = Layer::kOs;
  f.fault_class = FaultClass::kUserApplication;
  f.component = ComponentRef{ComponentType::kGpu, "3", {{"bdf", "0000:3b:00.0"}}};
  f.first_ns = f.last_ns = at;
  Evidence e;
  e.time_ns = at;
  e.component = f.component.Id();
  e.text = first_line;
  f.evidence.push_back(e);
  return f;
}

TEST(DaemonFindingKey, DistinctFindingsThatBeganTogetherHaveDistinctKeys) {
  const Finding gpc = UserFault("Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)", kT0);
  const Finding esr = UserFault("Graphics Exception: ESR 0x505648=0x102000e", kT0);
  EXPECT_NE(FindingKey(gpc), FindingKey(esr));
  // A text cannot pose as another field.
  Finding a = UserFault("x", kT0);
  a.component.name = "3|1";
  Finding b = UserFault("1|x", kT0);
  b.component.name = "3";
  EXPECT_NE(FindingKey(a), FindingKey(b));
}

TEST(DaemonFindingKey, AGrowingFindingKeepsItsKey) {
  const Finding first = UserFault("Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)", kT0);
  Finding later = first;
  later.last_ns += 30 * kSec;
  later.count = 7;
  later.severity = Severity::kWarning;
  later.summary = "now repeating";
  later.attrs["process"] = "python3";
  Evidence more;
  more.time_ns = later.last_ns;
  more.text = "another line";
  later.evidence.push_back(more);
  EXPECT_EQ(FindingKey(first), FindingKey(later));
}

}  // namespace
}  // namespace faultline::daemon
