// `faultline agent --check-config` through the binary: a config whose secret files are
// missing, unreadable or open to others is not "ok"; every such file is named with its key
// (never its content) and the exit is 2. And `--listen-host`, the DaemonSet's per-pod address.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "run_faultline.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing_cli::Faultline;

constexpr char kSecret[] = "s3cr3t-value-7d1f";

class AgentCheckConfigCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("agent_check_config_" + std::to_string(getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Secret(const std::string& name, mode_t mode = 0600) const {
    std::ofstream(Path(name)) << kSecret << "\n";
    ::chmod(Path(name).c_str(), mode);
  }
  // A config with every secret-bearing feature on; the files are under dir_.
  std::string WriteConfig(const std::string& listen = "0.0.0.0:9465") const {
    const std::string text = "[agent]\nstore_path = \"" + Path("f.db") +
                             "\"\n"
                             "[redfish]\nurl = \"https://bmc.example.invalid\"\nuser = \"faultline\"\n"
                             "password_file = \"" +
                             Path("bmc-password") +
                             "\"\n"
                             "[server]\nlisten = \"" +
                             listen + "\"\ntoken_file = \"" + Path("api-token") +
                             "\"\n"
                             "[assistant]\nllm_url = \"https://llm.example.invalid/v1\"\nllm_model = \"m\"\n"
                             "llm_key_file = \"" +
                             Path("llm-key") +
                             "\"\n"
                             "[fleet]\nenabled = true\nurls = \"nats://127.0.0.1:4222\"\ncredentials_file = \"" +
                             Path("nats.creds") +
                             "\"\n"
                             "[policy]\nplatform = \"none\"\nwebhook_url = \"https://hooks.example.invalid/f\"\n"
                             "webhook_secret_file = \"" +
                             Path("webhook-secret") + "\"\n";
    std::ofstream(Path("agent.toml")) << text;
    return Path("agent.toml");
  }
  void WriteEverySecret() const {
    for (const char* f : {"bmc-password", "api-token", "llm-key", "nats.creds", "webhook-secret"}) Secret(f);
  }

  fs::path dir_;
};

TEST_F(AgentCheckConfigCli, EveryMissingSecretFileIsNamedWithItsKeyAndExitsTwo) {
  const std::string config = WriteConfig();
  const auto r = Faultline("agent --config " + config + " --check-config");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out.find("ok"), std::string::npos) << r.out;
  for (const char* key : {"redfish.password_file", "server.token_file", "assistant.llm_key_file",
                          "fleet.credentials_file", "policy.webhook_secret_file"}) {
    EXPECT_NE(r.err.find(std::string(config) + ": " + key + ": "), std::string::npos) << key << "\n" << r.err;
  }
  EXPECT_NE(r.err.find(Path("bmc-password")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(Path("webhook-secret")), std::string::npos) << r.err;
  // The webhook secret is said once, not again by the actuators' own check.
  EXPECT_EQ(r.err.find("policy.webhook_secret:"), std::string::npos) << r.err;
}

TEST_F(AgentCheckConfigCli, PresentOwnerOnlySecretsAreOk) {
  WriteEverySecret();
  const auto r = Faultline("agent --config " + WriteConfig() + " --check-config");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": ok (node "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(kSecret), std::string::npos);
  EXPECT_EQ(r.err.find(kSecret), std::string::npos);
}

TEST_F(AgentCheckConfigCli, ASecretOthersCanReadOrNobodyCanOpenIsNotOk) {
  WriteEverySecret();
  Secret("api-token", 0644);
  fs::remove(Path("llm-key"));
  fs::create_directory(Path("llm-key"));  // there, but not a file
  const auto r = Faultline("agent --config " + WriteConfig() + " --check-config");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("server.token_file: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("assistant.llm_key_file: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("redfish.password_file"), std::string::npos) << r.err;  // that one is fine
  EXPECT_EQ(r.err.find(kSecret), std::string::npos);
}

// Outside a pod, the shipped DaemonSet config names what the pod would have: the API token
// the Secret mounts and the service account the kubelet mounts.
TEST_F(AgentCheckConfigCli, ShippedKubernetesConfigOutsideAPodIsNotOk) {
  const std::string config = std::string(FAULTLINE_SOURCE_DIR) + "/deploy/config/kubernetes-node.toml";
  const auto r = Faultline("agent --config " + config + " --check-config", "", "env -u KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("server.token_file: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("policy.kubeconfig"), std::string::npos) << r.err;
}

TEST_F(AgentCheckConfigCli, ListenHostKeepsThePortAndNeedsATokenOffLoopback) {
  WriteEverySecret();
  const std::string config = WriteConfig("127.0.0.1:9465");
  // Nothing is bound by --check-config: the address is only validated.
  auto r = Faultline("agent --config " + config + " --listen-host 192.0.2.10 --check-config");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Faultline("agent --config " + config + " --listen-host '$(POD_IP)' --check-config");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--listen-host must be an address"), std::string::npos) << r.err;

  // The same without a token: refused before anything starts.
  std::string text;
  {
    std::ifstream in(config);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const std::string token_line = "token_file = \"" + Path("api-token") + "\"\n";
  text.erase(text.find(token_line), token_line.size());
  std::ofstream(config) << text;
  r = Faultline("agent --config " + config + " --listen-host 192.0.2.10 --check-config");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not loopback: set server.token_file"), std::string::npos) << r.err;
  r = Faultline("agent --config " + config + " --listen-host 127.0.0.2 --check-config");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace faultline
