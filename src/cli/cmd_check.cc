// `faultline check --slurm`: Slurm HealthCheckProgram mode (docs/remediation.md "Slurm").
// Reads the node's active diagnoses from the agent's store, prints ONE line, exits 0 when
// the node is fine and 1 when a diagnosis warrants a drain; with --apply it drains through
// scontrol, behind the same policy as the agent (rules, idempotence, breaker, stored
// decisions). Every Slurm call has a deadline, so it finishes well inside Slurm's 60 s.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "actions/slurm.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "daemon/config.h"
#include "policy/active.h"
#include "policy/engine.h"
#include "policy/rules.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct CheckArgs {
  bool slurm = false;
  std::string store = "/var/lib/faultline/faultline.db";
  std::string node;        // the store's node name
  std::string slurm_node;  // Slurm's NodeName
  std::string config;      // agent TOML: [policy] limits and slurm_node
  bool apply = false;
  int64_t timeout_s = 10;  // per call; at most 4 calls (sinfo, show, update, show): 40 s < Slurm's 60 s
};

std::string ShortHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  std::string h = buf;
  return h.substr(0, h.find('.'));
}

std::string Describe(const Row<Diagnosis>& row) {
  return std::string(ToString(row.value.fault_class)) + " " + row.value.component.Id() + " (diagnosis " +
         std::to_string(row.id) + ")";
}

// The drain decision's state in words, for the one line Slurm logs.
std::string DrainState(const std::vector<policy::Outcome>& outcomes, bool apply) {
  for (const auto& o : outcomes) {
    const auto c = o.decision.action_class;
    if (c != actions::ActionClass::kDrain && c != actions::ActionClass::kCordon) continue;
    switch (o.state) {
      case policy::State::kDone:
        return "drained (" + actions::SlurmDrainReason(o.decision) + ")";
      case policy::State::kDryRun:
        return apply ? "not drained (dry run)" : "not drained (dry run; --apply drains)";
      default:
        return std::string(ToString(o.state)) + (o.detail.empty() ? "" : ": " + o.detail);
    }
  }
  return apply ? "drain already handled" : "not drained (--apply drains)";
}

