// The fleet analyzer's one action for a shared cause (actions/fleet_actor.h): dry run by
// default, once per fleet diagnosis, never for a straggler, retried with back-off when the
// receiver fails; posted through the real webhook actuator with the fleet's identity.
#include "actions/fleet_actor.h"

#include <gtest/gtest.h>

#include "core/json.h"
#include "sources/redfish/fake_http_client.h"

namespace faultline::actions {
namespace {

constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

class CountingActuator final : public Actuator {
 public:
  bool Handles(ActionClass c) const override { return c == ActionClass::kWebhook; }
  Status Apply(const Decision& d) override {
    applied.push_back(d);
    return fail_with;
  }
  Result<Observed> Observe(const Decision&) override { return Observed::kUnknown; }
  std::vector<Decision> applied;
  Status fail_with;
};

fleet::FleetDiagnosis Pdu() {
  fleet::FleetDiagnosis f;
  f.id = "pdu/r12-a/" + std::to_string(kT0);
  f.cause = "pdu";
  f.component = "pdu/r12-a";
  f.fault_class = FaultClass::kPowerInsufficient;
  f.action = Action::kFacilityTicket;
  f.severity = Severity::kCritical;
  f.first_ns = kT0;
  f.last_ns = kT0 + 30 * kSec;
  f.nodes = {"n1", "n2", "n3"};
  f.linked = {"n1#4", "n2#9", "n3#2"};
  return f;
}

TEST(FleetActor, ADryRunSaysWhatItWouldPostOnce) {
  CountingActuator hook;
  FleetActor dry(&hook, /*act=*/false);
  auto out = dry.OnDiagnosis(Pdu(), kT0);
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(out->dry_run);
  EXPECT_NE(out->detail.find("would post webhook for pdu pdu/r12-a (3 node(s)"), std::string::npos) << out->detail;
  EXPECT_FALSE(dry.OnDiagnosis(Pdu(), kT0 + kSec).has_value());
  EXPECT_TRUE(hook.applied.empty());
  FleetActor nothing_configured(nullptr, /*act=*/true);
  EXPECT_TRUE(nothing_configured.OnDiagnosis(Pdu(), kT0)->dry_run);
}

TEST(FleetActor, OneSharedCauseIsOnePostWhateverItsUpdates) {
  CountingActuator hook;
  FleetActor actor(&hook, /*act=*/true);
  auto out = actor.OnDiagnosis(Pdu(), kT0);
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE(out->dry_run);
  EXPECT_TRUE(out->status.ok());
  fleet::FleetDiagnosis grown = Pdu();
  grown.nodes.push_back("n4");
  grown.linked.push_back("n4#1");
  EXPECT_FALSE(actor.OnDiagnosis(grown, kT0 + 10 * kSec).has_value());
  ASSERT_EQ(hook.applied.size(), 1u);
  const Decision& d = hook.applied[0];
  EXPECT_EQ(d.key, "fleet|" + Pdu().id);
  EXPECT_EQ(d.action_class, ActionClass::kWebhook);
  EXPECT_EQ(d.target_node, "pdu/r12-a");
  EXPECT_EQ(d.evidence, (std::vector<std::string>{"n1#4", "n2#9", "n3#2"}));
  EXPECT_EQ(d.diagnosis.fault_class, FaultClass::kPowerInsufficient);
  EXPECT_EQ(d.diagnosis.component.keys.at("fleet_cause"), "pdu");
}

TEST(FleetActor, StragglersAndDiagnosesWithoutAnActionAreLeftToTheNodes) {
  CountingActuator hook;
  FleetActor actor(&hook, /*act=*/true);
  fleet::FleetDiagnosis s = Pdu();
  s.cause = "straggler";
  EXPECT_FALSE(actor.OnDiagnosis(s, kT0).has_value());
  fleet::FleetDiagnosis watch = Pdu();
  watch.action = Action::kMonitor;
  EXPECT_FALSE(actor.OnDiagnosis(watch, kT0).has_value());
  EXPECT_TRUE(hook.applied.empty());
}

TEST(FleetActor, AFailedPostIsRetriedWithBackOffUntilItGoes) {
  CountingActuator hook;
  hook.fail_with = Status(StatusCode::kUnavailable, "receiver down");
  FleetActor actor(&hook, /*act=*/true);
  auto first = actor.OnDiagnosis(Pdu(), kT0);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->status.ok());
  EXPECT_EQ(actor.pending(), 1u);
  EXPECT_FALSE(actor.OnDiagnosis(Pdu(), kT0 + kSec).has_value()) << "a failed one waits for its retry";
  EXPECT_TRUE(actor.RetryDue(kT0 + 29 * kSec).empty());
  auto second = actor.RetryDue(kT0 + 30 * kSec);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_FALSE(second[0].status.ok());
  EXPECT_TRUE(actor.RetryDue(kT0 + 89 * kSec).empty()) << "the back-off doubles";
  hook.fail_with = Status::Ok();
  auto third = actor.RetryDue(kT0 + 90 * kSec);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_TRUE(third[0].status.ok());
  EXPECT_EQ(actor.pending(), 0u);
  EXPECT_EQ(hook.applied.size(), 3u);
  EXPECT_TRUE(actor.RetryDue(kT0 + 3600 * kSec).empty());
}

TEST(FleetActor, ThroughTheWebhookTheReceiverCanDeduplicateOnTheFleetsId) {
  redfish::FakeHttpClient http;
  http.Set("POST", "/hook", 204, "");
  WebhookOptions o;
  o.url = "https://hooks.test/hook";
  o.secret = "k3y";
  WebhookActuator webhook(http, o, [](int64_t) {});
  FleetActor actor(&webhook, /*act=*/true);
  auto out = actor.OnDiagnosis(Pdu(), kT0);
  ASSERT_TRUE(out.has_value());
  ASSERT_TRUE(out->status.ok()) << out->status.ToString();
  const auto requests = http.requests();
  ASSERT_EQ(requests.size(), 1u);
  std::string delivery;
  for (const auto& [k, v] : requests[0].headers) {
    if (k == "X-Faultline-Delivery") delivery = v;
  }
  EXPECT_EQ(delivery, "fleet|" + Pdu().id);
  const Json body = Json::parse(requests[0].body);
  EXPECT_EQ(body.at("rule"), "fleet_shared_cause");
  EXPECT_EQ(body.at("target_node"), "pdu/r12-a");
  EXPECT_EQ(body.at("evidence").size(), 3u);
}

}  // namespace
}  // namespace faultline::actions
