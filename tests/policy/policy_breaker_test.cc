// The breaker's second look (docs/remediation.md "Breaker"): nodes that all read the fleet
// under the limit at the same instant all drain, then each confirms its drain against the
// fleet ordered by (drain time, node name) and undoes it when `limit` or more come first.
// Every engine here is a real policy::Engine over the real Slurm actuator and one in-memory
// Slurm controller (tests/actions/slurm_fake.h) whose drain times the test sets; the engines'
// clock and sleep are injected, so nothing sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "../actions/slurm_fake.h"
#include "actions/slurm.h"
#include "core/clock.h"
#include "daemon/config.h"
#include "policy/engine.h"
#include "policy_fakes.h"
#include "store/store.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;
using actions::testing::FakeSlurm;
using testing::MakeDiagnosis;

constexpr int64_t kSec = 1'000'000'000LL;
constexpr char kSecond0[] = "2026-12-01T18:50:50";  // Slurm prints local time, to the second
constexpr char kSecond1[] = "2026-12-01T18:50:51";

// One slurmctld shared by every engine: serialised like the real one, with the drain's
// reason time chosen by the test (`stamp`, by the drain's arrival number) and faults to inject.
class SharedSlurm final : public ipmi::CommandRunner {
 public:
  Result<std::string> Run(const std::vector<std::string>& argv, const ipmi::CommandOptions& o) override {
    std::lock_guard<std::mutex> lock(mu);
    if (sinfo_down && argv[0] == "sinfo") {
      return Status(StatusCode::kUnavailable, "sinfo failed: Unable to contact slurm controller");
    }
    const bool resume = argv.size() >= 4 && argv[1] == "update" && argv[3] == "state=resume";
    if (resume && resume_down) return Status(StatusCode::kTimeout, "scontrol timed out");
    auto out = fake.Run(argv, o);
    // slurmctld 22.05 on a node in UNKNOWN state: the drain is cleared, the answer is an error.
    if (resume && out.ok() && resume_clears_but_errs) {
      return Status(StatusCode::kUnavailable, "scontrol failed: slurm_update error: Invalid node state specified");
    }
    if (out.ok() && argv.size() >= 4 && argv[1] == "update" && argv[3] == "state=drain") {
      const std::string node = argv[2].substr(9);
      fake.nodes[node].reason_time = stamped[node] = stamp(++drains);
    }
    return out;
  }
  // A drain made by someone outside the engines under test (another node's faultline, an operator).
  void Drain(const std::string& node, const std::string& reason, const std::string& time) {
    std::lock_guard<std::mutex> lock(mu);
    FakeSlurm::Node& n = fake.nodes[node];
    n.drained = true;
    n.reason = reason;
    n.reason_time = time;
  }
  bool FaultlineDrained(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu);
    const FakeSlurm::Node& n = fake.nodes.at(node);
    return n.drained && actions::IsFaultlineReason(n.reason);
  }
  std::string Reason(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu);
    return fake.nodes.at(node).reason;
  }

  std::mutex mu;
  FakeSlurm fake;
  std::function<std::string(int)> stamp = [](int) { return std::string(kSecond0); };
  int drains = 0;
  std::map<std::string, std::string> stamped;  // node -> the time its last drain got
  bool sinfo_down = false;
  bool resume_down = false;
  bool resume_clears_but_errs = false;
};

// std::barrier without the deadlock: a party that never arrives fails the test instead.
class TimedBarrier {
 public:
  explicit TimedBarrier(int parties) : parties_(parties) {}
  bool ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (++arrived_ >= parties_) {
      cv_.notify_all();
      return true;
    }
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return arrived_ >= parties_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int parties_;
  int arrived_ = 0;
};

// One faulting node: its own store holding a drain-worthy diagnosis, and its engine.
struct Node {
  std::string name;
  std::unique_ptr<Store> store;
  std::unique_ptr<actions::SlurmActuator> slurm;
  std::unique_ptr<Engine> engine;
  Row<Diagnosis> row;
};

class PolicyBreakerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t0_ = actions::ParseSlurmTime(kSecond0);
    ASSERT_NE(t0_, 0);
    clock_.Set(t0_);
    for (int i = 0; i < 100; ++i) slurm_.fake.nodes[Name(i)] = {};
  }
  static std::string Name(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "n%03d", i);
    return buf;
  }
  static PolicyConfig Config() {
    PolicyConfig c;
    c.enable = {ActionClass::kDrain, ActionClass::kCordon};
    c.breaker_max_nodes = 2;
    c.breaker_max_percent = 100;
    c.settle_ns = 0;  // the diagnosis' own settling is not under test here
    return c;
  }
  std::unique_ptr<Node> MakeNode(const std::string& name, PolicyConfig c = Config()) {
    auto n = std::make_unique<Node>();
    n->name = name;
    auto s = Store::Open(":memory:");
    EXPECT_TRUE(s.ok());
    n->store = std::move(*s);
    const Diagnosis d = MakeDiagnosis(FaultClass::kHbmUncorrectable, Action::kRma, GpuComponent("3"), t0_ - 600 * kSec);
    auto id = n->store->PutDiagnosis(name, d, d.last_ns);
    EXPECT_TRUE(id.ok());
    n->row = Row<Diagnosis>{*id, name, d};
    n->slurm = std::make_unique<actions::SlurmActuator>(slurm_);
    c.slurm_node = name;
    n->engine =
        std::make_unique<Engine>(c, *n->store, name, std::vector<actions::Actuator*>{n->slurm.get()}, n->slurm.get());
    n->engine->UseClock(&clock_, [this](int64_t ns) { slept_.push_back(ns); });
    return n;
  }
  // The drain decision's outcome of one policy call.
  static std::optional<Outcome> DrainOutcome(const Result<std::vector<Outcome>>& out) {
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return std::nullopt;
    for (const Outcome& o : *out) {
      if (o.decision.action_class == ActionClass::kDrain) return o;
    }
    return std::nullopt;
  }
  int FaultlineDrains() {
    int n = 0;
    for (int i = 0; i < 100; ++i) n += slurm_.FaultlineDrained(Name(i));
    return n;
  }

  int64_t t0_ = 0;
  FakeClock clock_;
  SharedSlurm slurm_;
  std::vector<int64_t> slept_;
};

TEST_F(PolicyBreakerTest, TwentyNodesDrainingAtTheSameInstantKeepExactlyTheLimit) {
  // 20 of 100 nodes fault at once: every pre-check passes before any drain lands, every drain
  // lands before any node confirms (the worst interleaving). slurmctld stamps drains in the
  // order it receives them: the first 8 in one second, the rest in the next.
  constexpr int kNodes = 20;
  slurm_.stamp = [](int arrival) { return std::string(arrival <= 8 ? kSecond0 : kSecond1); };
  std::vector<std::unique_ptr<Node>> nodes;
  for (int i = 0; i < kNodes; ++i) nodes.push_back(MakeNode(Name(i * 5)));  // n000, n005, ... n095
  TimedBarrier checked(kNodes), applied(kNodes);
  std::vector<std::optional<Outcome>> outcomes(kNodes);
  for (auto& n : nodes) {
    n->engine->after_decided = [&](const actions::Decision&) { EXPECT_TRUE(checked.ArriveAndWait()); };
    n->engine->UseClock(&clock_, [&](int64_t) { EXPECT_TRUE(applied.ArriveAndWait()); });
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kNodes; ++i) {
    threads.emplace_back([&, i] { outcomes[i] = DrainOutcome(nodes[i]->engine->OnDiagnoses({nodes[i]->row}, t0_)); });
  }
  for (auto& t : threads) t.join();

  EXPECT_EQ(FaultlineDrains(), 2);
  std::vector<std::string> kept;
  int done = 0, held = 0;
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(outcomes[i].has_value()) << nodes[i]->name;
    if (outcomes[i]->state == State::kDone) {
      ++done;
      kept.push_back(nodes[i]->name);
      EXPECT_TRUE(slurm_.FaultlineDrained(nodes[i]->name));
    } else {
      EXPECT_EQ(outcomes[i]->state, State::kHeldByBreaker) << nodes[i]->name << ": " << outcomes[i]->detail;
      // Ranked third or later; of however many were still drained when it read (the nodes
      // ranked after it may already have undone theirs).
      int rank = 0, of = 0;
      const size_t at = outcomes[i]->detail.find("ranks ");
      ASSERT_NE(at, std::string::npos) << outcomes[i]->detail;
      ASSERT_EQ(std::sscanf(outcomes[i]->detail.c_str() + at, "ranks %d of %d", &rank, &of), 2);
      EXPECT_GE(rank, 3) << outcomes[i]->detail;
      EXPECT_LE(rank, of);
      EXPECT_LE(of, kNodes);
      EXPECT_NE(outcomes[i]->detail.find("limit 2 of 100 known nodes"), std::string::npos) << outcomes[i]->detail;
      EXPECT_NE(outcomes[i]->detail.find("drain undone"), std::string::npos) << outcomes[i]->detail;
      EXPECT_FALSE(slurm_.FaultlineDrained(nodes[i]->name));
      ++held;
    }
  }
  EXPECT_EQ(done, 2);
  EXPECT_EQ(held, kNodes - 2);
  // The two kept are the first two by (drain time, node name), whichever order the drains landed in.
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& [node, time] : slurm_.stamped) order.emplace_back(time, node);
  ASSERT_EQ(order.size(), static_cast<size_t>(kNodes));
  std::sort(order.begin(), order.end());
  EXPECT_EQ(kept, (std::vector<std::string>{order[0].second, order[1].second}));
  EXPECT_EQ(slurm_.drains, kNodes);  // every node did drain: the first look could not stop them

  // Looked at again later (every held decision is): the pre-check now sees the limit reached
  // and nobody drains again.
  const int drains_before = slurm_.drains;
  for (auto& n : nodes) {
    auto again = n->engine->OnDiagnoses({}, t0_ + 60 * kSec);
    ASSERT_TRUE(again.ok());
  }
  EXPECT_EQ(slurm_.drains, drains_before);
  EXPECT_EQ(FaultlineDrains(), 2);
}

