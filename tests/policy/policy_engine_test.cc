#include <gtest/gtest.h>

#include "policy/engine.h"
#include "policy/identity.h"
#include "policy_fakes.h"
#include "store/store.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;
using testing::FakeActuator;
using testing::FakeFleet;
using testing::FakePlatform;
using testing::MakeDiagnosis;

constexpr int64_t kT0 = 1'764'400'000LL * 1'000'000'000LL;
constexpr int64_t kSec = 1'000'000'000LL;

class PolicyEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(":memory:");
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
  }
  Row<Diagnosis> Put(const Diagnosis& d) {
    auto id = store_->PutDiagnosis("gpu-7", d, d.last_ns);
    EXPECT_TRUE(id.ok());
    return Row<Diagnosis>{*id, "gpu-7", d};
  }
  // Settling has its own tests (policy_settle_test.cc): these act at the first look.
  Engine MakeEngine(PolicyConfig c) {
    c.settle_ns = 0;
    return Engine(std::move(c), *store_, "gpu-7", {&slurm_, &hook_}, &fleet_);
  }
  std::vector<ActionRecord> Rows() {
    RecordQuery q;
    q.limit = 0;
    auto r = store_->ListActions(q);
    std::vector<ActionRecord> out;
    for (auto& row : r->rows) out.push_back(row.value);
    return out;
  }
  size_t RowsWith(ActionClass c, const std::string& state) {
    size_t n = 0;
    for (const auto& r : Rows()) {
      n += r.attrs.count("class") && r.attrs.at("class") == actions::ToString(c) && r.attrs.at("state") == state;
    }
    return n;
  }
  static PolicyConfig Enabled(std::set<ActionClass> classes) {
    PolicyConfig c;
    c.enable = std::move(classes);
    return c;
  }
  Diagnosis Hbm(int64_t first = kT0) {
    return MakeDiagnosis(FaultClass::kHbmUncorrectable, Action::kRma, GpuComponent("3"), first);
  }

  std::unique_ptr<Store> store_;
  FakePlatform platform_;
  FakeActuator slurm_{platform_, {ActionClass::kDrain, ActionClass::kCordon}};
  FakeActuator hook_{platform_, {ActionClass::kWebhook, ActionClass::kNotifyUser}, false};
  FakeFleet fleet_;
};

TEST_F(PolicyEngineTest, DryRunByDefaultStoresWhatItWouldDo) {
  Engine e = MakeEngine(PolicyConfig{});
  auto row = Put(Hbm());
  auto out = e.OnDiagnoses({row}, kT0 + 70 * kSec);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(slurm_.applied.empty());
  EXPECT_TRUE(hook_.applied.empty());
  ASSERT_EQ(RowsWith(ActionClass::kDrain, "dry_run"), 1u);
  for (const auto& r : Rows()) {
    EXPECT_TRUE(r.dry_run);
    EXPECT_EQ(r.diagnosis_id, row.id);
    EXPECT_FALSE(r.attrs.at("rule").empty());
    EXPECT_EQ(r.attrs.at("key"), DecisionKey("gpu-7", *actions::ParseActionClass(r.attrs.at("class")), row.value));
  }
  // The dry run says what it would do, with the drain reason.
  bool said = false;
  for (const auto& r : Rows())
    said |= r.outcome.find("would drain gpu-7 (faultline: hbm_uncorrectable gpu/3 gpu-7/d") != std::string::npos;
  EXPECT_TRUE(said);
  // Again: nothing new.
  const size_t before = Rows().size();
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 80 * kSec).ok());
  EXPECT_EQ(Rows().size(), before);
}

TEST_F(PolicyEngineTest, EnabledDrainIsDecidedThenDoneWithEvidence) {
  Finding f;
  f.layer = Layer::kGpu;
  f.component = GpuComponent("3");
  f.fault_class = FaultClass::kHbmUncorrectable;
  f.first_ns = kT0;
  f.last_ns = kT0 + 10 * kSec;
  auto fid = store_->PutFinding("gpu-7", f);
  ASSERT_TRUE(fid.ok());
  Engine e = MakeEngine(Enabled({ActionClass::kDrain}));
  auto row = Put(Hbm());
  auto out = e.OnDiagnoses({row}, kT0 + 70 * kSec);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(slurm_.applied.size(), 1u);
  EXPECT_EQ(slurm_.applied[0].target_node, "gpu-7");
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "decided"), 1u);
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "done"), 1u);
  for (const auto& r : Rows()) {
    if (r.attrs.at("class") != "drain") continue;
    EXPECT_FALSE(r.dry_run);
    EXPECT_EQ(r.attrs.at("rule"), "plan:hbm_uncorrectable");
    EXPECT_EQ(r.attrs.at("evidence"), "finding:" + std::to_string(*fid));
    EXPECT_EQ(r.reason, "faultline: hbm_uncorrectable gpu/3 gpu-7/d" + std::to_string(row.id));
  }
  // The other classes stay dry runs.
  EXPECT_EQ(RowsWith(ActionClass::kRmaBundle, "dry_run"), 1u);
}

