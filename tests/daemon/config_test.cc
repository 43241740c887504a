#include "daemon/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace faultline::daemon {
namespace {

constexpr int64_t kSec = 1'000'000'000;

TEST(DaemonConfig, EmptyTextGivesDocumentedDefaults) {
  auto c = ParseAgentConfig("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->agent.node, "");
  EXPECT_EQ(c->agent.store_path, "/var/lib/faultline/faultline.db");
  EXPECT_EQ(c->agent.log_level, LogLevel::kInfo);
  EXPECT_TRUE(c->kmsg.enabled);
  EXPECT_EQ(c->kmsg.path, "/dev/kmsg");
  EXPECT_TRUE(c->nvml.enabled);
  EXPECT_EQ(c->nvml.interval_ns, 10 * kSec);
  EXPECT_EQ(c->dcgm_exporter.url, "");
  EXPECT_EQ(c->redfish.url, "");
  EXPECT_FALSE(c->redfish.insecure);
  EXPECT_EQ(c->redfish.interval_ns, 60 * kSec);
  EXPECT_EQ(c->sysfs.root, "/");
  EXPECT_EQ(c->workload.listen, "");
  EXPECT_EQ(c->isolate.window_ns, 1800 * kSec);
}

TEST(DaemonConfig, PrintedDefaultConfigParsesToTheDefaults) {
  auto printed = ParseAgentConfig(DefaultAgentConfigToml());
  ASSERT_TRUE(printed.ok()) << printed.status().ToString();
  auto empty = ParseAgentConfig("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(printed->agent.store_path, empty->agent.store_path);
  EXPECT_EQ(printed->agent.evaluate_interval_ns, empty->agent.evaluate_interval_ns);
  EXPECT_EQ(printed->agent.shutdown_timeout_ns, empty->agent.shutdown_timeout_ns);
  EXPECT_EQ(printed->agent.max_backoff_ns, empty->agent.max_backoff_ns);
  EXPECT_EQ(printed->agent.retention_interval_ns, empty->agent.retention_interval_ns);
  EXPECT_EQ(empty->agent.retention_interval_ns, 3600 * kSec);
  EXPECT_EQ(printed->kmsg.interval_ns, empty->kmsg.interval_ns);
  EXPECT_EQ(printed->nvml.interval_ns, empty->nvml.interval_ns);
  EXPECT_EQ(printed->dcgm_exporter.interval_ns, empty->dcgm_exporter.interval_ns);
  EXPECT_EQ(printed->redfish.interval_ns, empty->redfish.interval_ns);
  EXPECT_EQ(printed->redfish.sweep_deadline_ns, empty->redfish.sweep_deadline_ns);
  EXPECT_EQ(printed->sysfs.interval_ns, empty->sysfs.interval_ns);
  EXPECT_EQ(printed->workload.interval_ns, empty->workload.interval_ns);
  EXPECT_EQ(printed->isolate.window_ns, empty->isolate.window_ns);
}

TEST(DaemonConfig, EveryOptionIsRead) {
  auto c = ParseAgentConfig(R"(
[agent]
node = "gpu-node-7"
store_path = "/tmp/x.db"
log_level = "debug"
evaluate_interval = "250ms"
shutdown_timeout = 3
max_backoff = "2m"
retention_interval = "15m"
[kmsg]
enabled = false
path = "/var/log/kern.log"
interval = "2s"
[nvml]
enabled = false
interval = 5
library_path = "/opt/libnvidia-ml.so.1"
[dcgm_exporter]
url = "http://127.0.0.1:9400/metrics"
interval = "15s"
[redfish]
url = "https://127.0.0.1:8443"
user = "admin"
password_file = "/etc/faultline/bmc.pw"
ca_file = "/etc/faultline/ca.pem"
insecure = true
interval = "30s"
sweep_deadline = "45s"
[sysfs]
enabled = false
root = "/tmp/fake"
interval = "20s"
topology_file = "/etc/faultline/topology.yaml"
[workload]
listen = "127.0.0.1:9464"
file = "/run/steps.log"
interval = "500ms"
[isolate]
window = "10m"
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->agent.node, "gpu-node-7");
  EXPECT_EQ(c->agent.store_path, "/tmp/x.db");
  EXPECT_EQ(c->agent.log_level, LogLevel::kDebug);
  EXPECT_EQ(c->agent.evaluate_interval_ns, 250'000'000);
  EXPECT_EQ(c->agent.shutdown_timeout_ns, 3 * kSec);
  EXPECT_EQ(c->agent.max_backoff_ns, 120 * kSec);
  EXPECT_EQ(c->agent.retention_interval_ns, 900 * kSec);
  EXPECT_FALSE(c->kmsg.enabled);
  EXPECT_EQ(c->kmsg.path, "/var/log/kern.log");
  EXPECT_EQ(c->kmsg.interval_ns, 2 * kSec);
  EXPECT_FALSE(c->nvml.enabled);
  EXPECT_EQ(c->nvml.interval_ns, 5 * kSec);
  EXPECT_EQ(c->nvml.library_path, "/opt/libnvidia-ml.so.1");
  EXPECT_EQ(c->dcgm_exporter.url, "http://127.0.0.1:9400/metrics");
  EXPECT_EQ(c->dcgm_exporter.interval_ns, 15 * kSec);
  EXPECT_EQ(c->redfish.url, "https://127.0.0.1:8443");
  EXPECT_EQ(c->redfish.user, "admin");
  EXPECT_EQ(c->redfish.password_file, "/etc/faultline/bmc.pw");
  EXPECT_EQ(c->redfish.ca_file, "/etc/faultline/ca.pem");
  EXPECT_TRUE(c->redfish.insecure);
  EXPECT_EQ(c->redfish.interval_ns, 30 * kSec);
  EXPECT_EQ(c->redfish.sweep_deadline_ns, 45 * kSec);
  EXPECT_FALSE(c->sysfs.enabled);
  EXPECT_EQ(c->sysfs.root, "/tmp/fake");
  EXPECT_EQ(c->sysfs.interval_ns, 20 * kSec);
  EXPECT_EQ(c->sysfs.topology_file, "/etc/faultline/topology.yaml");
  EXPECT_EQ(c->workload.listen, "127.0.0.1:9464");
  EXPECT_EQ(c->workload.file, "/run/steps.log");
  EXPECT_EQ(c->workload.interval_ns, 500'000'000);
  EXPECT_EQ(c->isolate.window_ns, 600 * kSec);
}

void ExpectInvalid(const std::string& text, const std::string& must_mention) {
  auto c = ParseAgentConfig(text);
  ASSERT_FALSE(c.ok()) << "accepted: " << text;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(must_mention), std::string::npos) << c.status().message();
}

TEST(DaemonConfig, UnknownKeyIsAnErrorNamingIt) {
  ExpectInvalid("[nvml]\nintervall = 5\n", "nvml.intervall");
  ExpectInvalid("[agent]\nnode = \"a\"\npassword = \"x\"\n", "agent.password");
}

TEST(DaemonConfig, UnknownSectionIsAnError) { ExpectInvalid("[gpu]\nenabled = true\n", "gpu"); }

TEST(DaemonConfig, TopLevelKeyIsAnError) { ExpectInvalid("node = \"x\"\n", "node"); }

TEST(DaemonConfig, SectionThatIsNotATableIsAnError) { ExpectInvalid("kmsg = 3\n", "kmsg"); }

TEST(DaemonConfig, WrongTypesAreErrors) {
  ExpectInvalid("[kmsg]\nenabled = \"yes\"\n", "kmsg.enabled");
  ExpectInvalid("[kmsg]\npath = 7\n", "kmsg.path");
  ExpectInvalid("[nvml]\ninterval = true\n", "nvml.interval");
  ExpectInvalid("[nvml]\ninterval = 1.5\n", "nvml.interval");
  ExpectInvalid("[agent]\nlog_level = \"verbose\"\n", "agent.log_level");
  ExpectInvalid("[redfish]\ninsecure = 1\n", "redfish.insecure");
}

TEST(DaemonConfig, BadDurationsAreErrors) {
  ExpectInvalid("[nvml]\ninterval = 0\n", "nvml.interval");
  ExpectInvalid("[nvml]\ninterval = -3\n", "nvml.interval");
  ExpectInvalid("[nvml]\ninterval = \"soon\"\n", "nvml.interval");
  ExpectInvalid("[isolate]\nwindow = \"\"\n", "isolate.window");
  ExpectInvalid("[nvml]\ninterval = 99999999999999\n", "nvml.interval");
}

TEST(DaemonConfig, BadValuesAreErrors) {
  ExpectInvalid("[agent]\nstore_path = \"\"\n", "agent.store_path");
  ExpectInvalid("[workload]\nlisten = \"localhost\"\n", "workload.listen");
}

TEST(DaemonConfig, MalformedTomlNamesTheLine) {
  ExpectInvalid("[agent]\nnode = \"unterminated\n", "line 2");
  ExpectInvalid("[agent\n", "line 1");
  ExpectInvalid("[agent]\nnode = \"a\"\nnode = \"b\"\n", "line 3");
}

TEST(DaemonConfig, HostileInputNeverCrashes) {
  const std::string deep(10000, '[');
  EXPECT_FALSE(ParseAgentConfig(deep).ok());
  EXPECT_FALSE(ParseAgentConfig(std::string("\x00\xff\xfe[agent]", 10)).ok());
  EXPECT_FALSE(ParseAgentConfig("[agent]\nnode = " + std::string(100000, '"')).ok());
  std::string many = "[agent]\n";
  for (int i = 0; i < 1000; ++i) many += "k" + std::to_string(i) + " = 1\n";
  ExpectInvalid(many, "agent.k");
}

TEST(DaemonConfig, MissingFileIsNotFound) {
  auto c = LoadAgentConfig("/nonexistent/faultline-agent.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
}

TEST(DaemonConfig, LoadsAFile) {
  const auto path = std::filesystem::temp_directory_path() / ("daemon_config_" + std::to_string(::getpid()) + ".toml");
  {
    std::ofstream out(path);
    out << "[agent]\nnode = \"n1\"\n";
  }
  auto c = LoadAgentConfig(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->agent.node, "n1");
}

TEST(DaemonConfig, ExampleConfigParses) {
  const std::string path = std::string(FAULTLINE_SOURCE_DIR) + "/examples/agent.toml";
  auto c = LoadAgentConfig(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->agent.node.empty());
}

}  // namespace
}  // namespace faultline::daemon
