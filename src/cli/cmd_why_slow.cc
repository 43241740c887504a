// `faultline why-slow --node N`: "why was this node slow?" answered from the agent's
// store, with the same output as `faultline diagnose` after a line saying whether a
// slowdown was seen (text, or --json: daemon::WhySlowJson, the API's shape too). No data
// for the node in the window is exit 3 (unknown), never an answer.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "api/provider.h"
#include "api/query.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/time.h"
#include "daemon/config.h"
#include "daemon/why_slow.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct WhySlowArgs {
  std::string node;
  std::string since;
  std::string until;
  // The agent's default store_path: --help states it from here.
  std::string store = daemon::AgentSection().store_path;
  bool wall_clock = false;
  bool json = false;
};

// "Now" for --since/--until durations: the node's newest stored observation, the anchor of
// `faultline serve` and its GET /api/v1/why-slow (api::StoreProvider::NowNs), so the CLI and
// the API read the same window from the same store, and a copied or old store reads as it
// was; --wall-clock takes the clock, as serve's flag does. A node with nothing stored
// anchors at the clock (the answer is "unknown" either way).
Result<int64_t> AnchorNs(Store& store, const WhySlowArgs& args) {
  const SystemClock clock;
  if (args.wall_clock) return clock.NowNs();
  api::StoreProvider provider(store, {.node = args.node});
  auto newest = provider.NowNs();
  if (!newest.ok()) return newest.status();
  return *newest != 0 ? *newest : clock.NowNs();
}

// --since/--until read as the API reads since=/until= (api/query.h): ISO 8601, a duration
// before the anchor, or integer nanoseconds; since after until is refused.
std::optional<std::string> ParseWindow(const WhySlowArgs& args, int64_t anchor_ns, daemon::WhySlowQuery& query) {
  api::QueryParams params;
  if (!args.since.empty()) params.emplace_back("since", args.since);
  if (!args.until.empty()) params.emplace_back("until", args.until);
  api::WhySlowRequest request;
  if (auto e = api::ParseWhySlowRequest(params, anchor_ns, request)) return "--" + e->param + ": " + e->message;
  query.since_ns = request.since_ns;
  query.until_ns = request.until_ns;
  return std::nullopt;
}

bool IsDuration(const std::string& text) {
  return !text.empty() && !ParseIso8601(text) && text.find_first_not_of("0123456789") != std::string::npos;
}

void PrintHuman(const WhySlowArgs& args, const daemon::WhySlowQuery& query, const daemon::WhySlowAnswer& answer,
                int64_t anchor_ns) {
  if (!args.wall_clock && (IsDuration(args.since) || IsDuration(args.until))) {
    std::cout << "(durations count back from the node's newest stored observation, " << FormatIso8601(anchor_ns)
              << "; --wall-clock counts from now)\n";
  }
  if (answer.status == daemon::WhySlowStatus::kUnknown) {
    std::cout << "faultline why-slow: " << answer.reason << "\n";
    return;
  }
  std::cout << "faultline why-slow: node " << args.node << ", " << answer.findings << " finding(s), "
            << answer.observations << " observation(s) in the window "
            << daemon::WindowText(query.since_ns, query.until_ns) << "\n"
            << answer.reason << "\n\n";
  RenderDiagnoses(std::cout, answer.diagnoses);
}

int Run(const WhySlowArgs& args) {
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
  auto anchor = AnchorNs(**store, args);
  if (!anchor.ok()) {
    std::cerr << "faultline why-slow: " << anchor.status().ToString() << "\n";
    return kExitFailure;
  }
  daemon::WhySlowQuery query;
  query.node = args.node;
  if (auto error = ParseWindow(args, *anchor, query)) {
    std::cerr << "faultline why-slow: " << *error << "\n";
    return kExitUsage;
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
  } else {
    PrintHuman(args, query, *answer, *anchor);
  }
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
  cmd->add_option("--since", args->since,
                  "Window start: ISO 8601, nanoseconds since the epoch, or a duration (2h = 2 h before the node's\n"
                  "newest stored observation, as the API's since=); default open");
  cmd->add_option("--until", args->until, "Window end, read like --since; default open");
  cmd->add_option("--store", args->store, "Agent store (default " + args->store + ")");
  cmd->add_flag("--wall-clock", args->wall_clock,
                "Count durations back from the wall clock instead of the node's newest stored observation\n"
                "(as `faultline serve --wall-clock`)");
  cmd->add_flag("--json", args->json,
                "Print one JSON object: {node, status (slowdown|no_slowdown|unknown), reason, diagnoses, primary"
                "[, store_nodes]}");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