// The Slurm actuator with a Finish that records it ran: the part of a drain that cannot be
// undone (Kubernetes' evictions) runs only once the breaker has kept the drain.
class FinishRecording final : public actions::Actuator, public actions::Reverter {
 public:
  explicit FinishRecording(actions::SlurmActuator& inner) : inner_(inner) {}
  bool Handles(ActionClass c) const override { return inner_.Handles(c); }
  Status Apply(const actions::Decision& d) override { return inner_.Apply(d); }
  Result<actions::Observed> Observe(const actions::Decision& d) override { return inner_.Observe(d); }
  Status Revert(const actions::Decision& d) override { return inner_.Revert(d); }
  Status Finish(const actions::Decision& d) override {
    finished.push_back(d.target_node);
    return Status::Ok();
  }
  std::vector<std::string> finished;

 private:
  actions::SlurmActuator& inner_;
};

TEST_F(PolicyBreakerTest, WhatCannotBeUndoneRunsOnlyForADrainTheBreakerKept) {
  for (const std::string name : {"n050", "n005"}) {
    auto me = MakeNode(name);
    FinishRecording recorder(*me->slurm);
    PolicyConfig c = Config();
    c.slurm_node = name;
    Engine engine(c, *me->store, name, {&recorder}, me->slurm.get());
    engine.UseClock(&clock_, [this](int64_t ns) { slept_.push_back(ns); });
    // Two other nodes drain in the same second: n050 ranks third (undone), n005 first (kept).
    engine.after_decided = [&](const actions::Decision&) {
      slurm_.Drain("n010", "faultline: hbm_uncorrectable gpu/0 n010/d7", kSecond0);
      slurm_.Drain("n020", "faultline: gpu_fell_off_bus gpu/1 n020/d9", kSecond0);
    };
    auto out = DrainOutcome(engine.OnDiagnoses({me->row}, t0_));
    ASSERT_TRUE(out.has_value()) << name;
    if (name == "n050") {
      EXPECT_EQ(out->state, State::kHeldByBreaker) << out->detail;
      EXPECT_TRUE(recorder.finished.empty()) << "finished a drain the breaker undid";
    } else {
      EXPECT_EQ(out->state, State::kDone) << out->detail;
      EXPECT_EQ(recorder.finished, std::vector<std::string>{"n005"});
    }
    slurm_.fake.nodes["n010"] = {};
    slurm_.fake.nodes["n020"] = {};
  }
}

