// The Kubernetes actuator behind the Actuator interface and the breaker's fleet view
// (kube_platform.h), against the fake API server over HTTPS: what a cordon or drain
// decision leaves on the node, what Observe reads back, and the node list.
#include "actions/kube_platform.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/time.h"
#include "fake_kube_api.h"

namespace faultline::actions {
namespace {

namespace fs = std::filesystem;
using testing_kube::FakeKubeApi;
using testing_kube::Json;
using testing_kube::PodSpec;

constexpr char kToken[] = "platform-tok-91ab";

class KubePlatformTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kube_platform_" + std::to_string(getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    api_ = FakeKubeApi::Start(true, kToken, dir_.string());
    ASSERT_NE(api_, nullptr);
    api_->AddNode("gpu-node-1");
    config_.server = api_->url();
    config_.ca_file = api_->ca_file();
    config_.token = kToken;
    config_.source = "test";
    options_.clock = &clock_;
    options_.sleep = [this](int64_t ns) { clock_.Advance(ns); };
  }

  std::unique_ptr<KubernetesActuator> MakeKube() {
    auto k = KubernetesActuator::Create(config_, options_);
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? std::move(k).value() : nullptr;
  }

  static Decision MakeDecision(ActionClass c, const std::string& node = "gpu-node-1") {
    Decision d;
    d.key = node + "|" + std::string(ToString(c)) + "|hbm_uncorrectable|gpu/3|1767225600000000000";
    d.node = node;
    d.target_node = node;
    d.action_class = c;
    d.diagnosis_id = 42;
    d.diagnosis.fault_class = FaultClass::kHbmUncorrectable;
    d.diagnosis.layer = Layer::kGpu;
    d.diagnosis.component = ComponentRef{ComponentType::kGpu, "3", {}};
    d.diagnosis.summary = "uncorrectable ECC in HBM\nrow remap failed";
    d.rule = "recommended_action";
    return d;
  }

  std::string Annotation(const std::string& key, const std::string& node = "gpu-node-1") const {
    const Json n = api_->Node(node);
    const Json& a = n["metadata"].value("annotations", Json::object());
    return a.contains(key) ? a[key].get<std::string>() : "";
  }
  size_t Count(const std::string& method, const std::string& path_part) const {
    size_t n = 0;
    for (const auto& r : api_->Requests()) n += r.method == method && r.path.find(path_part) != std::string::npos;
    return n;
  }
  Json Condition(const std::string& type) const {
    const Json n = api_->Node("gpu-node-1");
    for (const Json& c : n["status"]["conditions"]) {
      if (c["type"] == type) return c;
    }
    return Json();
  }