TEST_F(PolicyEngineTest, SameFaultAgainRestartAndNewRowIdsGiveOneAction) {
  {
    Engine e = MakeEngine(Enabled({ActionClass::kDrain, ActionClass::kWebhook}));
    auto row = Put(Hbm());
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(e.OnDiagnoses({row, row}, kT0 + (70 + i) * kSec).ok());
    // The same content stored again under a new row id (a re-evaluation after a restart).
    auto again = Put(Hbm());
    ASSERT_TRUE(e.OnDiagnoses({again}, kT0 + 600 * kSec).ok());
  }
  // A restart: a new engine over the same store.
  Engine e2 = MakeEngine(Enabled({ActionClass::kDrain, ActionClass::kWebhook}));
  ASSERT_TRUE(e2.Start(kT0 + 700 * kSec).ok());
  auto third = Put(Hbm());
  ASSERT_TRUE(e2.OnDiagnoses({third}, kT0 + 700 * kSec).ok());
  // A restart can re-derive the finding with a later start: same fault, same part.
  auto later_start = Put(Hbm(kT0 + 300 * kSec));
  ASSERT_TRUE(e2.OnDiagnoses({later_start}, kT0 + 800 * kSec).ok());
  EXPECT_EQ(slurm_.applied.size(), 1u);
  EXPECT_EQ(hook_.applied.size(), 1u);
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "done"), 1u);
  EXPECT_EQ(RowsWith(ActionClass::kWebhook, "done"), 1u);
}

TEST_F(PolicyEngineTest, CooldownHoldsDisruptionNotNewsAndEndsWithoutANewDiagnosis) {
  PolicyConfig c = Enabled({ActionClass::kDrain, ActionClass::kWebhook});
  c.cooldown_ns = 600 * kSec;
  Engine e = MakeEngine(c);
  auto a = Put(Hbm());
  ASSERT_TRUE(e.OnDiagnoses({a}, kT0 + 100 * kSec).ok());
  ASSERT_EQ(hook_.applied.size(), 1u);
  ASSERT_EQ(RowsWith(ActionClass::kDrain, "done"), 1u);
  // A refined diagnosis of the same part within the cool-down: its notification is held.
  auto refined = Put(MakeDiagnosis(FaultClass::kRowRemapExhausted, Action::kRma, Hbm().component, kT0 + 120 * kSec));
  ASSERT_TRUE(e.OnDiagnoses({refined}, kT0 + 130 * kSec).ok());
  EXPECT_EQ(hook_.applied.size(), 1u);
  // A different part within the cool-down: its drain is held, stored once however often it
  // is seen; its notification is news and goes at once.
  auto b = Put(MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("5"), kT0 + 150 * kSec));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(e.OnDiagnoses({b}, kT0 + (200 + i) * kSec).ok());
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "held_by_cooldown"), 2u);  // the refined one's and this one's
  EXPECT_EQ(hook_.applied.size(), 2u);
  EXPECT_EQ(RowsWith(ActionClass::kWebhook, "held_by_cooldown"), 1u);  // the refined one's only
  // After it, held decisions are carried out even though nothing new was diagnosed.
  ASSERT_TRUE(e.OnDiagnoses({}, kT0 + 701 * kSec).ok());
  // One held drain goes; it starts a new cool-down that holds the other.
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "done"), 2u);
  EXPECT_EQ(hook_.applied.size(), 3u);  // and the refined part's notification, held until now
}

