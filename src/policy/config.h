// The policy's settings: the agent's [policy] TOML section (parsed in daemon/config.cc,
// documented in docs/remediation.md). Every default is safe: nothing is carried out until an
// action class is listed in `enable`; until then every decision is a stored dry run.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "actions/actuator.h"
#include "core/status.h"

namespace faultline::policy {

struct PolicyConfig {
  // Classes carried out for real; the others are dry runs (decided, stored, not done).
  std::set<actions::ActionClass> enable;
  // No second action of one class on this node within this time of the last one done.
  int64_t cooldown_ns = int64_t{3600} * 1'000'000'000;
  // Circuit breaker: at most min(breaker_max_nodes, max(1, breaker_max_percent% of the known
  // fleet)) nodes taken out by faultline within breaker_window (docs/remediation.md "Breaker").
  int64_t breaker_max_nodes = 3;
  double breaker_max_percent = 2.0;
  int64_t breaker_window_ns = int64_t{3600} * 1'000'000'000;
  // After a drain, the breaker confirms it: it waits until the platform's clock has passed the
  // drain's second plus this margin (clock skew between nodes and the platform), reads the
  // fleet again and undoes the drain when it ranks over the limit. 0..30 s.
  int64_t breaker_settle_ns = int64_t{2} * 1'000'000'000;
  // A failed action is retried after retry_initial, doubling up to retry_max.
  int64_t retry_initial_ns = int64_t{30} * 1'000'000'000;
  int64_t retry_max_ns = int64_t{900} * 1'000'000'000;
  // Where cordon/drain go and the breaker's fleet view comes from: "slurm" (scontrol/sinfo),
  // "kubernetes" (the API server) or "none" (no cordon/drain actuator and no fleet view:
  // enabled disruptive classes are held, the breaker fails closed).
  std::string platform = "slurm";
  // The node's name in Slurm ("" = the agent's node name).
  std::string slurm_node;
  // Kubernetes: a kubeconfig file ("" = the in-cluster service account), its context ("" =
  // current-context), and the node's name in the cluster ("" = slurm_node, else the agent's
  // node name).
  std::string kubeconfig;
  std::string kubernetes_context;
  std::string kubernetes_node;
  // rma_bundle / facility_ticket: where the .tar.gz files are written.
  std::string bundle_dir = "/var/lib/faultline/bundles";
  // What actuators keep to survive a crash (reboot markers); must survive a reboot.
  std::string state_dir = "/var/lib/faultline/actions";
  // Command lines (split on blanks, quotes honoured, no shell). "{gpu}" is the diagnosed
  // GPU's PCI bus id (else UUID, else index); appended when absent.
  std::string gpu_reset_command = "nvidia-smi --gpu-reset -i {gpu}";
  std::string reboot_command = "systemctl reboot";
  // Webhook (classes webhook and notify_user). "" = no webhook actuator.
  std::string webhook_url;
  std::string webhook_secret_file;  // first line = HMAC key (mode 0600)
  std::string webhook_secret_env;   // or: the environment variable holding it
  std::string webhook_ca_file;
  bool webhook_allow_http = false;

  // With a fleet analyzer ([fleet] on): how long the node's paperwork (rma_bundle,
  // facility_ticket, webhook) for a fault the fleet may find shared waits for its verdict
  // (fleet_verdicts.h). 0 = never waits.
  int64_t fleet_hold_ns = int64_t{60} * 1'000'000'000;

  // Every decision waits until its diagnosis has been the node's primary this long, so a
  // primary that lives a few seconds while evidence arrives takes no decision; evidence
  // that needs no wait (NeedsNoSettling in rules.h) acts at once. 0 = never waits.
  int64_t settle_ns = int64_t{20} * 1'000'000'000;

  bool Enabled(actions::ActionClass c) const { return enable.count(c) > 0; }
};

// The longest breaker_settle accepted.
inline constexpr int64_t kMaxBreakerSettleNs = int64_t{30} * 1'000'000'000;

// The platform names `platform` accepts.
inline constexpr const char* kPlatforms[] = {"slurm", "kubernetes", "none"};

// kInvalidArgument naming `policy.<key>` for a value out of range.
Status ValidatePolicyConfig(const PolicyConfig& config);

// The breaker's node limit for a fleet of `known_nodes`.
int64_t BreakerLimit(const PolicyConfig& config, size_t known_nodes);

}  // namespace faultline::policy
