#include <gtest/gtest.h>

#include "daemon/config.h"

namespace faultline::daemon {
namespace {

using actions::ActionClass;

TEST(PolicyConfig, DefaultsAreSafeAndTheDefaultFileParses) {
  auto c = ParseAgentConfig("");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->policy.enable.empty());  // dry run for every class
  EXPECT_EQ(c->policy.breaker_max_nodes, 3);
  EXPECT_DOUBLE_EQ(c->policy.breaker_max_percent, 2.0);
  auto d = ParseAgentConfig(DefaultAgentConfigToml());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->policy.enable.empty());
  EXPECT_EQ(d->policy.cooldown_ns, c->policy.cooldown_ns);
  EXPECT_EQ(d->policy.breaker_window_ns, c->policy.breaker_window_ns);
}

TEST(PolicyConfig, EveryKeyIsRead) {
  auto c = ParseAgentConfig(R"(
[policy]
enable = ["drain", "cordon", "webhook", "notify_user", "facility_ticket", "rma_bundle", "reset_gpu", "reboot_node"]
cooldown = "10m"
fleet_hold = "2m"
breaker_max_nodes = 5
breaker_max_percent = 1.5
breaker_window = "30m"
retry_initial = "5s"
retry_max = "2m"
slurm_node = "gpu-node-07"
webhook_url = "https://hooks.example/faultline"
webhook_secret_env = "HOOK_KEY"
webhook_ca_file = "/etc/ssl/hook-ca.pem"
webhook_allow_http = false
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->policy.enable.size(), 8u);
  EXPECT_TRUE(c->policy.Enabled(ActionClass::kDrain));
  EXPECT_EQ(c->policy.cooldown_ns, 600'000'000'000);
  EXPECT_EQ(c->policy.fleet_hold_ns, 120'000'000'000);
  EXPECT_EQ(c->policy.breaker_max_nodes, 5);
  EXPECT_DOUBLE_EQ(c->policy.breaker_max_percent, 1.5);
  EXPECT_EQ(c->policy.breaker_window_ns, 1800'000'000'000);
  EXPECT_EQ(c->policy.retry_initial_ns, 5'000'000'000);
  EXPECT_EQ(c->policy.retry_max_ns, 120'000'000'000);
  EXPECT_EQ(c->policy.slurm_node, "gpu-node-07");
  EXPECT_EQ(c->policy.webhook_secret_env, "HOOK_KEY");
  auto pct = ParseAgentConfig("[policy]\nbreaker_max_percent = 5\n");
  ASSERT_TRUE(pct.ok());
  EXPECT_DOUBLE_EQ(pct->policy.breaker_max_percent, 5.0);
  // The fleet's wait may be turned off; the cool-down may not.
  for (const char* off : {"[policy]\nfleet_hold = \"0s\"\n", "[policy]\nfleet_hold = 0\n"}) {
    auto zero = ParseAgentConfig(off);
    ASSERT_TRUE(zero.ok()) << off << zero.status().ToString();
    EXPECT_EQ(zero->policy.fleet_hold_ns, 0);
  }
  EXPECT_FALSE(ParseAgentConfig("[policy]\ncooldown = 0\n").ok());
}

// Malformed [policy] values are errors naming the key; the agent refuses to start on them.
TEST(PolicyConfig, MalformedValuesNameTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"[policy]\nenable = [\"drain\", \"nuke_from_orbit\"]\n",
       "policy.enable: unknown action class 'nuke_from_orbit'"},
      {"[policy]\nenable = \"drain\"\n", "policy.enable: expected an array"},
      {"[policy]\nenable = [3]\n", "policy.enable: unknown action class"},
      {"[policy]\nbreaker_max_nodes = -1\n", "policy.breaker_max_nodes"},
      {"[policy]\nbreaker_max_nodes = 2.5\n", "policy.breaker_max_nodes"},
      {"[policy]\nbreaker_max_percent = -3\n", "policy.breaker_max_percent"},
      {"[policy]\nbreaker_max_percent = 150\n", "policy.breaker_max_percent"},
      {"[policy]\nbreaker_max_percent = nan\n", "policy.breaker_max_percent"},
      {"[policy]\nbreaker_window = \"-5m\"\n", "policy.breaker_window"},
      {"[policy]\ncooldown = -60\n", "policy.cooldown"},
      {"[policy]\nfleet_hold = -60\n", "policy.fleet_hold"},
      {"[policy]\nfleet_hold = \"soon\"\n", "policy.fleet_hold"},
      {"[policy]\nretry_initial = \"1m\"\nretry_max = \"10s\"\n", "policy.retry_max"},
      {"[policy]\nenable = [\"webhook\"]\n", "policy.webhook_url"},
      {"[policy]\nwebhook_secret_file = \"/k\"\nwebhook_secret_env = \"K\"\n", "policy.webhook_secret_file"},
      {"[policy]\ndry_run = false\n", "policy.dry_run: unknown key"},
      {"policy = 3\n", "policy: expected a [section]"},
  };
  for (const auto& [text, want] : cases) {
    auto c = ParseAgentConfig(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(c.status().message().find(want), std::string::npos) << text << " -> " << c.status().message();
  }
}

}  // namespace
}  // namespace faultline::daemon
