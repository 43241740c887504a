// `faultline serve --store P`: the HTTP API and Prometheus /metrics over a stored run
// (what `sim --agent --keep` leaves, a copy of a node's store, or the live store an agent
// is writing), read-only. docs/api.md, docs/metrics.md.
#include <pthread.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>

#include "api/server.h"
#include "cli/commands.h"
#include "cli/kb_open.h"
#include "core/clock.h"
#include "core/time.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "sources/workload/http_server.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct ServeArgs {
  // Where the agent writes by default ([agent] store_path), so plain `faultline serve` on a
  // node serves the agent's store; --help states this same value.
  std::string store = daemon::AgentSection().store_path;
  std::string listen = "127.0.0.1:9465";
  std::string node;
  std::string token_file;
  std::string cert;
  std::string key;
  std::string window = "15m";
  size_t threads = 4;
  std::string kb_dir;
  std::string kb_index;
  bool wall_clock = false;
  bool verbose = false;
};

int Run(const ServeArgs& args) {
  // Never create an empty store by serving one that does not exist.
  if (!std::filesystem::exists(args.store)) {
    std::cerr << "faultline serve: no store at " << args.store << "\n";
    return kExitUsage;
  }
  const auto window = ParseDuration(args.window);
  if (!window || *window <= 0) {
    std::cerr << "faultline serve: --metrics-window takes a duration like 15m\n";
    return kExitUsage;
  }
  auto token = LoadBearerToken(args.token_file, "", "api");
  if (!token.ok()) {
    std::cerr << "faultline serve: " << token.status().message() << "\n";
    return kExitUsage;
  }
  // Read-only: serving never writes the store, and works beside the agent writing it.
  StoreOptions store_options;
  store_options.read_only = true;
  auto store = Store::Open(args.store, store_options);
  if (!store.ok()) {
    std::cerr << "faultline serve: " << store.status().ToString() << "\n";
    return kExitFailure;
  }
  std::string node = args.node;
  if (node.empty()) {
    auto newest = api::NewestNode(**store);
    if (!newest.ok()) {
      std::cerr << "faultline serve: " << newest.status().message() << " (name one with --node)\n";
      return kExitFailure;
    }
    node = *newest;
  }
  // Blocked before any thread starts, so every server thread inherits the mask and the
  // signal is taken here, synchronously.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  SystemClock clock;
  daemon::Logger logger(std::cerr, args.verbose ? daemon::LogLevel::kDebug : daemon::LogLevel::kInfo, clock);
  // The knowledge base for POST /api/v1/ask (runbook sections in the answer).
  const OpenedKnowledgeBase kb = OpenKnowledgeBase(args.kb_dir, args.kb_index, **store);
  if (!kb.note().empty()) logger.Warn("ask: " + kb.note());
  api::StoreProvider provider(**store,
                              {.node = node, .clock = args.wall_clock ? &clock : nullptr, .retriever = kb.get()});
  api::ServerOptions options;
  options.listen = args.listen;
  options.cert_file = args.cert;
  options.key_file = args.key;
  options.threads = args.threads;
  options.api.token = *token;
  options.api.metrics.window_ns = *window;
  api::Server server(provider, options, &logger);
  auto started = server.Start();
  if (!started.ok()) {
    std::cerr << "faultline serve: " << started.status().message() << "\n";
    return started.status().code() == StatusCode::kUnavailable ? kExitFailure : kExitUsage;
  }
  for (const std::string& w : *started) logger.Warn(w);
  // The port line is what scripts (and the tests) read to find a port chosen with :0.
  logger.Info("serving node " + node + " from " + args.store + " on " + (server.tls() ? "https" : "http") + "://" +
              args.listen.substr(0, args.listen.rfind(':')) + ":" + std::to_string(server.port()) + " (port " +
              std::to_string(server.port()) + ")");
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  logger.Info("stopping");
  server.Stop();
  return kExitOk;
}

}  // namespace

void AddServeCommand(CliApp& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "serve",
      "Serve the read-only HTTP API (/api/v1/...) and Prometheus /metrics over a store (a stored run,\n"
      "a copy of a node's store, or an agent's live store). Stops on SIGINT/SIGTERM.\n"
      "Exit code: 0 when stopped by a signal, 1 when the store or the port could not be used, 2 for bad options.");
  cmd->footer(
      "Examples:\n"
      "  faultline sim --scenario scenarios/gpu7-fell-off-bus.yaml --agent --keep   # leaves a store\n"
      "  faultline serve --store run/faultline.db                  # http://127.0.0.1:9465\n"
      "  curl -s 127.0.0.1:9465/api/v1/diagnoses | jq .\n"
      "  curl -s '127.0.0.1:9465/api/v1/observations?layer=gpu&kind=ecc_sbe&limit=50'   # page on with &cursor=\n"
      "  curl -s 127.0.0.1:9465/metrics                            # point Prometheus here\n"
      "Routes, parameters, JSON shapes (those of --json) and errors: docs/api.md; metric names: docs/metrics.md.\n"
      "Loopback by default; any other --listen address needs --token-file (every request then needs\n"
      "\"Authorization: Bearer <token>\"), and --cert/--key turn on HTTPS. The store is opened read-only.");
  cmd->add_option("--store", args->store,
                  "Store to serve, opened read-only (default " + args->store + ", the agent's default store_path)");
  cmd->add_option("--listen", args->listen, "HOST:PORT (default 127.0.0.1:9465; :0 picks a free port)");
  cmd->add_option("--node", args->node, "Node to serve (default: the node of the newest stored observation)");
  cmd->add_option("--token-file", args->token_file,
                  "Bearer token (first line); required off loopback; needed for POST .../ack");
  cmd->add_option("--cert", args->cert, "PEM certificate: serve HTTPS (with --key)");
  cmd->add_option("--key", args->key, "PEM private key for --cert");
  cmd->add_option("--metrics-window", args->window,
                  "/metrics shows the newest reading of each series within this window (default 15m)");
  cmd->add_option("--threads", args->threads, "Worker threads (default 4)")->check(CLI::Range(1, 64));
  cmd->add_option("--kb", args->kb_dir,
                  "Knowledge base for POST /api/v1/ask (default <binary's dir>/../share/faultline/kb, "
                  "then /usr/share/faultline/kb, else ./kb)");
  cmd->add_option("--kb-index", args->kb_index, "Keep the knowledge base's index here; default: a temporary one");
  cmd->add_flag("--wall-clock", args->wall_clock,
                "Anchor relative times (since=2h) and the metrics window at the wall clock instead of the\n"
                "newest stored observation (use it on the live store of a running agent)");
  cmd->add_flag("--verbose", args->verbose, "Log every request (method, path, status; never headers or tokens)");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
