#include "policy/config.h"

#include <algorithm>
#include <cmath>

#include "sources/ipmi/command_runner.h"

namespace faultline::policy {
namespace {

Status Bad(const std::string& key, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, "config: policy." + key + ": " + why);
}

// A command line the runner can take: splits, and names a program.
Status CheckCommand(const std::string& key, const std::string& line) {
  auto argv = ipmi::SplitCommandLine(line);
  if (!argv.ok()) return Bad(key, argv.status().message());
  if (argv->empty()) return Bad(key, "must name a command");
  return Status::Ok();
}

}  // namespace

Status ValidatePolicyConfig(const PolicyConfig& c) {
  if (c.breaker_max_nodes < 0) return Bad("breaker_max_nodes", "must be >= 0");
  if (!(c.breaker_max_percent >= 0.0 && c.breaker_max_percent <= 100.0)) {
    return Bad("breaker_max_percent", "must be between 0 and 100");
  }
  if (c.cooldown_ns < 0) return Bad("cooldown", "must not be negative");
  if (c.fleet_hold_ns < 0) return Bad("fleet_hold", "must not be negative");
  if (c.settle_ns < 0) return Bad("settle", "must not be negative");
  if (c.breaker_window_ns <= 0) return Bad("breaker_window", "must be a positive duration");
  // The wait holds up the agent's evaluation and a Slurm HealthCheckProgram (60 s in all).
  if (c.breaker_settle_ns < 0 || c.breaker_settle_ns > kMaxBreakerSettleNs) {
    return Bad("breaker_settle", "must be from 0 to 30s");
  }
  if (c.retry_initial_ns <= 0) return Bad("retry_initial", "must be a positive duration");
  if (c.retry_max_ns < c.retry_initial_ns) return Bad("retry_max", "must be >= retry_initial");
  const bool wants_webhook = c.Enabled(actions::ActionClass::kWebhook) || c.Enabled(actions::ActionClass::kNotifyUser);
  if (wants_webhook && c.webhook_url.empty())
    return Bad("webhook_url", "required when webhook or notify_user is enabled");
  if (!c.webhook_secret_file.empty() && !c.webhook_secret_env.empty()) {
    return Bad("webhook_secret_file", "set webhook_secret_file or webhook_secret_env, not both");
  }
  if (std::find(std::begin(kPlatforms), std::end(kPlatforms), c.platform) == std::end(kPlatforms)) {
    return Bad("platform", "unknown platform '" + c.platform + "' (slurm, kubernetes or none)");
  }
  if (c.platform != "kubernetes" && (!c.kubeconfig.empty() || !c.kubernetes_context.empty())) {
    return Bad(c.kubeconfig.empty() ? "kubernetes_context" : "kubeconfig", "set, but platform is not \"kubernetes\"");
  }
  if (c.bundle_dir.empty()) return Bad("bundle_dir", "must not be empty");
  if (c.state_dir.empty()) return Bad("state_dir", "must not be empty");
  if (Status s = CheckCommand("gpu_reset_command", c.gpu_reset_command); !s.ok()) return s;
  if (Status s = CheckCommand("reboot_command", c.reboot_command); !s.ok()) return s;
  return Status::Ok();
}

int64_t BreakerLimit(const PolicyConfig& c, size_t known_nodes) {
  const auto by_percent =
      static_cast<int64_t>(std::floor(c.breaker_max_percent / 100.0 * static_cast<double>(known_nodes)));
  // One node may always be taken out (a single failure is the common case) unless the
  // operator set breaker_max_nodes = 0 (never).
  return std::min(c.breaker_max_nodes, std::max<int64_t>(1, by_percent));
}

}  // namespace faultline::policy
