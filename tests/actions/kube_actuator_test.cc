// The Kubernetes actuator against the fake API server (fake_kube_api.h) over HTTPS: every
// request it makes must pass the fake's checks of method, path, content type, patch type
// and body, and its outcomes are read back from the fake's state.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "actions/kube_config.h"
#include "actions/kubernetes.h"
#include "actions/kubernetes_http.h"
#include "core/time.h"
#include "fake_kube_api.h"
#include "sources/redfish/curl_http_client.h"

namespace faultline::actions {
namespace {

namespace fs = std::filesystem;
using testing_kube::FakeKubeApi;
using testing_kube::Json;
using testing_kube::PodSpec;
using testing_kube::RecordedRequest;

constexpr char kToken[] = "tok-7c1e-do-not-print";

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class KubeActuatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kube_actuator_" + std::to_string(getpid()) + "_" +
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
    options_.sleep = [this](int64_t ns) {
      sleeps_.push_back(ns);
      clock_.Advance(ns);
    };
    options_.request_timeout_ms = 5000;
  }

  std::unique_ptr<KubernetesActuator> Make() {
    auto a = KubernetesActuator::Create(config_, options_);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? std::move(a).value() : nullptr;
  }

  std::vector<RecordedRequest> Requests(const std::string& method) const {
    std::vector<RecordedRequest> out;
    for (const auto& r : api_->Requests()) {
      if (r.method == method) out.push_back(r);
    }
    return out;
  }

  Json NodeSpec(const std::string& name = "gpu-node-1") const { return api_->Node(name).value("spec", Json::object()); }
  std::string CordonMark(const std::string& name = "gpu-node-1") const {
    Json meta = api_->Node(name)["metadata"];
    if (!meta.contains("annotations") || !meta["annotations"].contains(kCordonedByAnnotation)) return "";
    return meta["annotations"][kCordonedByAnnotation];
  }

  fs::path dir_;
  std::unique_ptr<FakeKubeApi> api_;
  KubeConfig config_;
  KubeOptions options_;
  FakeClock clock_{int64_t{1'767'225'600} * kNsPerSec, int64_t{1000} * kNsPerSec};
  std::vector<int64_t> sleeps_;
};

TEST_F(KubeActuatorTest, CordonSetsUnschedulableWithOurMarkInOneGuardedPatch) {
  auto k = Make();
  auto outcome = k->Cordon("gpu-node-1");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(*outcome, CordonOutcome::kCordoned);
  EXPECT_EQ(NodeSpec().value("unschedulable", false), true);
  EXPECT_EQ(CordonMark(), "faultline");
  const auto patches = Requests("PATCH");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].path, "/api/v1/nodes/gpu-node-1");
  EXPECT_EQ(patches[0].content_type, "application/strategic-merge-patch+json");
  EXPECT_EQ(patches[0].authorization, std::string("Bearer ") + kToken);
  EXPECT_TRUE(Json::parse(patches[0].body)["metadata"].contains("resourceVersion"));
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();

  auto again = k->Cordon("gpu-node-1");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, CordonOutcome::kAlreadyOurs);
  EXPECT_EQ(Requests("PATCH").size(), 1u);  // nothing to change, nothing sent
}

TEST_F(KubeActuatorTest, SomeoneElsesCordonIsNeitherMarkedNorUndone) {
  api_->MergeIntoNode("gpu-node-1", Json{{"spec", {{"unschedulable", true}}}});
  auto k = Make();
  auto outcome = k->Cordon("gpu-node-1");
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(*outcome, CordonOutcome::kCordonedByOther);
  EXPECT_EQ(CordonMark(), "");
  Status s = k->Uncordon("gpu-node-1");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("was not cordoned by faultline"), std::string::npos);
  EXPECT_EQ(NodeSpec().value("unschedulable", false), true);
  EXPECT_TRUE(Requests("PATCH").empty());
}

