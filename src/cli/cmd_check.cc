// `faultline check --slurm`: Slurm HealthCheckProgram mode (docs/remediation.md "Slurm").
// Reads the node's active diagnoses from the agent's store, prints ONE line (--json: one
// object with the same fields), exits 0 when the node is fine and 1 when a diagnosis
// warrants a drain; with --apply it drains through scontrol, behind the same policy as the
// agent (rules, idempotence, breaker, stored decisions). Every Slurm call has a deadline,
// so it finishes well inside Slurm's 60 s. Without data it answers "unknown" (exit 3),
// never "ok": no store, nothing recent from the node, or the agent recorded that it is
// blind (every source failing).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "actions/slurm.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/json.h"
#include "daemon/config.h"
#include "policy/active.h"
#include "policy/engine.h"
#include "policy/rules.h"
#include "store/agent_state.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct CheckArgs {
  bool slurm = false;
  // The agent's default store_path: --help states it from here.
  std::string store = daemon::AgentSection().store_path;
  std::string node;        // the store's node name
  std::string slurm_node;  // Slurm's NodeName
  std::string config;      // agent TOML: [policy] limits and slurm_node
  bool apply = false;
  // Per call. A drain makes at most 8 calls (sinfo, show, update, show, the breaker's two
  // sinfo reads, then show + update if undone) plus the breaker's ~1 s + breaker_settle wait:
  // 8 x 6 s + 3 s stays inside Slurm's 60 s for its HealthCheckProgram.
  int64_t timeout_s = 6;
  int64_t stale_s = 300;  // no observation for this long: the node is "unknown", not "ok"
  bool json = false;
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

// Drains through scontrol behind the agent's policy (rules, settling, idempotence, breaker).
// Whatever the agent recorded as a dry run is acted on now: --apply enables cordon/drain.
Result<std::vector<policy::Outcome>> ApplyDrain(Store& store, policy::PolicyConfig config, const std::string& node,
                                                const CheckArgs& args, const std::vector<Row<Diagnosis>>& active,
                                                int64_t diagnosis_id, int64_t now_ns) {
  ipmi::ProcessRunner runner;
  actions::SlurmOptions slurm_options;
  slurm_options.timeout_ms = args.timeout_s * 1000;
  actions::SlurmActuator slurm(runner, slurm_options);
  config.enable.insert(actions::ActionClass::kDrain);
  config.enable.insert(actions::ActionClass::kCordon);
  policy::Engine engine(config, store, node, {&slurm}, &slurm);
  engine.LimitTo({actions::ActionClass::kDrain, actions::ActionClass::kCordon});
  auto started = engine.Start(now_ns);
  if (!started.ok()) return started.status();
  auto out = engine.OnDiagnoses(active, now_ns);
  if (!out.ok()) return out.status();
  std::erase_if(*out, [&](const policy::Outcome& o) { return o.decision.diagnosis_id != diagnosis_id; });
  return out;
}

// Read-only: what the store already says about this diagnosis' drain.
std::vector<policy::Outcome> RecordedDrain(Store& store, const std::string& node, const Row<Diagnosis>& row) {
  std::vector<policy::Outcome> outcomes;
  policy::Ledger ledger;
  if (Status s = ledger.Load(store, node); !s.ok()) return outcomes;
  for (const policy::LedgerEntry* e : ledger.ForDiagnosis(row.id)) {
    if (e->action_class != actions::ActionClass::kDrain && e->action_class != actions::ActionClass::kCordon) continue;
    policy::Outcome o;
    o.decision.action_class = *e->action_class;
    o.decision.diagnosis_id = row.id;
    o.decision.diagnosis = row.value;
    o.state = e->state;
    o.detail = e->record.outcome;
    outcomes.push_back(o);
  }
  return outcomes;
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
      case policy::State::kHeldUntilSettled:
        return "not drained yet: " + o.detail;
      default:
        return std::string(ToString(o.state)) + (o.detail.empty() ? "" : ": " + o.detail);
    }
  }
  return apply ? "drain already handled" : "not drained (--apply drains)";
}

// The store node this check answers for: --node, else the store's only node, else the
// Slurm node name (the agent's default node name is the host name too).
Result<std::string> ResolveNode(Store& store, const CheckArgs& args, const std::string& slurm_node) {
  if (!args.node.empty()) return args.node;
  auto names = store.NodeNames();
  if (!names.ok()) return names.status();
  if (names->size() == 1) return names->front();
  return slurm_node;
}

