// The remediation step's worker (daemon/remediation.h, docs/remediation.md "In the agent"):
// an actuator that stalls (a webhook whose endpoint hangs) never holds the caller, the queue
// behind it stays bounded and keeps the newest diagnoses, and Stop() gives up on it without
// losing the decision: the next start finishes what was left "decided". Every assertion is
// on the order of events (EventLog), none on time.
#include <gtest/gtest.h>

#include <sstream>

#include "../policy/policy_fakes.h"
#include "blocking_actuator.h"
#include "daemon/remediation.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using actions::ActionClass;
using policy::testing::FakeActuator;
using policy::testing::FakeFleet;
using policy::testing::FakePlatform;
using policy::testing::MakeDiagnosis;
using testing::BlockingActuator;
using testing::EventLog;
using testing::kSec;
using testing::kT0;
using testing::ScratchDir;

class RemediationWorker : public ::testing::Test {
 protected:
  RemediationWorker() : dir_("remediation_worker"), clock_(kT0, 150 * kSec), logger_(log_, LogLevel::kDebug, clock_) {
    config_.enable = {ActionClass::kWebhook};
    config_.cooldown_ns = 0;  // every fault here is news: each gets its webhook
    OpenStore();
  }
  void OpenStore() {
    auto s = Store::Open(dir_.File("store.db"));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  // A new primary diagnosis (a GPU of its own: its own fault), stored, as an evaluation hands it over.
  EvaluateResult NewDiagnosis(int gpu) {
    const Diagnosis d =
        MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent(std::to_string(gpu)), kT0 + gpu * kSec);
    auto id = store_->PutDiagnosis("node7", d, d.last_ns);
    EXPECT_TRUE(id.ok());
    EvaluateResult r;
    r.diagnosis_stored = true;
    r.diagnosis_id = id.ok() ? *id : 0;
    r.diagnoses = {d};
    return r;
  }
  std::unique_ptr<Remediation> NewRemediation(actions::Actuator& actuator, RemediationOptions options = {}) {
    return std::make_unique<Remediation>(config_, store_, "node7", std::vector<actions::Actuator*>{&actuator}, &fleet_,
                                         logger_, options);
  }
  // The latest stored state of the webhook decision for diagnosis `id` ("" when none).
  std::string WebhookState(int64_t id) {
    auto store = Store::Open(dir_.File("store.db"));
    EXPECT_TRUE(store.ok());
    if (!store.ok()) return "";
    RecordQuery q;
    q.limit = 0;
    auto rows = (*store)->ListActions(q);
    EXPECT_TRUE(rows.ok());
    std::string state;
    if (!rows.ok()) return state;
    for (const auto& r : rows->rows) {
      if (r.value.diagnosis_id == id && r.value.attrs.count("class") && r.value.attrs.at("class") == "webhook") {
        state = r.value.attrs.at("state");
      }
    }
    return state;
  }

  ScratchDir dir_;
  FakeClock clock_;
  std::ostringstream log_;
  Logger logger_;
  policy::PolicyConfig config_;
  std::shared_ptr<Store> store_;
  FakeFleet fleet_;
  std::shared_ptr<EventLog> events_ = std::make_shared<EventLog>();
};

TEST_F(RemediationWorker, AStalledActuatorDoesNotHoldTheNextDiagnosis) {
  BlockingActuator hook(events_, {ActionClass::kWebhook});
  auto remediation = NewRemediation(hook);
  ASSERT_TRUE(remediation->StartWorker().ok());
  const EvaluateResult first = NewDiagnosis(1);
  const EvaluateResult second = NewDiagnosis(2);
  const std::string a = std::to_string(first.diagnosis_id);
  const std::string b = std::to_string(second.diagnosis_id);

  remediation->AfterEvaluation(first, kT0 + 10 * kSec);
  ASSERT_TRUE(events_->WaitFor("apply " + a)) << events_->Joined();  // the webhook hangs
  // Had this waited for the hung webhook, it would come after "applied <a>".
  remediation->AfterEvaluation(second, kT0 + 11 * kSec);
  events_->Add("second handed over");
  events_->Open();
  ASSERT_TRUE(events_->WaitFor("applied " + b)) << events_->Joined();
  remediation->Stop();

  EXPECT_EQ(events_->events(), (std::vector<std::string>{"apply " + a, "second handed over", "applied " + a,
                                                         "apply " + b, "applied " + b}));
  EXPECT_EQ(WebhookState(first.diagnosis_id), "done");
  EXPECT_EQ(WebhookState(second.diagnosis_id), "done");
  const RemediationStats stats = remediation->stats();
  EXPECT_EQ(stats.queued, 2u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.abandoned, 0u);
  EXPECT_EQ(stats.errors, 0u);
  EXPECT_GT(stats.decisions_stored, 0u);
}