TEST_F(PolicyBreakerTest, ANodeRankedOverTheLimitUndoesOnlyItsOwnDrain) {
  auto me = MakeNode("n050");
  // While this node decides, two other nodes drain in the same second with names that sort
  // first, and an operator drains a third node.
  me->engine->after_decided = [&](const actions::Decision&) {
    slurm_.Drain("n010", "faultline: hbm_uncorrectable gpu/0 d7", kSecond0);
    slurm_.Drain("n020", "faultline: gpu_fell_off_bus gpu/1 d9", kSecond0);
    slurm_.Drain("n030", "operator maintenance", kSecond0);
  };
  auto out = DrainOutcome(me->engine->OnDiagnoses({me->row}, t0_));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->state, State::kHeldByBreaker);
  EXPECT_NE(out->detail.find("breaker: this node's drain ranks 3 of 3 taken out by faultline in the last 3600s "
                             "(by drain time, then node name; limit 2 of 100 known nodes); drain undone"),
            std::string::npos)
      << out->detail;
  EXPECT_FALSE(slurm_.FaultlineDrained("n050"));
  EXPECT_TRUE(slurm_.FaultlineDrained("n010"));
  EXPECT_TRUE(slurm_.FaultlineDrained("n020"));
  EXPECT_EQ(slurm_.Reason("n030"), "operator maintenance");
  EXPECT_EQ(slurm_.Reason("n010"), "faultline: hbm_uncorrectable gpu/0 d7");

  // Held: looked at again, the first look holds it without draining.
  me->engine->after_decided = nullptr;
  auto again = DrainOutcome(me->engine->OnDiagnoses({}, t0_ + 60 * kSec));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->state, State::kHeldByBreaker);
  EXPECT_EQ(slurm_.drains, 1);
  // One of the two is resolved: this node drains and, second of two, keeps its drain.
  slurm_.fake.nodes["n010"] = {};
  slurm_.stamp = [](int) { return std::string(kSecond1); };
  auto later = DrainOutcome(me->engine->OnDiagnoses({}, t0_ + 120 * kSec));
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->state, State::kDone) << later->detail;
  EXPECT_TRUE(slurm_.FaultlineDrained("n050"));
}

TEST_F(PolicyBreakerTest, DrainsOrderedAfterOursDoNotCountAgainstIt) {
  auto me = MakeNode("n050");
  // Same second but later names, and a later second: they come after this node's drain.
  me->engine->after_decided = [&](const actions::Decision&) {
    slurm_.Drain("n060", "faultline: hbm_uncorrectable gpu/0 d7", kSecond0);
    slurm_.Drain("n001", "faultline: hbm_uncorrectable gpu/0 d8", kSecond1);
  };
  auto out = DrainOutcome(me->engine->OnDiagnoses({me->row}, t0_));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->state, State::kDone) << out->detail;
  EXPECT_TRUE(slurm_.FaultlineDrained("n050"));
  EXPECT_TRUE(slurm_.FaultlineDrained("n060"));  // theirs to undo, not ours
}

TEST_F(PolicyBreakerTest, DrainsOfUnknownTimeCountFirst) {
  auto me = MakeNode("n050");
  // Later names, but no time: nothing says they came after, so they count.
  me->engine->after_decided = [&](const actions::Decision&) {
    slurm_.Drain("n060", "faultline: hbm_uncorrectable gpu/0 d7", "Unknown");
    slurm_.Drain("n070", "faultline: hbm_uncorrectable gpu/0 d8", "Unknown");
  };
  auto out = DrainOutcome(me->engine->OnDiagnoses({me->row}, t0_));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->state, State::kHeldByBreaker) << out->detail;
  EXPECT_NE(out->detail.find("ranks 3 of 3"), std::string::npos) << out->detail;
  EXPECT_FALSE(slurm_.FaultlineDrained("n050"));
  EXPECT_TRUE(slurm_.FaultlineDrained("n060"));
  EXPECT_TRUE(slurm_.FaultlineDrained("n070"));
}

TEST_F(PolicyBreakerTest, OurOwnDrainOfUnknownTimeCountsEveryOtherDrain) {
  auto me = MakeNode("n050");
  slurm_.stamp = [](int) { return std::string("Unknown"); };
  me->engine->after_decided = [&](const actions::Decision&) {
    slurm_.Drain("n060", "faultline: hbm_uncorrectable gpu/0 d7", kSecond1);
    slurm_.Drain("n070", "faultline: hbm_uncorrectable gpu/0 d8", kSecond1);
  };
  auto out = DrainOutcome(me->engine->OnDiagnoses({me->row}, t0_));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->state, State::kHeldByBreaker) << out->detail;
  EXPECT_FALSE(slurm_.FaultlineDrained("n050"));
  ASSERT_EQ(slept_.size(), 1u);
  EXPECT_EQ(slept_[0], 2 * kSec);  // no second to wait out: the margin alone
}