std::string Age(int64_t ns) { return std::to_string(ns / 1'000'000'000) + " s"; }

// The agent's own word (store/agent_state.h): it recorded that every source fails, so its
// diagnosis in force ("none" included) cannot be trusted. Each error is cut short: Slurm
// logs the one line.
std::optional<std::string> AgentBlind(Store& store, const std::string& node, int64_t now_ns) {
  auto state = GetAgentState(store, node);
  if (!state.ok()) return "cannot read the agent's recorded state: " + state.status().message();
  if (!state->has_value() || !(*state)->blind) return std::nullopt;
  std::string failing;
  for (const SourceSight& s : (*state)->sources) {
    if (!s.failing) continue;
    if (!failing.empty()) failing += "; ";
    failing += s.source + ": " + s.error.substr(0, 80);
  }
  return "the agent is blind: every source failing for " + Age(std::max<int64_t>(0, now_ns - (*state)->since_ns)) +
         " (" + failing + ")";
}

// Fail closed: a node the store knows nothing recent about, or whose agent sees nothing, is
// "unknown", never "ok". nullopt = the data is fresh enough to judge.
std::optional<std::string> Blind(Store& store, const std::string& node, int64_t stale_ns, int64_t now_ns) {
  if (auto blind = AgentBlind(store, node, now_ns)) return blind;
  auto heard = store.LastHeardNs(node);
  if (!heard.ok()) return "cannot read when the agent last heard from " + node + ": " + heard.status().message();
  if (*heard == 0) {
    std::string hint;
    if (auto names = store.NodeNames(); names.ok() && !names->empty()) {
      hint = " (the store holds:";
      for (size_t i = 0; i < names->size() && i < 5; ++i) hint += " " + (*names)[i];
      hint += names->size() > 5 ? " ...; --node names one)" : "; --node names one)";
    }
    return "no data for " + node + " in the store" + hint;
  }
  if (now_ns - *heard > stale_ns) {
    return "stale: the agent last heard from any source " + Age(now_ns - *heard) + " ago (limit " + Age(stale_ns) +
           "; is the agent running and are its sources readable?)";
  }
  return std::nullopt;
}

Result<std::unique_ptr<Store>> OpenForCheck(const CheckArgs& args) {
  StoreOptions options;
  options.read_only = !args.apply;  // a plain check never writes
  // --apply writes decisions: refuse a damaged store first, checking only what the policy
  // reads and writes so the check stays fast (the whole file takes seconds per GiB).
  options.check_integrity_on_open = args.apply;
  options.check_integrity_tables = {"diagnoses", "actions"};
  return Store::Open(args.store, options);
}

// What the check found: the one line Slurm logs ("faultline: <status>: <node>: <detail>") or,
// with --json, the same fields as one object.
struct CheckReport {
  std::string status;  // ok | drain | unknown | error
  std::string node;
  std::string detail;
  int exit_code = kExitOk;
  std::optional<Row<Diagnosis>> diagnosis;  // the one the line names
  std::string drain;                        // status drain: what was done about it
};

Json ReportJson(const CheckReport& r, const std::string& slurm_node) {
  Json j{{"status", r.status},
         {"node", r.node},
         {"slurm_node", slurm_node},
         {"detail", r.detail},
         {"exit_code", r.exit_code}};
  j["diagnosis"] = nullptr;
  if (r.diagnosis) {
    const Diagnosis& d = r.diagnosis->value;
    j["diagnosis"] = Json{{"id", r.diagnosis->id},
                          {"fault_class", ToString(d.fault_class)},
                          {"component", d.component.Id()},
                          {"action", ToString(d.action)},
                          {"severity", ToString(d.severity)}};
  }
  if (r.status == "drain") j["drain"] = r.drain;
  return j;
}

// Whether the node's active diagnoses warrant a drain, and (--apply) the drain.
CheckReport Judge(Store& store, const policy::PolicyConfig& config, const std::string& node, const CheckArgs& args,
                  int64_t now) {
  auto active = policy::ActiveDiagnoses(store, node);
  if (!active.ok()) return {"error", node, active.status().ToString(), kExitFailure};
  const auto drain_worthy = std::find_if(active->begin(), active->end(), [](const Row<Diagnosis>& row) {
    return policy::WarrantsDrain(policy::PlanActions(row.value));
  });
  if (drain_worthy == active->end()) {
    if (active->empty()) return {"ok", node, "no active diagnosis", kExitOk};
    return {"ok", node, Describe(active->front()) + " needs no drain", kExitOk, active->front()};
  }
  std::vector<policy::Outcome> outcomes;
  if (args.apply) {
    auto applied = ApplyDrain(store, config, node, args, *active, drain_worthy->id, now);
    if (!applied.ok()) return {"error", node, applied.status().ToString(), kExitFailure};
    outcomes = std::move(*applied);
  } else {
    outcomes = RecordedDrain(store, node, *drain_worthy);
  }
  const std::string drain = DrainState(outcomes, args.apply);
  return {"drain", node, Describe(*drain_worthy) + ": " + drain, kExitFailure, *drain_worthy, drain};
}

CheckReport Check(const CheckArgs& args, const policy::PolicyConfig& config, const std::string& slurm_node) {
  if (!std::filesystem::exists(args.store)) return {"unknown", slurm_node, "no store at " + args.store, kExitUnknown};
  auto store = OpenForCheck(args);
  if (!store.ok()) return {"error", slurm_node, store.status().ToString() + " (nothing written)", kExitFailure};
  auto resolved = ResolveNode(**store, args, slurm_node);
  if (!resolved.ok()) return {"error", slurm_node, resolved.status().ToString(), kExitFailure};
  const std::string node = *resolved;
  const int64_t now = SystemClock().NowNs();
  if (auto blind = Blind(**store, node, args.stale_s * 1'000'000'000LL, now)) {
    return {"unknown", node, *blind, kExitUnknown};
  }
  return Judge(**store, config, node, args, now);
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
  config.slurm_node = slurm_node;
  const CheckReport report = Check(args, config, slurm_node);
  if (args.json) {
    std::cout << ReportJson(report, slurm_node).dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "faultline: " << report.status << ": " << report.node << ": " << report.detail << "\n";
  }
  return report.exit_code;
}

}  // namespace

void AddCheckCommand(CliApp& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "check",
      "Health check for a scheduler. With --slurm it is a Slurm HealthCheckProgram: reads the node's active\n"
      "diagnoses from the agent's store and prints one line. Exit 0: the node is fine; 1: a diagnosis warrants\n"
      "a drain (or the store could not be read); 2: bad options; 3: unknown (no store, no data for the node,\n"
      "nothing heard from any source for --stale seconds, or the agent recorded that every source is failing):\n"
      "it never says ok without data, and never drains on it.\n"
      "Without --apply it never writes anything (the store is opened read-only). With --apply it first checks the\n"
      "store's diagnoses and actions tables (refusing a damaged store without writing), then drains the node with\n"
      "`scontrol update nodename=N state=drain reason=\"faultline: <class> <component> <node>/d<id>\"`, once (a\n"
      "second run sees the drain and does nothing), never over an operator's own drain, and stores the decision;\n"
      "what the agent recorded as a dry run (its default) is drained now. `faultline resolve --diagnosis ID\n"
      "--fixed-by ...` resumes it. Safety rules, settling, cool-down and the fleet breaker (from sinfo) apply as in\n"
      "the agent (docs/remediation.md). In slurm.conf:\n"
      "  HealthCheckProgram=/usr/bin/faultline-slurm-check   (a script: exec faultline check --slurm --apply)\n"
      "  HealthCheckInterval=300\n"
      "Example: faultline check --slurm --store /var/lib/faultline/faultline.db --apply");
  cmd->add_flag("--slurm", args->slurm, "Slurm mode (required)");
  cmd->add_option("--store", args->store, "Agent store (default " + args->store + ")");
  cmd->add_option("--slurm-node", args->slurm_node, "Slurm NodeName (default: [policy] slurm_node, else hostname -s)");
  cmd->add_option("--node", args->node,
                  "Node name as the agent stored it (default: the store's only node, else the Slurm node name)");
  cmd->add_option("--stale", args->stale_s,
                  "Seconds without any observation after which the node is unknown (default 300)")
      ->check(CLI::Range(10, 86400));
  cmd->add_option("--config", args->config, "Agent config: its [policy] limits and slurm_node are used");
  cmd->add_flag("--apply", args->apply, "Drain through scontrol when a diagnosis warrants it (default: report only)");
  cmd->add_flag("--json", args->json,
                "Print one JSON object instead of the line, with the same fields: {status (ok|drain|unknown|error),\n"
                "node, slurm_node, detail, exit_code, diagnosis: {id, fault_class, component, action, severity} or\n"
                "null[, drain]}; exit codes unchanged (bad options stay a message on stderr, exit 2)");
  cmd->add_option("--timeout", args->timeout_s,
                  "Seconds allowed per scontrol/sinfo call (default 6; a drain makes at most 8)")
      ->check(CLI::Range(1, 30));
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
