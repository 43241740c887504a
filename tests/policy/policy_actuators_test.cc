// policy::BuildActuators: which actuator carries out which class for which [policy] config,
// the fleet view that comes with the platform, the configured commands reaching the
// runner, and configuration errors naming their key. Nothing here contacts a platform.
#include <gtest/gtest.h>
#include <sys/statfs.h>

#include <filesystem>
#include <fstream>

#include "actions/bundle_actuator.h"
#include "actions/kube_platform.h"
#include "actions/node_commands.h"
#include "actions/slurm.h"
#include "actions/webhook.h"
#include "daemon/config.h"
#include "policy/actuators.h"
#include "sources/ipmi/command_runner.h"
#include "store/store.h"

namespace faultline::policy {
namespace {

namespace fs = std::filesystem;
using actions::ActionClass;

class RecordingRunner final : public ipmi::CommandRunner {
 public:
  Result<std::string> Run(const std::vector<std::string>& argv, const ipmi::CommandOptions&) override {
    calls.push_back(argv);
    return std::string();
  }
  std::vector<std::vector<std::string>> calls;
};

// The actuator that carries out `c`, or null.
actions::Actuator* For(const ActuatorSet& set, ActionClass c) {
  actions::Actuator* found = nullptr;
  for (actions::Actuator* a : set.actuators()) {
    if (a->Handles(c)) {
      EXPECT_EQ(found, nullptr) << "two actuators handle " << actions::ToString(c);
      found = a;
    }
  }
  return found;
}

class PolicyActuatorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // On the build directory's disk, not /tmp (it may be tmpfs, which state_dir refuses).
    dir_ = fs::current_path() / ("policy_actuators_" + std::to_string(getpid()) + "_" +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_.state_dir = (dir_ / "state").string();
    config_.bundle_dir = (dir_ / "bundles").string();
    deps_.runner = &runner_;
    deps_.boot_id_path = (dir_ / "boot_id").string();
    std::ofstream(dir_ / "boot_id") << "5f1b2c3d-0000-4000-8000-000000000001\n";
    deps_.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
    deps_.service_account_dir = (dir_ / "sa").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<ActuatorSet> Build() {
    auto set = BuildActuators(config_, deps_);
    EXPECT_TRUE(set.ok()) << set.status().ToString();
    return set.ok() ? std::move(set).value() : nullptr;
  }
  std::string Error() {
    auto set = BuildActuators(config_, deps_);
    EXPECT_FALSE(set.ok());
    EXPECT_EQ(set.ok() ? StatusCode::kOk : set.status().code(), StatusCode::kInvalidArgument);
    return set.ok() ? "" : set.status().message();
  }
  void WriteKubeconfig(const std::string& server = "https://127.0.0.1:1") {
    std::ofstream(dir_ / "kubeconfig") << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                          "clusters:\n- name: k\n  cluster:\n    server: "
                                       << server
                                       << "\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                                          "users:\n- name: u\n  user:\n    token: t0k3n-for-tests\n";
    config_.kubeconfig = (dir_ / "kubeconfig").string();
  }

  fs::path dir_;
  PolicyConfig config_;
  ActuatorDeps deps_;
  RecordingRunner runner_;
};

TEST_F(PolicyActuatorsTest, SlurmByDefaultWithCommandsAndNoBundleWithoutAStore) {
  auto set = Build();
  ASSERT_NE(set, nullptr);
  auto* slurm = dynamic_cast<actions::SlurmActuator*>(For(*set, ActionClass::kDrain));
  ASSERT_NE(slurm, nullptr);
  EXPECT_EQ(For(*set, ActionClass::kCordon), slurm);
  EXPECT_EQ(set->fleet(), static_cast<actions::FleetView*>(slurm));
  EXPECT_NE(dynamic_cast<actions::GpuResetActuator*>(For(*set, ActionClass::kResetGpu)), nullptr);
  EXPECT_NE(dynamic_cast<actions::RebootActuator*>(For(*set, ActionClass::kRebootNode)), nullptr);
  EXPECT_EQ(For(*set, ActionClass::kRmaBundle), nullptr);  // needs the store
  EXPECT_EQ(For(*set, ActionClass::kFacilityTicket), nullptr);
  EXPECT_EQ(For(*set, ActionClass::kWebhook), nullptr);  // no URL
  EXPECT_EQ(For(*set, ActionClass::kNotifyUser), nullptr);
}

TEST_F(PolicyActuatorsTest, EveryClassHasAnActuatorWithAStoreAndAWebhook) {
  auto store = Store::Open((dir_ / "faultline.db").string());
  ASSERT_TRUE(store.ok());
  deps_.store = store->get();
  config_.webhook_url = "https://hooks.example.test/faultline";
  auto set = Build();
  ASSERT_NE(set, nullptr);
  for (ActionClass c : actions::AllActionClasses()) EXPECT_NE(For(*set, c), nullptr) << actions::ToString(c);
  auto* bundles = dynamic_cast<actions::BundleActuator*>(For(*set, ActionClass::kRmaBundle));
  ASSERT_NE(bundles, nullptr);
  EXPECT_EQ(For(*set, ActionClass::kFacilityTicket), bundles);
  actions::Decision d;
  d.key = "n|rma_bundle|k";
  EXPECT_EQ(fs::path(bundles->PathFor(d)).parent_path(), fs::path(config_.bundle_dir));
  EXPECT_NE(dynamic_cast<actions::WebhookActuator*>(For(*set, ActionClass::kNotifyUser)), nullptr);
}

TEST_F(PolicyActuatorsTest, PlatformNoneHasNoCordonDrainOrFleet) {
  config_.platform = "none";
  auto set = Build();
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(For(*set, ActionClass::kCordon), nullptr);
  EXPECT_EQ(For(*set, ActionClass::kDrain), nullptr);
  EXPECT_EQ(set->fleet(), nullptr);  // the breaker fails closed
  EXPECT_NE(For(*set, ActionClass::kResetGpu), nullptr);
}

TEST_F(PolicyActuatorsTest, KubernetesFromAKubeconfigOrTheServiceAccount) {
  config_.platform = "kubernetes";
  WriteKubeconfig();
  config_.kubernetes_node = "k8s-gpu-7";
  auto set = Build();
  ASSERT_NE(set, nullptr);
  auto* kube = dynamic_cast<actions::KubernetesPlatform*>(For(*set, ActionClass::kDrain));
  ASSERT_NE(kube, nullptr);
  EXPECT_EQ(For(*set, ActionClass::kCordon), kube);
  EXPECT_EQ(set->fleet(), static_cast<actions::FleetView*>(kube));
  actions::Decision d;
  d.target_node = "slurm-name";
  EXPECT_EQ(kube->NodeFor(d), "k8s-gpu-7");
  EXPECT_EQ(dynamic_cast<actions::SlurmActuator*>(For(*set, ActionClass::kCordon)), nullptr);

  // No kubeconfig: the in-cluster service account.
  config_.kubeconfig.clear();
  config_.kubernetes_node.clear();
  fs::create_directories(dir_ / "sa");
  std::ofstream(dir_ / "sa" / "token") << "sa-token\n";
  std::ofstream(dir_ / "sa" / "ca.crt") << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  deps_.env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBERNETES_SERVICE_HOST") return "10.96.0.1";
    if (name == "KUBERNETES_SERVICE_PORT") return "443";
    return std::nullopt;
  };
  auto in_cluster = Build();
  ASSERT_NE(in_cluster, nullptr);
  auto* k2 = dynamic_cast<actions::KubernetesPlatform*>(For(*in_cluster, ActionClass::kCordon));
  ASSERT_NE(k2, nullptr);
  EXPECT_EQ(k2->NodeFor(d), "slurm-name");  // no kubernetes_node: the policy's target node
}

TEST_F(PolicyActuatorsTest, KubernetesErrorsNameTheKeyAndNeverTheToken) {
  config_.platform = "kubernetes";
  std::string e = Error();  // not in a pod, no kubeconfig
  EXPECT_NE(e.find("policy.kubeconfig"), std::string::npos) << e;
  EXPECT_NE(e.find("in-cluster"), std::string::npos) << e;
  config_.kubeconfig = (dir_ / "absent").string();
  e = Error();
  EXPECT_NE(e.find("policy.kubeconfig"), std::string::npos) << e;
  WriteKubeconfig("http://127.0.0.1:1");  // the token would cross in clear text
  e = Error();
  EXPECT_NE(e.find("policy.kubeconfig"), std::string::npos) << e;
  EXPECT_EQ(e.find("t0k3n-for-tests"), std::string::npos) << e;
  WriteKubeconfig();
  config_.kubernetes_context = "nope";
  e = Error();
  EXPECT_NE(e.find("policy.kubeconfig"), std::string::npos) << e;
  config_.kubernetes_context.clear();
  config_.kubernetes_node = "Not_A_Node";
  e = Error();
  EXPECT_NE(e.find("policy.kubernetes_node"), std::string::npos) << e;
}

TEST_F(PolicyActuatorsTest, ConfiguredCommandsReachTheRunner) {
  config_.gpu_reset_command = "/opt/site/gpu-reset --bus {gpu} --yes";
  config_.reboot_command = "/usr/sbin/shutdown -r '+1' \"faultline reboot\"";
  auto set = Build();
  ASSERT_NE(set, nullptr);
  actions::Decision reset;
  reset.key = "n|reset_gpu|k";
  reset.action_class = ActionClass::kResetGpu;
  reset.diagnosis.component = {ComponentType::kGpu, "2", {{"bdf", "0000:61:00.0"}}};
  ASSERT_TRUE(For(*set, ActionClass::kResetGpu)->Apply(reset).ok());
  actions::Decision reboot;
  reboot.key = "n|reboot_node|k";
  reboot.action_class = ActionClass::kRebootNode;
  ASSERT_TRUE(For(*set, ActionClass::kRebootNode)->Apply(reboot).ok());
  ASSERT_EQ(runner_.calls.size(), 2u);
  EXPECT_EQ(runner_.calls[0], (std::vector<std::string>{"/opt/site/gpu-reset", "--bus", "0000:61:00.0", "--yes"}));
  EXPECT_EQ(runner_.calls[1], (std::vector<std::string>{"/usr/sbin/shutdown", "-r", "+1", "faultline reboot"}));
  EXPECT_TRUE(fs::exists(dir_ / "state"));  // the reboot marker went to state_dir
}

TEST_F(PolicyActuatorsTest, BadValuesAreErrorsNamingTheKey) {
  const std::vector<std::pair<std::function<void(PolicyConfig&)>, std::string>> cases = {
      {[](PolicyConfig& c) { c.platform = "openshift"; }, "policy.platform: unknown platform 'openshift'"},
      {[](PolicyConfig& c) { c.platform = ""; }, "policy.platform"},
      {[](PolicyConfig& c) { c.gpu_reset_command = "nvidia-smi 'unterminated"; }, "policy.gpu_reset_command"},
      {[](PolicyConfig& c) { c.gpu_reset_command = "   "; }, "policy.gpu_reset_command"},
      {[](PolicyConfig& c) { c.reboot_command = ""; }, "policy.reboot_command"},
      {[](PolicyConfig& c) { c.bundle_dir = ""; }, "policy.bundle_dir"},
      {[](PolicyConfig& c) { c.state_dir = ""; }, "policy.state_dir"},
      {[](PolicyConfig& c) { c.kubeconfig = "/etc/kube/config"; }, "policy.kubeconfig: set, but platform"},
      {[](PolicyConfig& c) { c.webhook_url = "ftp://hooks.example.test/"; }, "policy.webhook_url"},
  };
  for (const auto& [change, want] : cases) {
    PolicyConfig saved = config_;
    change(config_);
    const std::string e = Error();
    EXPECT_NE(e.find(want), std::string::npos) << want << " -> " << e;
    config_ = saved;
  }
}

TEST_F(PolicyActuatorsTest, RebootMarkersMustNotLiveOnTmpfs) {
  struct statfs fs {};
  if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != 0x01021994) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  config_.state_dir = "/dev/shm/faultline-test-state";
  EXPECT_NE(Build(), nullptr);  // harmless while reboot_node is not enabled
  config_.enable.insert(ActionClass::kRebootNode);
  const std::string e = Error();
  EXPECT_NE(e.find("policy.state_dir"), std::string::npos) << e;
  EXPECT_NE(e.find("tmpfs"), std::string::npos) << e;
}