TEST_F(PolicyBreakerTest, WaitsUntilThePlatformClockPassedTheDrainSecondPlusTheMargin) {
  PolicyConfig c = Config();
  c.breaker_settle_ns = kSec / 2;
  // Our clock 0.4 s into the drain's second: 0.6 s to its end, then the 0.5 s margin.
  clock_.Set(t0_ + 400'000'000);
  auto a = MakeNode("n050", c);
  ASSERT_EQ(DrainOutcome(a->engine->OnDiagnoses({a->row}, t0_))->state, State::kDone);
  ASSERT_EQ(slept_.size(), 1u);
  EXPECT_EQ(slept_[0], 1'100'000'000);
  // The platform's clock ahead of ours: never longer than a second and the margin (our drain
  // was stamped before Apply returned, so by then the platform's clock is past the mark).
  slept_.clear();
  clock_.Set(t0_ - 3600 * kSec);
  auto b = MakeNode("n051", c);
  ASSERT_EQ(DrainOutcome(b->engine->OnDiagnoses({b->row}, t0_))->state, State::kDone);
  ASSERT_EQ(slept_.size(), 1u);
  EXPECT_EQ(slept_[0], 1'500'000'000);
  // Already past: no wait, and the read made right after the drain is the one ranked.
  slept_.clear();
  clock_.Set(t0_ + 10 * kSec);
  slurm_.fake.nodes["n051"] = {};  // b resolved, so c is under the limit
  auto before = slurm_.fake.calls.size();
  auto n = MakeNode("n052", c);
  ASSERT_EQ(DrainOutcome(n->engine->OnDiagnoses({n->row}, t0_ + 10 * kSec))->state, State::kDone);
  EXPECT_TRUE(slept_.empty());
  int sinfo = 0;
  for (size_t i = before; i < slurm_.fake.calls.size(); ++i) sinfo += slurm_.fake.calls[i][0] == "sinfo";
  EXPECT_EQ(sinfo, 2);  // the first look and one confirmation
}

TEST_F(PolicyBreakerTest, AFleetUnreadableAfterTheDrainUndoesItAndRetries) {
  auto me = MakeNode("n050");
  me->engine->after_decided = [&](const actions::Decision&) { slurm_.sinfo_down = true; };
  auto out = DrainOutcome(me->engine->OnDiagnoses({me->row}, t0_));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->state, State::kFailed);
  EXPECT_NE(out->detail.find("cannot read the fleet to confirm the breaker after the drain"), std::string::npos)
      << out->detail;
  EXPECT_NE(out->detail.find("drain undone"), std::string::npos) << out->detail;
  EXPECT_FALSE(slurm_.FaultlineDrained("n050"));
  // Retried when due, with the fleet readable again: drained and confirmed.
  me->engine->after_decided = nullptr;
  slurm_.sinfo_down = false;
  auto early = DrainOutcome(me->engine->OnDiagnoses({}, t0_ + 10 * kSec));
  EXPECT_FALSE(early.has_value());  // not due yet
  auto retry = DrainOutcome(me->engine->OnDiagnoses({}, t0_ + 31 * kSec));
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(retry->state, State::kDone) << retry->detail;
  EXPECT_TRUE(slurm_.FaultlineDrained("n050"));
}

TEST_F(PolicyBreakerTest, AnUndoThatFailedIsConfirmedAgainOnTheRetry) {
  auto me = MakeNode("n050");
  me->engine->after_decided = [&](const actions::Decision&) {
    slurm_.Drain("n010", "faultline: hbm_uncorrectable gpu/0 d7", kSecond0);
    slurm_.Drain("n020", "faultline: hbm_uncorrectable gpu/0 d8", kSecond0);
    slurm_.resume_down = true;
  };
  auto out = DrainOutcome(me->engine->OnDiagnoses({me->row}, t0_));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->state, State::kFailed);
  EXPECT_NE(out->detail.find("ranks 3 of 3"), std::string::npos) << out->detail;
  EXPECT_NE(out->detail.find("undoing the drain failed: scontrol timed out"), std::string::npos) << out->detail;
  EXPECT_TRUE(slurm_.FaultlineDrained("n050"));  // still out, over the limit, known
  // The retry finds the drain in effect and confirms it again instead of calling it done.
  me->engine->after_decided = nullptr;
  slurm_.resume_down = false;
  auto retry = DrainOutcome(me->engine->OnDiagnoses({}, t0_ + 31 * kSec));
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(retry->state, State::kHeldByBreaker) << retry->detail;
  EXPECT_FALSE(slurm_.FaultlineDrained("n050"));
  EXPECT_TRUE(slurm_.FaultlineDrained("n010"));
  EXPECT_TRUE(slurm_.FaultlineDrained("n020"));
}