TEST_F(RemediationWorker, TheQueueStaysBoundedAndKeepsTheNewestDiagnoses) {
  BlockingActuator hook(events_, {ActionClass::kWebhook});
  auto remediation = NewRemediation(hook, {.queue_capacity = 4});
  ASSERT_TRUE(remediation->StartWorker().ok());
  const EvaluateResult first = NewDiagnosis(1);
  remediation->AfterEvaluation(first, kT0 + 10 * kSec);
  ASSERT_TRUE(events_->WaitFor("apply " + std::to_string(first.diagnosis_id))) << events_->Joined();

  // While the webhook hangs: 50 new diagnoses, and after each an evaluation with nothing new
  // past retry_initial (a look at held/failed decisions).
  std::vector<int64_t> ids;
  int64_t now = kT0 + 20 * kSec;
  for (int gpu = 2; gpu < 52; ++gpu) {
    const EvaluateResult r = NewDiagnosis(gpu);
    ids.push_back(r.diagnosis_id);
    remediation->AfterEvaluation(r, now);
    now += config_.retry_initial_ns;
    remediation->AfterEvaluation(EvaluateResult{}, now);
    now += kSec;
  }
  RemediationStats stats = remediation->stats();
  EXPECT_EQ(stats.max_queued, 4u);
  EXPECT_EQ(stats.queued, 51u);
  EXPECT_EQ(stats.dropped, 46u);    // the oldest waiting ones
  EXPECT_EQ(stats.coalesced, 50u);  // every look rode on a call already waiting
  EXPECT_NE(log_.str().find("is not considered (a newer one is)"), std::string::npos) << log_.str();

  events_->Open();
  ASSERT_TRUE(events_->WaitFor("applied " + std::to_string(ids.back()))) << events_->Joined();
  remediation->Stop();
  // The stalled one, then the four newest; none of the dropped.
  std::vector<std::string> applied;
  for (const std::string& e : events_->events()) {
    if (e.starts_with("apply ")) applied.push_back(e.substr(6));
  }
  std::vector<std::string> want = {std::to_string(first.diagnosis_id)};
  for (size_t i = ids.size() - 4; i < ids.size(); ++i) want.push_back(std::to_string(ids[i]));
  EXPECT_EQ(applied, want) << events_->Joined();
  EXPECT_EQ(WebhookState(ids.front()), "");
  EXPECT_EQ(WebhookState(ids.back()), "done");
}

TEST_F(RemediationWorker, StopGivesUpOnAStalledActuatorAndTheNextStartFinishesItsDecision) {
  const EvaluateResult first = NewDiagnosis(1);
  const EvaluateResult second = NewDiagnosis(2);
  const std::string a = std::to_string(first.diagnosis_id);
  {
    BlockingActuator hook(events_, {ActionClass::kWebhook});
    auto remediation = NewRemediation(hook, {.stop_deadline = std::chrono::milliseconds(50)});
    ASSERT_TRUE(remediation->StartWorker().ok());
    remediation->AfterEvaluation(first, kT0 + 10 * kSec);
    ASSERT_TRUE(events_->WaitFor("apply " + a)) << events_->Joined();
    remediation->AfterEvaluation(second, kT0 + 11 * kSec);
    remediation->Stop();  // returns with the webhook still hung
    events_->Add("stopped");
    const RemediationStats stats = remediation->stats();
    EXPECT_EQ(stats.abandoned, 2u);  // the hung call and the one waiting behind it
    EXPECT_NE(log_.str().find("stopping without waiting for an action still running"), std::string::npos) << log_.str();
    // Later calls go nowhere: the engine is still with the abandoned worker.
    remediation->AfterEvaluation(NewDiagnosis(3), kT0 + 12 * kSec);
    EXPECT_EQ(remediation->stats().dropped, 1u);
    // As the agent does after it: the store closes, so the worker's late writes fail.
    ASSERT_TRUE(store_->Close().ok());
    remediation.reset();  // and the remediation goes; the worker keeps what it needs

    EXPECT_EQ(WebhookState(first.diagnosis_id), "decided");
    // The next start (Engine::Start) finishes it: a webhook cannot tell, so it is sent again.
    OpenStore();
    FakePlatform platform;
    FakeActuator again(platform, {ActionClass::kWebhook}, false);
    auto restarted = NewRemediation(again);
    restarted->AfterEvaluation(EvaluateResult{}, kT0 + 20 * kSec);
    ASSERT_EQ(again.applied.size(), 1u) << log_.str();
    EXPECT_EQ(again.applied.front().diagnosis_id, first.diagnosis_id);
    EXPECT_EQ(WebhookState(first.diagnosis_id), "done");

    // The hung call returns at last; the abandoned worker stores nothing and calls nothing more.
    events_->Open();
    ASSERT_TRUE(events_->WaitFor("applied " + a)) << events_->Joined();
  }
  EXPECT_EQ(events_->events(), (std::vector<std::string>{"apply " + a, "stopped", "applied " + a}));
  EXPECT_EQ(WebhookState(first.diagnosis_id), "done");
}