int Run(const CheckArgs& args) {
  if (!args.slurm) {
    std::cerr << "faultline check: say which scheduler: --slurm\n";
    return kExitUsage;
  }
  policy::PolicyConfig config;
  if (!args.config.empty()) {
    auto c = daemon::LoadAgentConfig(args.config);
    if (!c.ok()) {
      std::cerr << "faultline check: " << c.status().message() << "\n";
      return kExitUsage;
    }
    config = c->policy;
  }
  const std::string slurm_node = !args.slurm_node.empty()     ? args.slurm_node
                                 : !config.slurm_node.empty() ? config.slurm_node
                                                              : ShortHostName();
  const std::string node = !args.node.empty() ? args.node : slurm_node;
  config.slurm_node = slurm_node;
  if (!std::filesystem::exists(args.store)) {
    std::cout << "faultline: error: " << node << ": no store at " << args.store << "\n";
    return kExitUsage;
  }
  StoreOptions options;
  options.read_only = !args.apply;          // a plain check never writes
  options.check_integrity_on_open = false;  // fast: a health check runs every few minutes
  auto store = Store::Open(args.store, options);
  if (!store.ok()) {
    std::cout << "faultline: error: " << node << ": " << store.status().ToString() << "\n";
    return kExitFailure;
  }
  auto active = policy::ActiveDiagnoses(**store, node);
  if (!active.ok()) {
    std::cout << "faultline: error: " << node << ": " << active.status().ToString() << "\n";
    return kExitFailure;
  }
  const Row<Diagnosis>* drain_worthy = nullptr;
  for (const auto& row : *active) {
    if (policy::WarrantsDrain(policy::PlanActions(row.value))) {
      drain_worthy = &row;
      break;
    }
  }
  if (drain_worthy == nullptr) {
    std::cout << "faultline: ok: " << node
              << (active->empty() ? ": no active diagnosis" : ": " + Describe(active->front()) + " needs no drain")
              << "\n";
    return kExitOk;
  }
  ipmi::ProcessRunner runner;
  actions::SlurmOptions slurm_options;
  slurm_options.timeout_ms = args.timeout_s * 1000;
  actions::SlurmActuator slurm(runner, slurm_options);
  if (args.apply) {
    config.enable.insert(actions::ActionClass::kDrain);
    config.enable.insert(actions::ActionClass::kCordon);
  }
  std::vector<policy::Outcome> outcomes;
  if (args.apply) {
    policy::Engine engine(config, **store, node, {&slurm}, &slurm);
    engine.LimitTo({actions::ActionClass::kDrain, actions::ActionClass::kCordon});
    auto started = engine.Start(SystemClock().NowNs());
    if (!started.ok()) {
      std::cout << "faultline: error: " << node << ": " << started.status().ToString() << "\n";
      return kExitFailure;
    }
    auto out = engine.OnDiagnoses(*active, SystemClock().NowNs());
    if (!out.ok()) {
      std::cout << "faultline: error: " << node << ": " << out.status().ToString() << "\n";
      return kExitFailure;
    }
    outcomes = std::move(*out);
    std::erase_if(outcomes, [&](const policy::Outcome& o) { return o.decision.diagnosis_id != drain_worthy->id; });
  } else {
    // Read-only: report what the store already says about this diagnosis' drain.
    policy::Ledger ledger;
    if (Status s = ledger.Load(**store, node); s.ok()) {
      for (const policy::LedgerEntry* e : ledger.ForDiagnosis(drain_worthy->id)) {
        if (e->action_class != actions::ActionClass::kDrain && e->action_class != actions::ActionClass::kCordon) {
          continue;
        }
        policy::Outcome o;
        o.decision.action_class = *e->action_class;
        o.decision.diagnosis_id = drain_worthy->id;
        o.decision.diagnosis = drain_worthy->value;
        o.state = e->state;
        o.detail = e->record.outcome;
        outcomes.push_back(o);
      }
    }
  }
  std::cout << "faultline: drain: " << node << ": " << Describe(*drain_worthy) << ": "
            << DrainState(outcomes, args.apply) << "\n";
  return kExitFailure;
}

}  // namespace

void AddCheckCommand(CliApp& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "check",
      "Health check for a scheduler. With --slurm it is a Slurm HealthCheckProgram: reads the node's active\n"
      "diagnoses from the agent's store and prints one line. Exit 0: the node is fine; 1: a diagnosis warrants\n"
      "a drain (or the store could not be read); 2: bad options or no store.\n"
      "Without --apply it never writes anything (the store is opened read-only). With --apply it drains the\n"
      "node with `scontrol update nodename=N state=drain reason=\"faultline: <class> <component> d<id>\"`,\n"
      "once (a second run sees the drain and does nothing), never over an operator's own drain, and stores the\n"
      "decision; `faultline resolve --diagnosis ID --fixed-by ...` resumes it. Safety rules, cool-down and the\n"
      "fleet breaker (from sinfo) apply as in the agent (docs/remediation.md). In slurm.conf:\n"
      "  HealthCheckProgram=/usr/bin/faultline-slurm-check   (a script: exec faultline check --slurm --apply)\n"
      "  HealthCheckInterval=300\n"
      "Example: faultline check --slurm --store /var/lib/faultline/faultline.db --apply");
  cmd->add_flag("--slurm", args->slurm, "Slurm mode (required)");
  cmd->add_option("--store", args->store, "Agent store (default /var/lib/faultline/faultline.db)");
  cmd->add_option("--slurm-node", args->slurm_node, "Slurm NodeName (default: [policy] slurm_node, else hostname -s)");
  cmd->add_option("--node", args->node, "Node name as the agent stored it (default: the Slurm node name)");
  cmd->add_option("--config", args->config, "Agent config: its [policy] limits and slurm_node are used");
  cmd->add_flag("--apply", args->apply, "Drain through scontrol when a diagnosis warrants it (default: report only)");
  cmd->add_option("--timeout", args->timeout_s, "Seconds allowed per scontrol/sinfo call (default 10; at most 4 calls)")
      ->check(CLI::Range(1, 50));
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