TEST_F(PolicyBreakerTest, AnotherDiagnosisDrainOnThisNodeIsNeverUndone) {
  auto me = MakeNode("n050");
  // The node is already out for an earlier diagnosis, over the limit; a failed try of this
  // decision finds it in effect: not this decision's drain, so it is left and the decision done.
  slurm_.Drain("n010", "faultline: hbm_uncorrectable gpu/0 d7", kSecond0);
  slurm_.Drain("n020", "faultline: hbm_uncorrectable gpu/0 d8", kSecond0);
  slurm_.sinfo_down = true;
  auto failed = DrainOutcome(me->engine->OnDiagnoses({me->row}, t0_));
  ASSERT_TRUE(failed.has_value());
  ASSERT_EQ(failed->state, State::kFailed);
  slurm_.sinfo_down = false;
  slurm_.Drain("n050", "faultline: xid_79 gpu/5 d999", kSecond1);
  auto retry = DrainOutcome(me->engine->OnDiagnoses({}, t0_ + 31 * kSec));
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(retry->state, State::kDone) << retry->detail;
  EXPECT_EQ(slurm_.Reason("n050"), "faultline: xid_79 gpu/5 d999");
}

TEST_F(PolicyBreakerTest, AResumeThatErrsButClearedTheDrainCountsAsUndone) {
  auto me = MakeNode("n050");
  slurm_.resume_clears_but_errs = true;
  me->engine->after_decided = [&](const actions::Decision&) {
    slurm_.Drain("n010", "faultline: hbm_uncorrectable gpu/0 d7", kSecond0);
    slurm_.Drain("n020", "faultline: hbm_uncorrectable gpu/0 d8", kSecond0);
  };
  auto out = DrainOutcome(me->engine->OnDiagnoses({me->row}, t0_));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->state, State::kHeldByBreaker) << out->detail;
  EXPECT_FALSE(slurm_.FaultlineDrained("n050"));
  // Still drained after the error: the error stands.
  actions::SlurmActuator act(slurm_);
  slurm_.resume_clears_but_errs = false;
  slurm_.resume_down = true;
  EXPECT_EQ(act.ResumeIfOurs("n010", "d7").code(), StatusCode::kTimeout);
  EXPECT_TRUE(slurm_.FaultlineDrained("n010"));
}

TEST(PolicyBreakerConfig, BreakerSettleIsReadAndBounded) {
  auto d = daemon::ParseAgentConfig("");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->policy.breaker_settle_ns, 2 * kSec);
  auto def = daemon::ParseAgentConfig(daemon::DefaultAgentConfigToml());
  ASSERT_TRUE(def.ok()) << def.status().ToString();
  EXPECT_EQ(def->policy.breaker_settle_ns, 2 * kSec);
  for (const auto& [toml, ns] : std::vector<std::pair<std::string, int64_t>>{
           {"breaker_settle = \"500ms\"", kSec / 2}, {"breaker_settle = 5", 5 * kSec}, {"breaker_settle = 0", 0}}) {
    auto c = daemon::ParseAgentConfig("[policy]\n" + toml + "\n");
    ASSERT_TRUE(c.ok()) << toml << ": " << c.status().ToString();
    EXPECT_EQ(c->policy.breaker_settle_ns, ns) << toml;
  }
  for (const char* bad : {"breaker_settle = \"31s\"", "breaker_settle = -1", "breaker_settle = \"soon\""}) {
    auto c = daemon::ParseAgentConfig(std::string("[policy]\n") + bad + "\n");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find("policy.breaker_settle"), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace faultline::policy