TEST_F(RemediationWorker, WithoutAWorkerEveryCallRunsOnTheCaller) {
  FakePlatform platform;
  FakeActuator hook(platform, {ActionClass::kWebhook}, false);
  auto remediation = NewRemediation(hook);
  const EvaluateResult first = NewDiagnosis(1);
  remediation->AfterEvaluation(first, kT0 + 10 * kSec);
  ASSERT_EQ(hook.applied.size(), 1u);  // done by the time the call returns
  EXPECT_EQ(WebhookState(first.diagnosis_id), "done");
  remediation->Stop();  // nothing to stop
  const EvaluateResult second = NewDiagnosis(2);
  remediation->AfterEvaluation(second, kT0 + 11 * kSec);
  EXPECT_EQ(hook.applied.size(), 2u);
  EXPECT_EQ(remediation->stats().queued, 0u);
}

TEST_F(RemediationWorker, AWorkerNeedsASharedStore) {
  FakePlatform platform;
  FakeActuator hook(platform, {ActionClass::kWebhook}, false);
  Remediation borrowed(config_, *store_, "node7", {&hook}, &fleet_, logger_);
  EXPECT_EQ(borrowed.StartWorker().code(), StatusCode::kInvalidArgument);
  const EvaluateResult first = NewDiagnosis(1);
  borrowed.AfterEvaluation(first, kT0 + 10 * kSec);
  EXPECT_EQ(hook.applied.size(), 1u);  // still synchronous
}

// A decision held until its diagnosis settles is looked at again when it settles, not a
// whole retry interval later (that wait delayed every first decision by up to 30 s).
TEST_F(RemediationWorker, AHeldDecisionIsLookedAtAgainWhenItsDiagnosisSettles) {
  config_.settle_ns = 20 * kSec;
  config_.retry_initial_ns = 30 * kSec;
  FakePlatform platform;
  FakeActuator hook(platform, {ActionClass::kWebhook}, false);
  auto remediation = NewRemediation(hook);  // synchronous: each call runs the engine at once
  const Diagnosis d = MakeDiagnosis(FaultClass::kHbmUncorrectable, Action::kRma, GpuComponent("3"), kT0);
  auto id = store_->PutDiagnosis("node7", d, kT0);
  ASSERT_TRUE(id.ok());
  EvaluateResult r;
  r.diagnosis_stored = true;
  r.diagnosis_id = *id;
  r.diagnoses = {d};
  remediation->AfterEvaluation(r, kT0 + kSec);
  EXPECT_EQ(WebhookState(*id), "held_until_settled");
  remediation->AfterEvaluation(EvaluateResult{}, kT0 + 10 * kSec);  // not settled yet: no look
  EXPECT_EQ(WebhookState(*id), "held_until_settled");
  EXPECT_TRUE(hook.applied.empty());
  remediation->AfterEvaluation(EvaluateResult{}, kT0 + 21 * kSec);  // settled at kT0 + 20 s
  EXPECT_EQ(WebhookState(*id), "done");
  ASSERT_EQ(hook.applied.size(), 1u);
  // Nothing waits on a time any more: the next look is a retry interval after this one.
  const uint64_t stored = remediation->stats().decisions_stored;
  remediation->AfterEvaluation(EvaluateResult{}, kT0 + 22 * kSec);
  EXPECT_EQ(remediation->stats().decisions_stored, stored);
}

}  // namespace
}  // namespace faultline::daemon
