// `faultline resolve` on Kubernetes: the policy cordons a node through the Kubernetes
// platform (fake API server over HTTPS), and resolving the diagnosis uncordons it through
// the same platform (actions::Reverter), while a cordon made for another diagnosis stays.
#include <gtest/gtest.h>

#include <filesystem>

#include "actions/kube_platform.h"
#include "core/time.h"
#include "fake_kube_api.h"
#include "policy/engine.h"
#include "policy/resolve.h"
#include "store/store.h"

namespace faultline::actions {
namespace {

namespace fs = std::filesystem;
using testing_kube::FakeKubeApi;
using testing_kube::Json;

constexpr char kToken[] = "resolve-tok-5521";
constexpr int64_t kT0 = int64_t{1'767'225'600} * kNsPerSec;

class KubeResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kube_resolve_" + std::to_string(getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    api_ = FakeKubeApi::Start(true, kToken, dir_.string());
    ASSERT_NE(api_, nullptr);
    // A fleet big enough that the breaker lets one cordon through.
    for (int i = 1; i <= 20; ++i) api_->AddNode("gpu-node-" + std::to_string(i));
    KubeConfig config;
    config.server = api_->url();
    config.ca_file = api_->ca_file();
    config.token = kToken;
    config.source = "test";
    auto k = KubernetesActuator::Create(config, {});
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kube_ = std::move(k).value();
    platform_ = std::make_unique<KubernetesPlatform>(*kube_, KubePlatformOptions{"gpu-node-1"});
    auto s = Store::Open(":memory:");
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
  }

  Row<Diagnosis> Put(FaultClass c, const std::string& gpu, int64_t first_ns) {
    Diagnosis d;
    d.fault_class = c;
    d.action = Action::kCordon;
    d.layer = Layer::kGpu;
    d.component = GpuComponent(gpu);
    d.severity = Severity::kCritical;
    d.confidence = 0.9;
    d.first_ns = first_ns;
    d.last_ns = first_ns + 60 * kNsPerSec;
    d.summary = "test diagnosis";
    auto id = store_->PutDiagnosis("gpu-node-1", d, d.last_ns);
    EXPECT_TRUE(id.ok());
    return Row<Diagnosis>{*id, "gpu-node-1", d};
  }

  bool Cordoned() const { return api_->Node("gpu-node-1")["spec"].value("unschedulable", false); }

  fs::path dir_;
  std::unique_ptr<FakeKubeApi> api_;
  std::unique_ptr<KubernetesActuator> kube_;
  std::unique_ptr<KubernetesPlatform> platform_;
  std::unique_ptr<Store> store_;
};

TEST_F(KubeResolveTest, ResolvingTheDiagnosisUncordonsTheNodeFaultlineCordonedForIt) {
  const Row<Diagnosis> row = Put(FaultClass::kHostMemory, "3", kT0);
  policy::PolicyConfig config;
  config.settle_ns = 0;  // settling has its own tests (policy_settle_test.cc)
  config.enable = {ActionClass::kCordon};
  policy::Engine engine(config, *store_, "gpu-node-1", {platform_.get()}, platform_.get());
  auto out = engine.OnDiagnoses({row}, kT0 + 120 * kNsPerSec);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(Cordoned());

  auto r = policy::ResolveIncident(*store_, row.id, "replaced GPU 3", platform_.get(), "", kT0 + 3600 * kNsPerSec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->resumed);
  EXPECT_FALSE(Cordoned());
  const Json node = api_->Node("gpu-node-1");
  EXPECT_TRUE(node["spec"].value("taints", Json::array()).empty());
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();
}

TEST_F(KubeResolveTest, ACordonForAnotherDiagnosisIsNotUndone) {
  const Row<Diagnosis> first = Put(FaultClass::kHostMemory, "3", kT0);
  policy::PolicyConfig config;
  config.settle_ns = 0;  // settling has its own tests (policy_settle_test.cc)
  config.enable = {ActionClass::kCordon};
  policy::Engine engine(config, *store_, "gpu-node-1", {platform_.get()}, platform_.get());
  ASSERT_TRUE(engine.OnDiagnoses({first}, kT0 + 120 * kNsPerSec).ok());
  ASSERT_TRUE(Cordoned());
  // A second, unrelated diagnosis on the node: faultline made no cordon for it.
  const Row<Diagnosis> second = Put(FaultClass::kHostMemory, "5", kT0 + 600 * kNsPerSec);
  auto r = policy::ResolveIncident(*store_, second.id, "reseated GPU 5", platform_.get(), "", kT0 + 3600 * kNsPerSec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->resumed);
  EXPECT_TRUE(Cordoned());
  // Without a platform the incident still closes and the node is left as it is.
  auto closed = policy::ResolveIncident(*store_, first.id, "replaced GPU 3", nullptr, "", kT0 + 3700 * kNsPerSec);
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->resumed);
  EXPECT_TRUE(Cordoned());
}

// Store ids are per node: gpu-node-2's store has a diagnosis with gpu-node-1's id too.
// Resolving it, even aimed at gpu-node-1, never uncordons the cordon made for gpu-node-1's own.
TEST_F(KubeResolveTest, AnotherNodesDiagnosisWithTheSameIdNeverUncordons) {
  KubernetesPlatform by_target(*kube_);  // each decision on its own target node
  policy::PolicyConfig config;
  config.settle_ns = 0;               // settling has its own tests (policy_settle_test.cc)
  config.breaker_max_percent = 50.0;  // two cordons in a fleet of 20
  config.enable = {ActionClass::kCordon};
  auto other = Store::Open(":memory:");
  ASSERT_TRUE(other.ok());
  const Row<Diagnosis> mine = Put(FaultClass::kHostMemory, "3", kT0);
  auto their_id = (*other)->PutDiagnosis("gpu-node-2", mine.value, mine.value.last_ns);
  ASSERT_TRUE(their_id.ok());
  ASSERT_EQ(*their_id, mine.id);
  const Row<Diagnosis> theirs{*their_id, "gpu-node-2", mine.value};
  auto cordon = [&](Store& store, const std::string& node, const Row<Diagnosis>& row) {
    policy::Engine engine(config, store, node, {&by_target}, &by_target);
    engine.UseClock(nullptr, [](int64_t) {});  // the breaker's settle wait: no sleeping here
    ASSERT_TRUE(engine.OnDiagnoses({row}, kT0 + 120 * kNsPerSec).ok());
  };
  cordon(*store_, "gpu-node-1", mine);
  cordon(**other, "gpu-node-2", theirs);
  ASSERT_TRUE(Cordoned());
  ASSERT_TRUE(api_->Node("gpu-node-2")["spec"].value("unschedulable", false));

  auto slip = policy::ResolveIncident(**other, theirs.id, "fixed", &by_target, "gpu-node-1", kT0 + 3600 * kNsPerSec);
  ASSERT_TRUE(slip.ok()) << slip.status().ToString();
  EXPECT_FALSE(slip->resumed);
  EXPECT_TRUE(Cordoned());
  auto r = policy::ResolveIncident(*store_, mine.id, "replaced GPU 3", &by_target, "", kT0 + 3700 * kNsPerSec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->resumed);
  EXPECT_FALSE(Cordoned());
  EXPECT_TRUE(api_->Node("gpu-node-2")["spec"].value("unschedulable", false));
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();
}

}  // namespace
}  // namespace faultline::actions