TEST_F(KubeActuatorTest, UncordonUndoesOnlyItsOwnCordon) {
  auto k = Make();
  ASSERT_TRUE(k->Cordon("gpu-node-1").ok());
  ASSERT_TRUE(k->Uncordon("gpu-node-1").ok());
  EXPECT_EQ(NodeSpec().value("unschedulable", true), false);
  EXPECT_EQ(CordonMark(), "");
  // Already uncordoned: there is no cordon of ours left to undo.
  EXPECT_EQ(k->Uncordon("gpu-node-1").code(), StatusCode::kPermissionDenied);

  // Another faultline deployment's mark is not ours either.
  api_->MergeIntoNode("gpu-node-1", Json{{"spec", {{"unschedulable", true}}},
                                         {"metadata", {{"annotations", {{kCordonedByAnnotation, "other-site"}}}}}});
  Status s = k->Uncordon("gpu-node-1");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("other-site"), std::string::npos);
  EXPECT_EQ(NodeSpec().value("unschedulable", false), true);
  EXPECT_TRUE(api_->Violations().empty());
}

TEST_F(KubeActuatorTest, ConflictsAreRereadAndRetriedThenGivenUp) {
  auto k = Make();
  api_->ConflictNext(2);
  auto outcome = k->Cordon("gpu-node-1");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  int conflicts = 0;
  for (const auto& r : Requests("PATCH")) conflicts += r.status == 409;
  EXPECT_EQ(conflicts, 2);
  EXPECT_EQ(NodeSpec().value("unschedulable", false), true);

  ASSERT_TRUE(k->Uncordon("gpu-node-1").ok());
  api_->ConflictNext(1000);
  auto stuck = k->Cordon("gpu-node-1");
  ASSERT_FALSE(stuck.ok());
  EXPECT_EQ(stuck.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(stuck.status().message().find("kept changing"), std::string::npos);
  EXPECT_EQ(NodeSpec().value("unschedulable", true), false);
}

TEST_F(KubeActuatorTest, TaintIsAddedOnceUpdatedAndRemovedWithoutTouchingOthers) {
  api_->MergeIntoNode(
      "gpu-node-1", Json{{"spec", {{"taints", Json::array({{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}})}}}});
  auto k = Make();
  ASSERT_TRUE(k->Taint("gpu-node-1", "hbm_uncorrectable").ok());
  Json taints = NodeSpec()["taints"];
  ASSERT_EQ(taints.size(), 2u);
  EXPECT_EQ(taints[1]["key"], kDefaultTaintKey);
  EXPECT_EQ(taints[1]["value"], "hbm_uncorrectable");
  EXPECT_EQ(taints[1]["effect"], "NoSchedule");
  EXPECT_EQ(Requests("PATCH").back().content_type, "application/strategic-merge-patch+json");

  ASSERT_TRUE(k->Taint("gpu-node-1", "hbm_uncorrectable").ok());
  EXPECT_EQ(Requests("PATCH").size(), 1u);  // already there
  ASSERT_TRUE(k->Taint("gpu-node-1", "nvlink_down").ok());
  taints = NodeSpec()["taints"];
  ASSERT_EQ(taints.size(), 2u);
  EXPECT_EQ(taints[1]["value"], "nvlink_down");

  ASSERT_TRUE(k->Taint("gpu-node-1", "x", "NoExecute").ok());
  taints = NodeSpec()["taints"];
  ASSERT_EQ(taints.size(), 3u);
  EXPECT_TRUE(taints[2].contains("timeAdded"));

  ASSERT_TRUE(k->Untaint("gpu-node-1").ok());
  taints = NodeSpec()["taints"];
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints[0]["key"], "nvidia.com/gpu");
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();

  const size_t before = api_->Requests().size();
  EXPECT_EQ(k->Taint("gpu-node-1", "has space").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(k->Taint("gpu-node-1", "ok", "Sometimes").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(api_->Requests().size(), before);  // refused before any request
}

TEST_F(KubeActuatorTest, OneConditionPerLayerMergedIntoStatus) {
  auto k = Make();
  ASSERT_TRUE(k->SetCondition("gpu-node-1", {ConditionTypeForLayer(Layer::kGpu), true, "hbm_uncorrectable",
                                             "GPU 3 (serial 1650924060120): uncorrectable ECC\nrow remap failed"})
                  .ok());
  ASSERT_TRUE(k->SetCondition("gpu-node-1", {ConditionTypeForLayer(Layer::kOob), true, "psu degraded", "PSU 2"}).ok());
  const auto patches = Requests("PATCH");
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0].path, "/api/v1/nodes/gpu-node-1/status");
  EXPECT_EQ(patches[0].content_type, "application/strategic-merge-patch+json");
  auto find = [&](const std::string& type) {
    const Json node = api_->Node("gpu-node-1");  // kept alive for the loop
    for (const Json& c : node["status"]["conditions"]) {
      if (c["type"] == type) return c;
    }
    return Json();
  };
  ASSERT_TRUE(find("Ready").is_object());  // the kubelet's condition survives the merge
  Json gpu = find("FaultlineGPUProblem");
  ASSERT_TRUE(gpu.is_object());
  EXPECT_EQ(gpu["status"], "True");
  EXPECT_EQ(gpu["reason"], "HbmUncorrectable");
  EXPECT_EQ(gpu["message"].get<std::string>().find('\n'), std::string::npos);
  EXPECT_EQ(find("FaultlineOOBProblem")["reason"], "PsuDegraded");

  // Same status later: heartbeat moves, transition time stays; a flip moves both.
  const std::string first = gpu["lastTransitionTime"];
  clock_.Advance(120 * kNsPerSec);
  ASSERT_TRUE(k->SetCondition("gpu-node-1", {"FaultlineGPUProblem", true, "HbmUncorrectable", "still"}).ok());
  gpu = find("FaultlineGPUProblem");
  EXPECT_EQ(gpu["lastTransitionTime"], first);
  EXPECT_NE(gpu["lastHeartbeatTime"], first);
  clock_.Advance(120 * kNsPerSec);
  ASSERT_TRUE(k->SetCondition("gpu-node-1", {"FaultlineGPUProblem", false, "Resolved", "replaced"}).ok());
  gpu = find("FaultlineGPUProblem");
  EXPECT_EQ(gpu["status"], "False");
  EXPECT_NE(gpu["lastTransitionTime"], first);
  EXPECT_EQ(NodeSpec().value("unschedulable", false), false);  // a status patch changes no spec
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();
  EXPECT_EQ(k->SetCondition("gpu-node-1", {"not camel", true, "", ""}).code(), StatusCode::kInvalidArgument);
}

