// `faultline agent --config FILE`: the long-running daemon (docs/agent.md). Runs until
// SIGTERM or SIGINT, then stops within [agent] shutdown_timeout: sources cancelled,
// Redfish session deleted, store flushed and closed.
#include <csignal>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>

#include "api/agent_provider.h"
#include "api/server.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "daemon/agent.h"
#include "daemon/config.h"
#include "policy/actuators.h"
#include "sources/workload/http_server.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct AgentArgs {
  std::string config;
  std::string node;  // overrides [agent] node (a DaemonSet passes the Kubernetes node name)
  bool print_default = false;
  bool check_config = false;
};

// Signals are taken synchronously (sigwait) on the main thread: blocked here before any
// thread starts, so every agent thread inherits the mask and no handler runs
// async-signal-unsafe code.
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// Kubernetes and Slurm node names are DNS-style names; anything else passed in from a
// manifest is a mistake (an unexpanded "$(NODE_NAME)", a stray space), caught here.
bool PlainNodeName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

// "dry run only" or "carries out drain, webhook (the rest dry runs)".
std::string PolicySummary(const policy::PolicyConfig& p) {
  if (p.enable.empty()) return "dry run only";
  std::string classes;
  for (actions::ActionClass c : p.enable) classes += (classes.empty() ? "" : ", ") + std::string(actions::ToString(c));
  return "carries out " + classes + " (the rest dry runs)";
}

// The API, /metrics and the dashboard beside the agent ([server] listen), over its store
// and live state; its own threads, so a slow client never holds the pipeline.
struct AgentServer {
  std::unique_ptr<Store> reader;  // the API's own read-only connection (outlives the server)
  std::unique_ptr<api::AgentProvider> provider;
  std::unique_ptr<api::Server> server;
};

// A read-only connection of the API's own to the agent's store file, so API reads never
// hold the lock of the connection the pipeline writes through; null for an in-memory store
// (or when it cannot be opened: then reads share the agent's connection, as logged).
std::unique_ptr<Store> OpenApiReader(const std::string& path, daemon::Logger& logger) {
  if (path.empty() || path == ":memory:") return nullptr;
  StoreOptions options;
  options.read_only = true;
  auto reader = Store::Open(path, options);
  if (reader.ok()) return std::move(reader).value();
  logger.Warn("api: reading through the agent's own store connection: " + reader.status().message());
  return nullptr;
}

Status StartServer(const daemon::ServerSection& section, daemon::Agent& agent, const Clock& clock,
                   daemon::Logger& logger, AgentServer& out) {
  if (section.listen.empty()) return Status::Ok();
  auto token = LoadBearerToken(section.token_file, section.token_env, "server");
  if (!token.ok()) return token.status();
  api::ServerOptions options;
  options.listen = section.listen;
  options.cert_file = section.cert_file;
  options.key_file = section.key_file;
  options.api.token = *token;
  out.reader = OpenApiReader(agent.config().agent.store_path, logger);
  out.provider = std::make_unique<api::AgentProvider>(agent, clock, out.reader.get());
  out.server = std::make_unique<api::Server>(*out.provider, options, &logger);
  auto started = out.server->Start();
  if (!started.ok()) return started.status();
  for (const std::string& w : *started) logger.Warn(w);
  // The port line is what scripts (and the tests) read to find a port chosen with :0.
  logger.Info("serving the API on " + std::string(out.server->tls() ? "https" : "http") + "://" +
              section.listen.substr(0, section.listen.rfind(':')) + ":" + std::to_string(out.server->port()) +
              " (port " + std::to_string(out.server->port()) + ")");
  return Status::Ok();
}

int Run(const AgentArgs& args) {
  if (args.print_default) {
    std::cout << daemon::DefaultAgentConfigToml();
    return kExitOk;
  }
  if (args.config.empty()) {
    std::cerr << "faultline agent: --config FILE is required (see --print-default-config)\n";
    return kExitUsage;
  }
  auto config = daemon::LoadAgentConfig(args.config);
  if (!config.ok()) {
    std::cerr << "faultline agent: " << config.status().message() << "\n";
    return kExitUsage;
  }
  if (!args.node.empty()) {
    if (!PlainNodeName(args.node)) {
      std::cerr << "faultline agent: --node must be a host name (letters, digits, '.', '-', '_'; at most 253)\n";
      return kExitUsage;
    }
    config->agent.node = args.node;
  }
  if (args.check_config) {
    // The actuators too: an unreadable webhook secret or a bad URL must fail here, not at
    // the first fault.
    if (auto actuators = policy::BuildActuators(config->policy); !actuators.ok()) {
      std::cerr << "faultline agent: " << actuators.status().message() << "\n";
      return kExitUsage;
    }
    std::cout << args.config << ": ok (node "
              << (config->agent.node.empty() ? daemon::HostName() + ", from the host name" : config->agent.node)
              << ", store " << config->agent.store_path << ", policy " << PolicySummary(config->policy) << ")\n";
    return kExitOk;
  }
  const sigset_t signals = StopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  daemon::TuneAllocatorForLongRun();  // before the agent's threads start

  SystemClock clock;
  daemon::Logger logger(std::cerr, config->agent.log_level, clock);
  auto agent = daemon::Agent::Create(*config, clock, logger);
  if (!agent.ok()) {
    logger.Error("cannot start: " + agent.status().ToString());
    return kExitFailure;
  }
  (*agent)->Start();
  AgentServer server;
  if (Status st = StartServer(config->server, **agent, clock, logger, server); !st.ok()) {
    logger.Error("cannot start the server: " + st.message());
    (void)(*agent)->Stop();
    return kExitFailure;
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  logger.Info(std::string("received ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM") + ", stopping");
  if (server.server) server.server->Stop();  // no request reads the store while it closes
  // A hung peer must not keep the node's shutdown waiting: bound the stop.
  auto stopped = std::async(std::launch::async, [&agent] { return (*agent)->Stop(); });
  if (stopped.wait_for(std::chrono::nanoseconds(config->agent.shutdown_timeout_ns)) != std::future_status::ready) {
    logger.Error("shutdown did not finish in time; exiting without waiting");
    std::_Exit(kExitFailure);
  }
  const Status st = stopped.get();
  if (!st.ok()) {
    logger.Error("stopped with error: " + st.ToString());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void AddAgentCommand(CliApp& app) {
  auto args = std::make_shared<AgentArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "agent",
      "Run the faultline agent: every configured source on its own schedule, detectors and the isolator\n"
      "continuously, everything stored. Stops cleanly on SIGTERM/SIGINT.\n"
      "Exit code: 0 after a clean stop, 1 when it could not start or stop cleanly, 2 for a bad config.");
  cmd->add_option("--config", args->config, "Agent configuration file (TOML; see docs/agent.md)");
  cmd->add_option("--node", args->node,
                  "Node name, overriding [agent] node (e.g. the Kubernetes node name from the downward API)");
  cmd->add_flag("--print-default-config", args->print_default, "Print the default configuration and exit");
  cmd->add_flag("--check-config", args->check_config,
                "Read and validate --config, print one line and exit: 0 when valid, 2 with the offending key when not");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
