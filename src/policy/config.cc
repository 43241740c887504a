#include "policy/config.h"

#include <algorithm>
#include <cmath>

namespace faultline::policy {
namespace {

Status Bad(const std::string& key, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, "config: policy." + key + ": " + why);
}

}  // namespace

Status ValidatePolicyConfig(const PolicyConfig& c) {
  if (c.breaker_max_nodes < 0) return Bad("breaker_max_nodes", "must be >= 0");
  if (!(c.breaker_max_percent >= 0.0 && c.breaker_max_percent <= 100.0)) {
    return Bad("breaker_max_percent", "must be between 0 and 100");
  }
  if (c.cooldown_ns < 0) return Bad("cooldown", "must not be negative");
  if (c.breaker_window_ns <= 0) return Bad("breaker_window", "must be a positive duration");
  if (c.retry_initial_ns <= 0) return Bad("retry_initial", "must be a positive duration");
  if (c.retry_max_ns < c.retry_initial_ns) return Bad("retry_max", "must be >= retry_initial");
  const bool wants_webhook = c.Enabled(actions::ActionClass::kWebhook) || c.Enabled(actions::ActionClass::kNotifyUser);
  if (wants_webhook && c.webhook_url.empty())
    return Bad("webhook_url", "required when webhook or notify_user is enabled");
  if (!c.webhook_secret_file.empty() && !c.webhook_secret_env.empty()) {
    return Bad("webhook_secret_file", "set webhook_secret_file or webhook_secret_env, not both");
  }
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
