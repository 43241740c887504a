// `faultline why-slow --node N`: "why was this node slow?" answered from the agent's
// store, with the same output as `faultline diagnose` after a line saying whether a
// slowdown was seen (text, or --json: daemon::WhySlowJson, the API's shape too). No data
// for the node in the window is exit 3 (unknown), never an answer.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/render.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/time.h"
#include "daemon/why_slow.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct WhySlowArgs {
  std::string node;
  std::string since;
  std::string until;
  std::string store = "/var/lib/faultline/faultline.db";
  bool json = false;
};

// "" = open bound (0); else ISO 8601 or a duration ago.
bool ParseBound(const std::string& text, int64_t now_ns, int64_t& out) {
  if (text.empty()) return true;
  auto t = ParseTimeArg(text, now_ns);
  if (!t) return false;
  out = *t;
  return true;
}

int Run(const WhySlowArgs& args) {
  SystemClock clock;
  daemon::WhySlowQuery query;
  query.node = args.node;
  if (!ParseBound(args.since, clock.NowNs(), query.since_ns) ||
      !ParseBound(args.until, clock.NowNs(), query.until_ns)) {
    std::cerr << "faultline why-slow: --since/--until take ISO 8601 times or durations like 2h\n";
    return kExitUsage;
  }
  // Never create an empty store by asking a question of one that does not exist.
  if (!std::filesystem::exists(args.store)) {
    std::cerr << "faultline why-slow: no store at " << args.store << "\n";
    return kExitUsage;
  }
  // Read-only: a question never writes the store, and works on a read-only copy or
  // directory (an operator's snapshot, a file owned by the agent's user).
  StoreOptions options;
  options.read_only = true;
  auto store = Store::Open(args.store, options);
  if (!store.ok()) {
    std::cerr << "faultline why-slow: " << store.status().ToString() << "\n";
    return kExitFailure;
  }
  auto answer = daemon::WhySlow(**store, query);
  if (!answer.ok()) {
    std::cerr << "faultline why-slow: " << answer.status().message() << "\n";
    return answer.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (answer->bad_rows > 0) std::cerr << "warning: " << answer->bad_rows << " stored row(s) could not be read\n";
  // No data is not a healthy answer: exit 3 so a script never reads it as "nothing wrong".
  const int rc = answer->status == daemon::WhySlowStatus::kUnknown ? kExitUnknown : kExitOk;
  if (args.json) {
    std::cout << daemon::WhySlowJson(args.node, *answer).dump(2) << "\n";
    return rc;
  }
  if (answer->status == daemon::WhySlowStatus::kUnknown) {
    std::cout << "faultline why-slow: " << answer->reason << "\n";
    return rc;
  }
  std::cout << "faultline why-slow: node " << args.node << ", " << answer->findings << " finding(s), "
            << answer->observations << " observation(s) in the window "
            << daemon::WindowText(query.since_ns, query.until_ns) << "\n"
            << answer->reason << "\n\n";
  RenderDiagnoses(std::cout, answer->diagnoses);
  return rc;
}

}  // namespace

void AddWhySlowCommand(CliApp& app) {
  auto args = std::make_shared<WhySlowArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "why-slow",
      "Why was this node slow? Runs the isolator over the findings and observations the agent stored\n"
      "for the node in [--since, --until] and prints the root causes, most important first.\n"
      "A slowdown must be measured (the job's step times or throughput against their own baseline):\n"
      "without one it says \"no slowdown seen\" and never blames the workload; the workload is blamed\n"
      "only for a measured slowdown that no hardware, fabric or software cause explains.\n"
      "Exit code: 0 when answered (slowdown or not), 1 when the store could not be read, 2 for bad\n"
      "options or no store, 3 when the store holds no data for the node in the window (unknown: a\n"
      "wrong --node, an empty window; the answer lists the nodes the store holds).");
  cmd->add_option("--node", args->node, "Node name as the agent stored it")->required();
  cmd->add_option("--since", args->since, "Window start (ISO 8601, or a duration like 2h = 2h ago); default open");
  cmd->add_option("--until", args->until, "Window end (ISO 8601 or duration ago); default open");
  cmd->add_option("--store", args->store, "Agent store (default /var/lib/faultline/faultline.db)");
  cmd->add_flag("--json", args->json,
                "Print one JSON object: {node, status (slowdown|no_slowdown|unknown), reason, diagnoses, primary"
                "[, store_nodes]}");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