TEST_F(KubeActuatorTest, EventAboutTheNodeIsPosted) {
  auto k = Make();
  ASSERT_TRUE(
      k->PostEvent("gpu-node-1", {"faultline cordon", "cordoned: hbm_uncorrectable on gpu/3 (diagnosis 12)"}).ok());
  ASSERT_TRUE(k->PostEvent("gpu-node-1", {"FaultlineResolved", "fixed by ops", false}).ok());
  const auto events = api_->Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["metadata"]["namespace"], "default");
  EXPECT_EQ(events[0]["involvedObject"]["kind"], "Node");
  EXPECT_EQ(events[0]["involvedObject"]["name"], "gpu-node-1");
  EXPECT_EQ(events[0]["reason"], "FaultlineCordon");
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[1]["type"], "Normal");
  EXPECT_EQ(Requests("POST")[0].path, "/api/v1/namespaces/default/events");
  EXPECT_EQ(Requests("POST")[0].content_type, "application/json");
  EXPECT_TRUE(api_->Violations().empty());
}

TEST_F(KubeActuatorTest, DrainEvictsWorkloadsAndSkipsDaemonSetMirrorAndFinishedPods) {
  api_->AddNode("gpu-node-2");
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  api_->AddPod({"ml", "web-5d8f", "gpu-node-1", "ReplicaSet"});
  api_->AddPod({"default", "bare", "gpu-node-1", ""});
  api_->AddPod({"kube-system", "dcgm-exporter-x1", "gpu-node-1", "DaemonSet"});
  api_->AddPod({"kube-system", "kube-proxy-gpu-node-1", "gpu-node-1", "Node", true});
  api_->AddPod({"ml", "job-done", "gpu-node-1", "Job", false, "Succeeded"});
  api_->AddPod({"ml", "elsewhere", "gpu-node-2", "ReplicaSet"});
  auto k = Make();
  auto report = k->Drain("gpu-node-1");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->cordon, CordonOutcome::kCordoned);
  EXPECT_EQ(NodeSpec().value("unschedulable", false), true);
  std::vector<std::string> evicted = report->evicted;
  std::sort(evicted.begin(), evicted.end());
  EXPECT_EQ(evicted, (std::vector<std::string>{"default/bare", "ml/trainer-0", "ml/web-5d8f"}));
  EXPECT_EQ(report->skipped.size(), 3u);
  EXPECT_FALSE(api_->HasPod("ml", "trainer-0"));
  EXPECT_TRUE(api_->HasPod("kube-system", "dcgm-exporter-x1"));
  EXPECT_TRUE(api_->HasPod("kube-system", "kube-proxy-gpu-node-1"));
  EXPECT_TRUE(api_->HasPod("ml", "elsewhere"));
  for (const auto& r : Requests("POST")) {
    EXPECT_NE(r.path.find("/eviction"), std::string::npos);
    EXPECT_EQ(r.path.find("dcgm-exporter"), std::string::npos);
    EXPECT_EQ(r.path.find("kube-proxy"), std::string::npos);
  }
  const auto gets = Requests("GET");
  bool listed = false;
  for (const auto& r : gets)
    listed |= r.path == "/api/v1/pods" && r.query.find("spec.nodeName=gpu-node-1") != std::string::npos;
  EXPECT_TRUE(listed);
  EXPECT_TRUE(Requests("DELETE").empty());
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();
}