TEST_F(PolicyEngineTest, BreakerHoldsDisruptiveActionsWithTheReason) {
  PolicyConfig c = Enabled({ActionClass::kDrain, ActionClass::kWebhook});
  c.breaker_max_nodes = 3;
  c.breaker_max_percent = 50;
  c.breaker_window_ns = 3600 * kSec;
  const int64_t now = kT0 + 1000 * kSec;
  fleet_.state.known_nodes = 200;
  // Three other nodes drained by faultline within the window, one long ago (not counted).
  fleet_.state.faultline_drains = {
      {"n1", now - 60 * kSec}, {"n2", now - 120 * kSec}, {"n3", now - 10 * kSec}, {"old", now - 7200 * kSec}};
  Engine e = MakeEngine(c);
  auto row = Put(Hbm());
  ASSERT_TRUE(e.OnDiagnoses({row}, now).ok());
  EXPECT_TRUE(slurm_.applied.empty());
  EXPECT_EQ(hook_.applied.size(), 1u);  // not disruptive: goes ahead
  ASSERT_EQ(RowsWith(ActionClass::kDrain, "held_by_breaker"), 1u);
  for (const auto& r : Rows()) {
    if (r.attrs.at("state") == "held_by_breaker") {
      EXPECT_NE(r.outcome.find("3 node(s) taken out by faultline in the last 3600s (limit 3 of 200 known nodes)"),
                std::string::npos)
          << r.outcome;
    }
  }
  // Held while tripped, without a new row per evaluation; goes ahead once the window passed.
  ASSERT_TRUE(e.OnDiagnoses({row}, now + 10 * kSec).ok());
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "held_by_breaker"), 1u);
  fleet_.state.faultline_drains.pop_back();
  fleet_.state.faultline_drains.pop_back();
  ASSERT_TRUE(e.OnDiagnoses({}, now + 20 * kSec).ok());  // looked at again without a new diagnosis
  EXPECT_EQ(slurm_.applied.size(), 1u);
}

TEST_F(PolicyEngineTest, BreakerLimitIsAPercentOfSmallFleetsAndFailsClosed) {
  PolicyConfig c;
  EXPECT_EQ(BreakerLimit(c, 2000), 3);  // defaults: min(3, 2% of 2000 = 40)
  EXPECT_EQ(BreakerLimit(c, 100), 2);   // 2% of 100
  EXPECT_EQ(BreakerLimit(c, 8), 1);     // one node may always go
  EXPECT_EQ(BreakerLimit(c, 0), 1);
  c.breaker_max_nodes = 0;
  EXPECT_EQ(BreakerLimit(c, 2000), 0);  // never
  // The fleet cannot be read: disruptive actions fail (retried), never done blind.
  fleet_.fail_with = Status(StatusCode::kUnavailable, "sinfo failed: Unable to contact slurm controller");
  Engine e = MakeEngine(Enabled({ActionClass::kDrain}));
  ASSERT_TRUE(e.OnDiagnoses({Put(Hbm())}, kT0 + 100 * kSec).ok());
  EXPECT_TRUE(slurm_.applied.empty());
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "failed"), 1u);
  // No fleet view at all: held.
  Engine blind(Enabled({ActionClass::kDrain}), *store_, "gpu-7", {&slurm_}, nullptr);
  ASSERT_TRUE(blind
                  .OnDiagnoses({Put(MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("4"), kT0))},
                               kT0 + 100 * kSec)
                  .ok());
  EXPECT_TRUE(slurm_.applied.empty());
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "held_by_breaker"), 1u);
}

TEST_F(PolicyEngineTest, StormOfFaultingNodesIsCappedByTheBreaker) {
  // 30 of 100 nodes fault at once, each with its own engine over a shared fleet view (as
  // with Slurm): no more drains than the breaker allows.
  PolicyConfig c = Enabled({ActionClass::kDrain});
  c.breaker_max_nodes = 3;
  c.breaker_max_percent = 2;
  fleet_.state.known_nodes = 100;
  const int64_t now = kT0 + 1000 * kSec;
  int drained = 0;
  for (int n = 0; n < 30; ++n) {
    const std::string node = "node-" + std::to_string(n);
    FakePlatform platform;
    FakeActuator act(platform, {ActionClass::kDrain});
    Engine e(c, *store_, node, {&act}, &fleet_);
    auto id = store_->PutDiagnosis(node, Hbm(), now);
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(e.OnDiagnoses({Row<Diagnosis>{*id, node, Hbm()}}, now + n * kSec).ok());
    if (!act.applied.empty()) {
      ++drained;
      fleet_.state.faultline_drains.push_back({node, now + n * kSec});
    }
  }
  EXPECT_EQ(drained, 2);  // min(3, 2% of 100)
}