  fs::path dir_;
  std::unique_ptr<FakeKubeApi> api_;
  KubeConfig config_;
  KubeOptions options_;
  FakeClock clock_{int64_t{1'767'225'600} * kNsPerSec, int64_t{1000} * kNsPerSec};
};

TEST_F(KubePlatformTest, CordonDecisionLeavesCordonMarksTaintConditionAndOneEvent) {
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  const Decision d = MakeDecision(ActionClass::kCordon);
  EXPECT_TRUE(platform.Handles(ActionClass::kCordon));
  EXPECT_TRUE(platform.Handles(ActionClass::kDrain));
  EXPECT_FALSE(platform.Handles(ActionClass::kRebootNode));
  EXPECT_FALSE(platform.Handles(ActionClass::kWebhook));

  auto before = platform.Observe(d);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(*before, Observed::kNotInEffect);
  ASSERT_TRUE(platform.Apply(d).ok());

  const Json node = api_->Node("gpu-node-1");
  EXPECT_EQ(node["spec"]["unschedulable"], true);
  EXPECT_EQ(Annotation(kCordonedByAnnotation), "faultline");
  EXPECT_EQ(Annotation(kDecisionAnnotation), d.key);
  EXPECT_EQ(ParseIso8601(Annotation(kCordonedAtAnnotation)), clock_.NowNs());
  ASSERT_EQ(node["spec"]["taints"].size(), 1u);
  EXPECT_EQ(node["spec"]["taints"][0]["key"], kDefaultTaintKey);
  EXPECT_EQ(node["spec"]["taints"][0]["value"], "hbm_uncorrectable");
  const Json gpu = Condition("FaultlineGPUProblem");
  ASSERT_TRUE(gpu.is_object());
  EXPECT_EQ(gpu["status"], "True");
  EXPECT_EQ(gpu["reason"], "HbmUncorrectable");
  EXPECT_NE(gpu["message"].get<std::string>().find("gpu/3 gpu-node-1/d42"), std::string::npos);
  ASSERT_EQ(api_->Events().size(), 1u);
  EXPECT_EQ(api_->Events()[0]["reason"], "FaultlineCordon");
  EXPECT_EQ(Count("POST", "/eviction"), 0u);  // a cordon evicts nothing
  auto after = platform.Observe(d);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, Observed::kInEffect);

  // Applied again (a retry, a restart): nothing new on the node, no second event.
  const std::string version = api_->Node("gpu-node-1")["metadata"]["resourceVersion"];
  const size_t spec_patches = Count("PATCH", "/api/v1/nodes/gpu-node-1") - Count("PATCH", "/status");
  ASSERT_TRUE(platform.Apply(d).ok());
  EXPECT_EQ(Count("PATCH", "/api/v1/nodes/gpu-node-1") - Count("PATCH", "/status"), spec_patches);
  EXPECT_EQ(api_->Events().size(), 1u);
  EXPECT_EQ(Annotation(kDecisionAnnotation), d.key);
  EXPECT_NE(version, "");
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();

  // Uncordon (faultline resolve) removes every mark we made.
  ASSERT_TRUE(kube->Uncordon("gpu-node-1").ok());
  EXPECT_EQ(Annotation(kCordonedByAnnotation), "");
  EXPECT_EQ(Annotation(kCordonedAtAnnotation), "");
  EXPECT_EQ(Annotation(kDecisionAnnotation), "");
  EXPECT_EQ(*platform.Observe(d), Observed::kNotInEffect);
}

TEST_F(KubePlatformTest, RevertUndoesOnlyOurCordonForThisDecision) {
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  const Decision d = MakeDecision(ActionClass::kCordon);

  // Not cordoned: nothing to undo, nothing written.
  ASSERT_TRUE(platform.Revert(d).ok());
  EXPECT_EQ(Count("PATCH", ""), 0u);

  ASSERT_TRUE(platform.Apply(d).ok());
  // Another decision's cordon (a later fault on the same node) is not this resolve's to undo.
  Decision other = d;
  other.key = "gpu-node-1|cordon|nvlink_errors|nvlink/1/4|1767229200000000000";
  const Status refused = platform.Revert(other);
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << refused.ToString();
  EXPECT_EQ(api_->Node("gpu-node-1")["spec"]["unschedulable"], true);
  EXPECT_EQ(Annotation(kDecisionAnnotation), d.key);

  ASSERT_TRUE(platform.Revert(d).ok());
  const Json node = api_->Node("gpu-node-1");
  EXPECT_NE(node["spec"].value("unschedulable", false), true);
  EXPECT_EQ(Annotation(kCordonedByAnnotation), "");
  EXPECT_EQ(Annotation(kDecisionAnnotation), "");
  EXPECT_TRUE(node["spec"].value("taints", Json::array()).empty());
  const Json gpu = Condition("FaultlineGPUProblem");
  ASSERT_TRUE(gpu.is_object());
  EXPECT_EQ(gpu["status"], "False");
  EXPECT_EQ(gpu["message"], "faultline: resolved gpu-node-1/d42");  // whose diagnosis 42
  ASSERT_EQ(api_->Events().size(), 2u);
  EXPECT_EQ(api_->Events()[1]["reason"], "FaultlineUncordon");
  EXPECT_EQ(api_->Events()[1]["type"], "Normal");
  EXPECT_EQ(*platform.Observe(d), Observed::kNotInEffect);

  // Again (a second resolve): the node is in service, nothing more is written.
  const size_t patches = Count("PATCH", "");
  ASSERT_TRUE(platform.Revert(d).ok());
  EXPECT_EQ(Count("PATCH", ""), patches);
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();
}

TEST_F(KubePlatformTest, RevertLeavesSomeoneElsesCordonAlone) {
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  for (const Json& patch : {Json{{"spec", {{"unschedulable", true}}}},
                            Json{{"spec", {{"unschedulable", true}}},
                                 {"metadata", {{"annotations", {{kCordonedByAnnotation, "other-site"}}}}}}}) {
    api_->MergeIntoNode("gpu-node-1", patch);
    EXPECT_EQ(platform.Revert(MakeDecision(ActionClass::kDrain)).code(), StatusCode::kPermissionDenied);
    EXPECT_EQ(api_->Node("gpu-node-1")["spec"]["unschedulable"], true);
  }
  EXPECT_EQ(Count("PATCH", ""), 0u);
  EXPECT_TRUE(api_->Events().empty());
}

TEST_F(KubePlatformTest, SomeoneElsesCordonIsOtherOwnerAndLeftUntouched) {
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  for (const Json& patch : {Json{{"spec", {{"unschedulable", true}}}},
                            Json{{"spec", {{"unschedulable", true}}},
                                 {"metadata", {{"annotations", {{kCordonedByAnnotation, "other-site"}}}}}}}) {
    api_->MergeIntoNode("gpu-node-1", patch);
    for (ActionClass c : {ActionClass::kCordon, ActionClass::kDrain}) {
      const Decision d = MakeDecision(c);
      auto seen = platform.Observe(d);
      ASSERT_TRUE(seen.ok()) << seen.status().ToString();
      EXPECT_EQ(*seen, Observed::kOtherOwner);
      EXPECT_TRUE(platform.Apply(d).ok());
    }
  }
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  EXPECT_TRUE(platform.Apply(MakeDecision(ActionClass::kDrain)).ok());
  EXPECT_TRUE(platform.Finish(MakeDecision(ActionClass::kDrain)).ok());
  EXPECT_EQ(Count("PATCH", "/api/v1/nodes"), 0u);
  EXPECT_EQ(Count("POST", ""), 0u);  // no event, no eviction
  EXPECT_TRUE(api_->HasPod("ml", "trainer-0"));
  EXPECT_EQ(Annotation(kDecisionAnnotation), "");
}

TEST_F(KubePlatformTest, DrainDecisionEvictsAndIsInEffectOnlyWhenNoWorkIsLeft) {
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  api_->AddPod({"ml", "web", "gpu-node-1", "ReplicaSet"});
  api_->AddPod({"kube-system", "dcgm-exporter", "gpu-node-1", "DaemonSet"});
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  const Decision d = MakeDecision(ActionClass::kDrain);

  // A crash cut an earlier drain short: cordoned by us, work still on the node.
  ASSERT_TRUE(kube->Cordon("gpu-node-1", d.key).ok());
  EXPECT_EQ(*platform.Observe(d), Observed::kNotInEffect);
  EXPECT_EQ(*platform.Observe(MakeDecision(ActionClass::kCordon)), Observed::kInEffect);

  // Apply only cordons: nothing is evicted before the breaker's second look keeps the drain.
  ASSERT_TRUE(platform.Apply(d).ok());
  EXPECT_TRUE(api_->HasPod("ml", "trainer-0"));
  EXPECT_EQ(Count("POST", "/eviction"), 0u);
  EXPECT_EQ(*platform.Observe(d), Observed::kNotInEffect);
  ASSERT_TRUE(platform.Finish(d).ok());
  EXPECT_FALSE(api_->HasPod("ml", "trainer-0"));
  EXPECT_FALSE(api_->HasPod("ml", "web"));
  EXPECT_TRUE(api_->HasPod("kube-system", "dcgm-exporter"));
  EXPECT_EQ(*platform.Observe(d), Observed::kInEffect);
  EXPECT_EQ(Count("POST", "/eviction"), 2u);
  EXPECT_EQ(Count("DELETE", ""), 0u);
  // The cordon was there already (ours), so this call made none and posted no event.
  EXPECT_TRUE(api_->Events().empty());
  EXPECT_EQ(Condition("FaultlineGPUProblem")["status"], "True");
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();
}

// A drain undone between Apply and Finish (the breaker's undo, a resolve) evicts nothing.
TEST_F(KubePlatformTest, FinishNeverEvictsFromANodeBackInService) {
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  const Decision d = MakeDecision(ActionClass::kDrain);
  ASSERT_TRUE(platform.Apply(d).ok());
  ASSERT_TRUE(platform.Revert(d).ok());
  const Status s = platform.Finish(d);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(api_->HasPod("ml", "trainer-0"));
  EXPECT_EQ(Count("POST", "/eviction"), 0u);
  // A cordon has nothing to finish.
  EXPECT_TRUE(platform.Finish(MakeDecision(ActionClass::kCordon)).ok());
}

TEST_F(KubePlatformTest, DrainBlockedByABudgetFailsWithoutForcingAndStaysNotInEffect) {
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  api_->ProtectByPdb("ml", "trainer-0", -1);
  options_.drain_timeout_ms = 20'000;
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  const Decision d = MakeDecision(ActionClass::kDrain);
  ASSERT_TRUE(platform.Apply(d).ok());
  Status s = platform.Finish(d);
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.ToString();
  EXPECT_NE(s.message().find("PodDisruptionBudget"), std::string::npos);
  EXPECT_TRUE(api_->HasPod("ml", "trainer-0"));
  EXPECT_EQ(api_->Node("gpu-node-1")["spec"]["unschedulable"], true);  // the cordon stays
  EXPECT_EQ(*platform.Observe(d), Observed::kNotInEffect);
  EXPECT_EQ(Count("DELETE", ""), 0u);
}

TEST_F(KubePlatformTest, ServerErrorsAreErrorsAndTheConfiguredNodeNameWins) {
  auto kube = MakeKube();
  api_->AddNode("k8s-gpu-7");
  KubernetesPlatform named(*kube, {"k8s-gpu-7"});
  const Decision d = MakeDecision(ActionClass::kCordon, "slurm-name-7");
  EXPECT_EQ(named.NodeFor(d), "k8s-gpu-7");
  api_->FailNext(1, 503);
  EXPECT_EQ(named.Observe(d).status().code(), StatusCode::kUnavailable);
  api_->FailNext(1, 500, "/status");
  EXPECT_EQ(named.Apply(d).code(), StatusCode::kUnavailable);  // the condition failed: retried later
  ASSERT_TRUE(named.Apply(d).ok());
  EXPECT_EQ(api_->Node("k8s-gpu-7")["spec"]["unschedulable"], true);
  EXPECT_EQ(api_->Node("gpu-node-1")["spec"].value("unschedulable", false), false);
  EXPECT_EQ(api_->Events().size(), 1u);  // the event of the cordon made by the first try

  KubernetesPlatform plain(*kube);
  EXPECT_EQ(plain.Observe(MakeDecision(ActionClass::kCordon, "no-such-node")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(plain.Apply(MakeDecision(ActionClass::kCordon, "Bad_Name")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plain.Apply(MakeDecision(ActionClass::kRebootNode)).code(), StatusCode::kUnsupported);
}

TEST_F(KubePlatformTest, FleetViewCountsEveryFaultlineCordonWithItsTime) {
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  for (const char* n : {"gpu-node-2", "gpu-node-3", "gpu-node-4", "gpu-node-5"}) api_->AddNode(n);
  ASSERT_TRUE(platform.Apply(MakeDecision(ActionClass::kCordon, "gpu-node-2")).ok());
  // Another site's faultline (counted), one without a time (counted, time unknown), an
  // operator's cordon (not counted), and a stale mark on a schedulable node (not counted).
  api_->MergeIntoNode("gpu-node-3", Json{{"spec", {{"unschedulable", true}}},
                                         {"metadata", {{"annotations", {{kCordonedByAnnotation, "site-b"}}}}}});
  api_->MergeIntoNode("gpu-node-4", Json{{"spec", {{"unschedulable", true}}}});
  api_->MergeIntoNode("gpu-node-5", Json{{"metadata", {{"annotations", {{kCordonedByAnnotation, "faultline"}}}}}});
  auto fleet = platform.Read();
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  EXPECT_EQ(fleet->known_nodes, 5u);
  ASSERT_EQ(fleet->faultline_drains.size(), 2u);
  std::map<std::string, int64_t> since;
  for (const auto& f : fleet->faultline_drains) since[f.node] = f.since_ns;
  EXPECT_EQ(since.at("gpu-node-2"), clock_.NowNs());
  EXPECT_EQ(since.at("gpu-node-3"), 0);
}

TEST_F(KubePlatformTest, FleetViewFollowsPagesAndRefusesABadNodeList) {
  for (int i = 0; i < 1203; ++i) api_->AddNode("n" + std::to_string(i));
  auto kube = MakeKube();
  KubernetesPlatform platform(*kube);
  auto fleet = platform.Read();
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  EXPECT_EQ(fleet->known_nodes, 1204u);
  EXPECT_EQ(Count("GET", "/api/v1/nodes"), 3u);  // 500 + 500 + 204

  api_->SetNodeListContinue("page-0");  // a server that never ends the list
  auto endless = platform.Read();
  ASSERT_FALSE(endless.ok());
  EXPECT_EQ(endless.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(endless.status().message().find("did not end"), std::string::npos);
  api_->SetNodeListContinue("../../secrets?x=1");
  EXPECT_EQ(platform.Read().status().code(), StatusCode::kCorrupt);
  api_->SetNodeListContinue("");
  api_->FailNext(1, 503, "/api/v1/nodes");
  EXPECT_EQ(platform.Read().status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(platform.Read().ok());
}

}  // namespace
}  // namespace faultline::actions