// The new keys through the agent's TOML.
TEST(PolicyActuatorsConfig, TomlKeysAreReadAndCheckedByName) {
  auto c = daemon::ParseAgentConfig(R"(
[policy]
platform = "kubernetes"
kubeconfig = "/etc/faultline/kubeconfig"
kubernetes_context = "prod"
kubernetes_node = "gpu-7.cluster.local"
bundle_dir = "/srv/rma"
state_dir = "/var/lib/faultline/state"
gpu_reset_command = "nvidia-smi -r -i {gpu}"
reboot_command = "/sbin/reboot"
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->policy.platform, "kubernetes");
  EXPECT_EQ(c->policy.kubeconfig, "/etc/faultline/kubeconfig");
  EXPECT_EQ(c->policy.kubernetes_context, "prod");
  EXPECT_EQ(c->policy.kubernetes_node, "gpu-7.cluster.local");
  EXPECT_EQ(c->policy.bundle_dir, "/srv/rma");
  EXPECT_EQ(c->policy.state_dir, "/var/lib/faultline/state");
  EXPECT_EQ(c->policy.gpu_reset_command, "nvidia-smi -r -i {gpu}");
  EXPECT_EQ(c->policy.reboot_command, "/sbin/reboot");
  const std::pair<const char*, const char*> bad[] = {
      {"[policy]\nplatform = \"nomad\"\n", "policy.platform: unknown platform 'nomad'"},
      {"[policy]\nplatform = 1\n", "policy.platform: expected a string"},
      {"[policy]\nreboot_command = \"reboot 'now\"\n", "policy.reboot_command"},
      {"[policy]\nkubeconfig = \"/k\"\n", "policy.kubeconfig"},
      {"[policy]\nbundle_dir = \"\"\n", "policy.bundle_dir"},
      {"[policy]\nkube_config = \"/k\"\n", "policy.kube_config: unknown key"},
  };
  for (const auto& [text, want] : bad) {
    auto r = daemon::ParseAgentConfig(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << text << " -> " << r.status().message();
  }
  auto defaults = daemon::ParseAgentConfig(daemon::DefaultAgentConfigToml());
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  const PolicyConfig built_in;
  EXPECT_EQ(defaults->policy.platform, built_in.platform);
  EXPECT_EQ(defaults->policy.bundle_dir, built_in.bundle_dir);
  EXPECT_EQ(defaults->policy.state_dir, built_in.state_dir);
  EXPECT_EQ(defaults->policy.gpu_reset_command, built_in.gpu_reset_command);
  EXPECT_EQ(defaults->policy.reboot_command, built_in.reboot_command);
}

}  // namespace
}  // namespace faultline::policy
