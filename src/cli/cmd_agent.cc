// `faultline agent --config FILE`: the long-running daemon (docs/agent.md). Runs until
// SIGTERM or SIGINT, then stops within [agent] shutdown_timeout: sources cancelled,
// Redfish session deleted, store flushed and closed.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <vector>

#include "actions/webhook.h"
#include "api/agent_provider.h"
#include "api/server.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "daemon/agent.h"
#include "daemon/config.h"
#include "fleet/nats/client.h"
#include "policy/actuators.h"
#include "sources/redfish/credentials.h"
#include "sources/workload/http_server.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct AgentArgs {
  std::string config;
  std::string node;  // overrides [agent] node (a DaemonSet passes the Kubernetes node name)
  std::string listen_host;  // overrides [server] listen's host, keeping its port (a DaemonSet passes the pod IP)
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

// `--listen-host H`: [server] listen on H at the config's port. A DaemonSet shares one
// config among its pods but each listens on its own address (the downward API's pod IP);
// the token rule is the config's: off loopback only with a token.
Status OverrideListenHost(const std::string& host, daemon::ServerSection& server) {
  const bool plain =
      !host.empty() && host.size() <= 253 &&
      host.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:") == std::string::npos;
  if (!plain) return Status(StatusCode::kInvalidArgument, "--listen-host must be an address or a host name");
  if (server.listen.empty())
    return Status(StatusCode::kInvalidArgument, "--listen-host needs [server] listen (its port)");
  auto configured = ParseListenAddress(server.listen, "server");
  if (!configured.ok()) return configured.status();
  const std::string bracketed = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  const std::string listen = bracketed + ":" + std::to_string(configured->port);
  auto address = ParseListenAddress(listen, "server");
  if (!address.ok()) return address.status();
  if (!CheckListenPolicy(*address, !server.token_file.empty() || !server.token_env.empty()).ok()) {
    return Status(StatusCode::kInvalidArgument,
                  "--listen-host " + host + " is not loopback: set server.token_file or server.token_env");
  }
  server.listen = listen;
  return Status::Ok();
}

// A file read when it is opened; its content is never looked at (certificates, CA bundles).
Status Readable(const std::string& path) {
  if (std::ifstream(path).good()) return Status::Ok();
  return Status(StatusCode::kNotFound, "cannot read " + path);
}

// --check-config: every secret or TLS file the config has the agent read at start (only
// for what is switched on), read the way the agent reads it: present, readable, owner-only
// where the agent demands it. One line per problem, naming the key; never the content.
std::vector<std::string> FileProblems(const daemon::AgentConfig& c) {
  std::vector<std::string> problems;
  auto check = [&problems](bool on, const std::string& key, const std::function<Status()>& read) {
    if (!on) return;
    if (Status s = read(); !s.ok()) problems.push_back(key + ": " + s.message());
  };
  check(!c.redfish.url.empty() && !c.redfish.password_file.empty(), "redfish.password_file",
        [&] { return redfish::ReadPasswordFile(c.redfish.password_file).status(); });
  check(!c.redfish.url.empty() && !c.redfish.ca_file.empty(), "redfish.ca_file",
        [&] { return Readable(c.redfish.ca_file); });
  check(!c.server.listen.empty(), "server.token_file",
        [&] { return LoadBearerToken(c.server.token_file, c.server.token_env, "server").status(); });
  check(!c.server.listen.empty() && !c.server.cert_file.empty(), "server.cert_file",
        [&] { return Readable(c.server.cert_file); });
  check(!c.server.listen.empty() && !c.server.key_file.empty(), "server.key_file",
        [&] { return Readable(c.server.key_file); });
  check(!c.workload.listen.empty(), "workload.token_file",
        [&] { return LoadBearerToken(c.workload.token_file, c.workload.token_env, "workload").status(); });
  check(!c.assistant.llm_url.empty() && !c.assistant.llm_key_file.empty(), "assistant.llm_key_file",
        [&] { return redfish::ReadPasswordFile(c.assistant.llm_key_file).status(); });
  check(!c.assistant.llm_url.empty() && !c.assistant.llm_ca_file.empty(), "assistant.llm_ca_file",
        [&] { return Readable(c.assistant.llm_ca_file); });
  check(c.fleet.enabled && !c.fleet.credentials_file.empty(), "fleet.credentials_file",
        [&] { return fleet::nats::ReadCredentialsFile(c.fleet.credentials_file).status(); });
  check(c.fleet.enabled && !c.fleet.ca_file.empty(), "fleet.ca_file", [&] { return Readable(c.fleet.ca_file); });
  check(!c.policy.webhook_url.empty(), "policy.webhook_secret_file",
        [&] { return actions::LoadWebhookSecret(c.policy.webhook_secret_file, c.policy.webhook_secret_env).status(); });
  check(!c.policy.webhook_url.empty() && !c.policy.webhook_ca_file.empty(), "policy.webhook_ca_file",
        [&] { return Readable(c.policy.webhook_ca_file); });
  return problems;
}

// --check-config: the files above and the actuators (a bad kubeconfig or webhook URL, a
// missing in-cluster service account must fail here, not at the first fault). 0 and one
// "ok" line, or every problem on stderr and 2.
int CheckConfig(const AgentArgs& args, const daemon::AgentConfig& config) {
  std::vector<std::string> problems = FileProblems(config);
  const bool webhook_reported = !problems.empty() && problems.back().rfind("policy.webhook_secret_file", 0) == 0;
  if (auto actuators = policy::BuildActuators(config.policy); !actuators.ok()) {
    // The webhook secret is the actuators' last check: already said above when it failed.
    const std::string m = actuators.status().message();
    if (!(webhook_reported && m.rfind("policy.webhook_secret", 0) == 0)) problems.push_back(m);
  }
  for (const std::string& p : problems) std::cerr << "faultline agent: " << args.config << ": " << p << "\n";
  if (!problems.empty()) return kExitUsage;
  std::cout << args.config << ": ok (node "
            << (config.agent.node.empty() ? daemon::HostName() + ", from the host name" : config.agent.node)
            << ", store " << config.agent.store_path << ", policy " << PolicySummary(config.policy) << ")\n";
  return kExitOk;
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
  if (!args.listen_host.empty()) {
    if (Status s = OverrideListenHost(args.listen_host, config->server); !s.ok()) {
      std::cerr << "faultline agent: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  if (args.check_config) return CheckConfig(args, *config);
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
  cmd->add_option("--listen-host", args->listen_host,
                  "Serve the API and /metrics on this address at [server] listen's port (e.g. the pod IP from the "
                  "downward API); off loopback it needs [server] token_file or token_env");
  cmd->add_flag("--print-default-config", args->print_default, "Print the default configuration and exit");
  cmd->add_flag("--check-config", args->check_config,
                "Read and validate --config and the secret and TLS files it names, print one line and exit: 0 when "
                "valid, 2 with every offending key when not");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
