// `faultline resolve --diagnosis ID --fixed-by "..."`: an operator closes an incident
// (docs/remediation.md "Resolve"). Returns the node to service (Slurm resume, Kubernetes
// uncordon) only when faultline drained it for this diagnosis and the drain is still
// faultline's; stores who fixed it and how, so the
// policy and `check --slurm` stop acting on it and the incident can be looked up later.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/clock.h"
#include "daemon/config.h"
#include "policy/actuators.h"
#include "policy/resolve.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct ResolveArgs {
  int64_t diagnosis = 0;
  std::string fixed_by;
  std::string store = "/var/lib/faultline/faultline.db";
  std::string config;  // agent TOML: its [policy] platform (slurm, kubernetes, none)
  std::string slurm_node;
  bool no_slurm = false;
};

// The platform the agent acts on, as its config says (Slurm when no config is given: the
// historical default).
Result<std::unique_ptr<policy::ActuatorSet>> Platform(const ResolveArgs& args) {
  policy::PolicyConfig policy;
  if (!args.config.empty()) {
    auto c = daemon::LoadAgentConfig(args.config);
    if (!c.ok()) return c.status();
    policy = c->policy;
  }
  if (args.no_slurm) policy.platform = "none";
  return policy::BuildActuators(policy);
}

int Run(const ResolveArgs& args) {
  if (!std::filesystem::exists(args.store)) {
    std::cerr << "faultline resolve: no store at " << args.store << "\n";
    return kExitUsage;
  }
  auto store = Store::Open(args.store);
  if (!store.ok()) {
    std::cerr << "faultline resolve: " << store.status().ToString() << "\n";
    return kExitFailure;
  }
  auto platform = Platform(args);
  if (!platform.ok()) {
    std::cerr << "faultline resolve: " << platform.status().message() << "\n";
    return kExitUsage;
  }
  auto result = policy::ResolveIncident(**store, args.diagnosis, args.fixed_by, (*platform)->reverter(),
                                        args.slurm_node, SystemClock().NowNs());
  if (!result.ok()) {
    std::cerr << "faultline resolve: " << result.status().message() << "\n";
    const auto code = result.status().code();
    return code == StatusCode::kNotFound || code == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  const auto& d = result->diagnosis;
  std::cout << "faultline resolve: diagnosis " << d.id << " (" << ToString(d.value.fault_class) << " "
            << d.value.component.Id() << " on " << d.node << ") "
            << (result->already_resolved ? "was already resolved" : "resolved, fixed by: " + args.fixed_by) << "\n";
  for (const auto& note : result->notes) std::cout << "  " << note << "\n";
  return kExitOk;
}

}  // namespace

void AddResolveCommand(CliApp& app) {
  auto args = std::make_shared<ResolveArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "resolve",
      "Close an incident once the part is fixed. Returns the node to service (Slurm: scontrol update\n"
      "state=resume; Kubernetes: uncordon, taint and condition removed) only if faultline drained or cordoned it\n"
      "for this diagnosis and it is still faultline's: an operator's drain, or one for another open diagnosis,\n"
      "is left alone. Diagnosis ids are per store, so the Slurm reason's tag names the node whose store holds\n"
      "the diagnosis and its id (<node>/d<id>), and both must match; a drain tagged d<id> alone (an older\n"
      "faultline) is left drained, with a note to resume it by hand (scontrol update nodename=N state=resume).\n"
      "The platform is the agent config's [policy] platform (--config; Slurm without one). Stores the resolution\n"
      "(who/what fixed it) in the store, after which the agent and `check --slurm` no longer act on this\n"
      "incident.\n"
      "Exit code: 0 resolved (or already), 1 the store or Slurm failed (nothing stored; run it again),\n"
      "2 bad options or config, no store or no such diagnosis.\n"
      "Example: faultline resolve --diagnosis 42 --fixed-by \"replaced GPU 3, RMA 7731\"");
  cmd->add_option("--diagnosis", args->diagnosis, "Diagnosis id (as printed by check --slurm, rma-bundle, the API)")
      ->required();
  cmd->add_option("--fixed-by", args->fixed_by, "What fixed it, and who (kept with the incident)")->required();
  cmd->add_option("--store", args->store, "Agent store (default /var/lib/faultline/faultline.db)");
  cmd->add_option("--config", args->config,
                  "Agent config: its [policy] platform, kubeconfig and kubernetes_node say where to uncordon");
  cmd->add_option("--slurm-node", args->slurm_node,
                  "Platform node name (Slurm NodeName or Kubernetes node; default: the one recorded with the drain)");
  cmd->add_flag("--no-slurm,--no-platform", args->no_slurm,
                "Only close the incident; do not touch Slurm or Kubernetes");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