TEST_F(KubeActuatorTest, DrainRetriesPdbRefusalsWithGrowingBackOff) {
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  api_->ProtectByPdb("ml", "trainer-0", 3);
  options_.evict_backoff_initial_ms = 500;
  options_.evict_backoff_max_ms = 1500;
  auto k = Make();
  auto report = k->Drain("gpu-node-1");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->pdb_refusals, 3);
  EXPECT_EQ(report->evicted, std::vector<std::string>{"ml/trainer-0"});
  EXPECT_FALSE(api_->HasPod("ml", "trainer-0"));
  // Three back-offs, then one poll interval while the evicted pod goes away.
  ASSERT_EQ(sleeps_.size(), 4u);
  EXPECT_EQ(sleeps_[0], 500 * kNsPerMs);
  EXPECT_EQ(sleeps_[1], 1000 * kNsPerMs);
  EXPECT_EQ(sleeps_[2], 1500 * kNsPerMs);  // capped
  EXPECT_EQ(sleeps_[3], options_.drain_poll_ms * kNsPerMs);
  EXPECT_TRUE(Requests("DELETE").empty());
}

TEST_F(KubeActuatorTest, DrainGivesUpAtTheTimeoutWithoutForcing) {
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  api_->AddPod({"ml", "web", "gpu-node-1", "ReplicaSet"});
  api_->ProtectByPdb("ml", "trainer-0", -1);
  options_.drain_timeout_ms = 60'000;
  auto k = Make();
  auto report = k->Drain("gpu-node-1");
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kTimeout);
  EXPECT_NE(report.status().message().find("ml/trainer-0"), std::string::npos) << report.status().message();
  EXPECT_NE(report.status().message().find("PodDisruptionBudget"), std::string::npos);
  EXPECT_NE(report.status().message().find("no pod was forced"), std::string::npos);
  EXPECT_TRUE(api_->HasPod("ml", "trainer-0"));
  EXPECT_FALSE(api_->HasPod("ml", "web"));
  EXPECT_TRUE(Requests("DELETE").empty());
  int evictions = 0;
  for (const auto& r : Requests("POST")) evictions += r.path.find("trainer-0/eviction") != std::string::npos;
  EXPECT_GT(evictions, 3);
  EXPECT_LE(evictions, 60);  // back-off, not a busy loop: 60 s at >= 1 s per try
}