TEST_F(PolicyEngineTest, FailuresAreStoredRetriedWithBackoffNeverDone) {
  PolicyConfig c = Enabled({ActionClass::kDrain});
  c.retry_initial_ns = 30 * kSec;
  c.retry_max_ns = 100 * kSec;
  slurm_.fail_with = Status(StatusCode::kUnavailable, "scontrol failed: Unable to contact slurm controller");
  Engine e = MakeEngine(c);
  auto row = Put(Hbm());
  int64_t now = kT0 + 100 * kSec;
  ASSERT_TRUE(e.OnDiagnoses({row}, now).ok());
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "failed"), 1u);
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "done"), 0u);
  const LedgerEntry* entry = e.ledger().Latest(DecisionKey("gpu-7", ActionClass::kDrain, row.value));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->state, State::kFailed);
  EXPECT_EQ(entry->record.attrs.at("error"), "scontrol failed: Unable to contact slurm controller");
  EXPECT_EQ(entry->next_retry_ns, now + 30 * kSec);
  // Not before it is due.
  ASSERT_TRUE(e.OnDiagnoses({row}, now + 29 * kSec).ok());
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "failed"), 1u);
  // Due: retried (the diagnosis need not be current any more), back-off doubles, capped.
  ASSERT_TRUE(e.OnDiagnoses({}, now + 30 * kSec).ok());
  entry = e.ledger().Latest(DecisionKey("gpu-7", ActionClass::kDrain, row.value));
  EXPECT_EQ(entry->attempt, 2);
  EXPECT_EQ(entry->next_retry_ns, now + 30 * kSec + 60 * kSec);
  ASSERT_TRUE(e.OnDiagnoses({}, now + 90 * kSec).ok());
  entry = e.ledger().Latest(DecisionKey("gpu-7", ActionClass::kDrain, row.value));
  EXPECT_EQ(entry->next_retry_ns, now + 90 * kSec + 100 * kSec);
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "done"), 0u);
  // The controller is back: done, once.
  slurm_.fail_with = Status::Ok();
  ASSERT_TRUE(e.OnDiagnoses({row}, now + 190 * kSec).ok());
  ASSERT_TRUE(e.OnDiagnoses({row}, now + 500 * kSec).ok());
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "done"), 1u);
}

TEST_F(PolicyEngineTest, NeverTakesOverSomeoneElsesDrain) {
  platform_.Set("gpu-7/drain", "operator");
  Engine e = MakeEngine(Enabled({ActionClass::kDrain}));
  ASSERT_TRUE(e.OnDiagnoses({Put(Hbm())}, kT0 + 100 * kSec).ok());
  EXPECT_TRUE(slurm_.applied.empty());
  EXPECT_EQ(platform_.Owner("gpu-7/drain"), "operator");
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "refused"), 1u);
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "done"), 0u);
}

TEST_F(PolicyEngineTest, SafetyRefusalsAreStoredWithTheirRule) {
  Engine e = MakeEngine(Enabled({ActionClass::kDrain, ActionClass::kNotifyUser, ActionClass::kCordon}));
  // An isolator that (wrongly) asks to drain for a user-program fault.
  auto row = Put(MakeDiagnosis(FaultClass::kUserApplication, Action::kDrain, GpuComponent("0"), kT0));
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 100 * kSec).ok());
  EXPECT_TRUE(slurm_.applied.empty());
  ASSERT_EQ(hook_.applied.size(), 1u);
  EXPECT_EQ(hook_.applied[0].action_class, ActionClass::kNotifyUser);
  ASSERT_EQ(RowsWith(ActionClass::kDrain, "refused"), 1u);
  for (const auto& r : Rows()) {
    if (r.attrs.at("state") == "refused") {
      EXPECT_EQ(r.attrs.at("rule"), "user_program_never_disruptive");
    }
  }
}

TEST_F(PolicyEngineTest, NoActuatorIsStoredNotDone) {
  Engine e(Enabled({ActionClass::kResetGpu, ActionClass::kDrain}), *store_, "gpu-7", {&slurm_}, &fleet_);
  auto row = Put(MakeDiagnosis(FaultClass::kRowRemapPending, Action::kResetGpu, GpuComponent("1"), kT0));
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 100 * kSec).ok());
  EXPECT_EQ(RowsWith(ActionClass::kResetGpu, "no_actuator"), 1u);
  EXPECT_EQ(RowsWith(ActionClass::kDrain, "done"), 1u);
}

}  // namespace
}  // namespace faultline::policy