TEST_F(KubeActuatorTest, DrainWaitsForEvictedPodsToTerminate) {
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  api_->SetTerminatingLists(2);
  auto k = Make();
  auto report = k->Drain("gpu-node-1");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->evicted.size(), 1u);
  int lists = 0;
  for (const auto& r : Requests("GET")) lists += r.path == "/api/v1/pods";
  EXPECT_GE(lists, 3);
  EXPECT_FALSE(api_->HasPod("ml", "trainer-0"));
  int evictions = 0;
  for (const auto& r : Requests("POST")) evictions += r.path.find("/eviction") != std::string::npos;
  EXPECT_EQ(evictions, 1);  // a terminating pod is waited for, not evicted again
}

TEST_F(KubeActuatorTest, ServerErrorsAndTimeoutsAreErrors) {
  auto k = Make();
  api_->FailNext(1, 503);
  auto cordon = k->Cordon("gpu-node-1");
  ASSERT_FALSE(cordon.ok());
  EXPECT_EQ(cordon.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(cordon.status().message().find("503"), std::string::npos);

  api_->FailNext(1, 500);
  EXPECT_EQ(k->SetCondition("gpu-node-1", {"FaultlineGPUProblem", true, "X", "y"}).code(), StatusCode::kUnavailable);

  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  options_.request_timeout_ms = 200;
  auto slow = Make();
  api_->SetDelayMs(1500);
  Status s = slow->PostEvent("gpu-node-1", {"X", "y"});
  api_->SetDelayMs(0);
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.ToString();
  EXPECT_TRUE(api_->HasPod("ml", "trainer-0"));

  EXPECT_EQ(k->Cordon("no-such-node").status().code(), StatusCode::kNotFound);
}

TEST_F(KubeActuatorTest, EvictionServerErrorStopsTheDrain) {
  api_->AddPod({"ml", "trainer-0", "gpu-node-1", "StatefulSet"});
  auto k = Make();
  api_->FailNext(1, 500, "/eviction");
  auto failed = k->Drain("gpu-node-1");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("ml/trainer-0"), std::string::npos) << failed.status().message();
  EXPECT_TRUE(api_->HasPod("ml", "trainer-0"));
  api_->FailNext(1, 502, "/api/v1/pods");
  EXPECT_EQ(k->Drain("gpu-node-1").status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(api_->HasPod("ml", "trainer-0"));
  EXPECT_TRUE(Requests("DELETE").empty());
}

TEST_F(KubeActuatorTest, BadTokenIsPermissionDeniedAndRotatedTokenFileIsReread) {
  const fs::path token_file = dir_ / "token";
  { std::ofstream(token_file) << "stale-token\n"; }
  config_.token.clear();
  config_.token_file = token_file.string();
  auto k = Make();
  auto cordon = k->Cordon("gpu-node-1");
  ASSERT_FALSE(cordon.ok());
  EXPECT_EQ(cordon.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(cordon.status().message().find("stale-token"), std::string::npos);
  { std::ofstream(token_file) << kToken << "\n"; }  // the kubelet rotated it
  EXPECT_TRUE(k->Cordon("gpu-node-1").ok());
}

TEST_F(KubeActuatorTest, TlsIsVerifiedAgainstTheConfiguredCa) {
  config_.ca_file.clear();  // system store: the test certificate is not trusted there
  auto untrusted = Make();
  auto c = untrusted->Cordon("gpu-node-1");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(api_->Requests().empty());  // nothing reached the server, the token included

  config_.ca_pem = Slurp(api_->ca_file());  // kubeconfig certificate-authority-data
  auto trusted = Make();
  EXPECT_TRUE(trusted->Cordon("gpu-node-1").ok());
}

TEST_F(KubeActuatorTest, PlainHttpNeedsTheExplicitSwitch) {
  auto plain = FakeKubeApi::Start(false, kToken, "");
  ASSERT_NE(plain, nullptr);
  plain->AddNode("n1");
  config_.server = plain->url();
  config_.ca_file.clear();
  auto refused = KubernetesActuator::Create(config_, options_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("clear text"), std::string::npos);
  options_.allow_plain_http = true;
  auto k = Make();
  ASSERT_TRUE(k->Cordon("n1").ok());
  EXPECT_EQ(plain->Node("n1")["spec"]["unschedulable"], true);
}

// Mutual TLS: a kubeconfig's client certificate (data or files) is presented when the API
// server asks for one; without it the handshake fails before any request is made.
TEST_F(KubeActuatorTest, ClientCertificateIsPresentedWhenTheServerAsksForOne) {
  const fs::path key = dir_ / "client.key";
  const fs::path crt = dir_ / "client.crt";
  const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout '" +
                          key.string() + "' -out '" + crt.string() +
                          "' -days 1 -subj /CN=faultline-test -addext basicConstraints=critical,CA:TRUE "
                          "-addext keyUsage=critical,digitalSignature,keyCertSign "
                          "-addext extendedKeyUsage=clientAuth >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl cannot make a test client certificate here";
  fs::create_directories(dir_ / "mtls");
  auto mtls = FakeKubeApi::Start(true, kToken, (dir_ / "mtls").string(), crt.string());
  ASSERT_NE(mtls, nullptr);
  mtls->AddNode("n1");
  config_.server = mtls->url();
  config_.ca_file = mtls->ca_file();
  auto without = Make();
  auto refused = without->Cordon("n1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(mtls->Requests().empty());

  config_.client_cert_pem = Slurp(crt.string());
  config_.client_key_pem = Slurp(key.string());
  auto with_data = Make();
  ASSERT_TRUE(with_data->Cordon("n1").ok());
  EXPECT_EQ(mtls->Node("n1")["spec"]["unschedulable"], true);

  config_.client_cert_pem.clear();
  config_.client_key_pem.clear();
  config_.client_cert_file = crt.string();
  config_.client_key_file = key.string();
  auto with_files = Make();
  ASSERT_TRUE(with_files->Uncordon("n1").ok());
  EXPECT_EQ(mtls->Node("n1")["spec"]["unschedulable"], false);
  for (const std::string& m : {refused.status().message(), config_.ToString()}) {
    EXPECT_EQ(m.find("PRIVATE KEY"), std::string::npos) << m;
  }
}

// The shared client's https-only switch (what an https kubeconfig server gets): an http://
// URL is not sent at all, so a token can never cross in clear text.
TEST_F(KubeActuatorTest, HttpsOnlyTransportSendsNothingInClearText) {
  auto plain = FakeKubeApi::Start(false, kToken, "");
  ASSERT_NE(plain, nullptr);
  redfish::CurlOptions https_only;
  https_only.https_only = true;
  redfish::CurlHttpClient client(https_only);
  redfish::HttpRequest request;
  request.url = plain->url() + "/api/v1/nodes";
  request.headers = {{"Authorization", std::string("Bearer ") + kToken}};
  auto r = client.Send(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message().find(kToken), std::string::npos);
  EXPECT_TRUE(plain->Requests().empty());
  redfish::CurlHttpClient both(redfish::CurlOptions{});
  auto sent = both.Send(request);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(sent->status, 200);
}

TEST_F(KubeActuatorTest, InvalidNamesAreRefusedBeforeAnyRequest) {
  auto k = Make();
  for (const std::string& name :
       std::vector<std::string>{"", "../../api/v1/secrets", "Node_1", "a b", std::string(254, 'a'), "x?y=1"}) {
    EXPECT_EQ(k->Cordon(name).status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(k->Drain(name).status().code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_TRUE(api_->Requests().empty());
  options_.identity = "has space";
  EXPECT_FALSE(KubernetesActuator::Create(config_, options_).ok());
  options_.identity = "faultline";
  options_.drain_timeout_ms = -1;
  EXPECT_FALSE(KubernetesActuator::Create(config_, options_).ok());
}

TEST_F(KubeActuatorTest, TheTokenAppearsInNoMessageOrOutput) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::vector<std::string> messages;
  auto k = Make();
  api_->AddPod({"ml", "p", "gpu-node-1", "ReplicaSet"});
  api_->ProtectByPdb("ml", "p", -1);
  options_.drain_timeout_ms = 5'000;
  auto bounded = Make();
  messages.push_back(bounded->Drain("gpu-node-1").status().message());
  api_->FailNext(1, 500);
  messages.push_back(k->Uncordon("gpu-node-1").message());
  messages.push_back(k->Cordon("missing-node").status().message());
  KubeConfig wrong = config_;
  wrong.token = std::string(kToken) + "-wrong";
  messages.push_back((*KubernetesActuator::Create(wrong, options_))->Cordon("gpu-node-1").status().message());
  messages.push_back(config_.ToString());
  const std::string out = ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
  for (const std::string& m : messages) {
    EXPECT_FALSE(m.empty());
    EXPECT_EQ(m.find(kToken), std::string::npos) << m;
  }
  EXPECT_EQ(out.find(kToken), std::string::npos);
}

// The fake's own rules: a client that breaks them is told so, as by the real API server.
TEST_F(KubeActuatorTest, FakeServerEnforcesContentTypeBodyAndMethod) {
  KubeHttpLimits limits;
  auto call = [&](const std::string& method, const std::string& path, const std::string& ct, const std::string& body) {
    auto r = KubeRequest(config_, limits, method, path, ct, body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->status : 0;
  };
  EXPECT_EQ(call("PATCH", "/api/v1/nodes/gpu-node-1", "application/json", "{}"), 415);
  EXPECT_EQ(call("PATCH", "/api/v1/nodes/gpu-node-1", "application/json-patch+json", "[]"), 415);
  EXPECT_EQ(call("PATCH", "/api/v1/nodes/gpu-node-1", "application/merge-patch+json", "{not json"), 400);
  EXPECT_EQ(
      call("PATCH", "/api/v1/nodes/gpu-node-1", "application/merge-patch+json", R"({"spec":{"unschedulable":"yes"}})"),
      422);
  EXPECT_EQ(call("PATCH", "/api/v1/nodes/gpu-node-1", "application/merge-patch+json",
                 R"({"spec":{"taints":[{"key":"a","effect":"Never"}]}})"),
            422);
  EXPECT_EQ(call("PATCH", "/api/v1/nodes/gpu-node-1", "application/merge-patch+json",
                 R"({"metadata":{"resourceVersion":"1"},"spec":{"unschedulable":true}})"),
            409);
  EXPECT_EQ(call("PATCH", "/api/v1/nodes/gpu-node-1/status", "application/strategic-merge-patch+json",
                 R"({"status":{"conditions":[{"type":"X","status":"Maybe"}]}})"),
            422);
  EXPECT_EQ(call("PATCH", "/api/v1/nodes/nope", "application/merge-patch+json", "{}"), 404);
  EXPECT_EQ(call("PUT", "/api/v1/nodes/gpu-node-1", "application/json", "{}"), 405);
  EXPECT_EQ(call("POST", "/api/v1/namespaces/default/events", "application/json", R"({"metadata":{"name":"e"}})"), 422);
  EXPECT_EQ(call("GET", "/api/v1/pods?fieldSelector=spec.bogus%3Dx", "", ""), 400);
  api_->AddPod({"ml", "p", "gpu-node-1", "ReplicaSet"});
  EXPECT_EQ(call("POST", "/api/v1/namespaces/ml/pods/p/eviction", "application/json",
                 R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}})"),
            400);
  EXPECT_EQ(call("POST", "/api/v1/namespaces/ml/pods/p/eviction", "application/json",
                 R"({"apiVersion":"policy/v1beta2","kind":"Eviction","metadata":{"name":"p"}})"),
            422);
  EXPECT_TRUE(api_->HasPod("ml", "p"));
  EXPECT_FALSE(api_->Violations().empty());
}

}  // namespace
}  // namespace faultline::actions
