// `faultline mock-bmc`: runs the mock Redfish BMC by hand (demos, manual client runs)
// until SIGINT or SIGTERM. Prints the URL (and the CA certificate to trust) on stdout.
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/sim/sim_commands.h"
#include "sim/mock_bmc/mock_bmc.h"

namespace faultline::cli {
namespace {

struct MockBmcArgs {
  sim::MockBmcOptions options;
  std::string password_file;
  bool no_auth = false;
  int latency_ms = 0;
};

int ExitCodeFor(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ||
                 s.code() == StatusCode::kCorrupt
             ? kExitUsage
             : kExitFailure;
}

Status ReadPassword(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, "cannot read password file '" + path + "'");
  std::getline(in, out);
  return Status::Ok();
}

int RunMockBmc(MockBmcArgs& args) {
  if (!args.password_file.empty()) {
    if (Status s = ReadPassword(args.password_file, args.options.password); !s.ok()) {
      std::cerr << "faultline mock-bmc: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  args.options.auth_required = !args.no_auth;
  // Block the signals before the server threads start so they inherit the mask and only
  // sigwait() below sees them: no handler, no global flag.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto bmc = sim::MockBmc::Start(args.options);
  if (!bmc.ok()) {
    std::cerr << "faultline mock-bmc: " << bmc.status().ToString() << "\n";
    return ExitCodeFor(bmc.status());
  }
  (*bmc)->SetLatency(std::chrono::milliseconds(args.latency_ms));
  std::cout << "mock BMC serving " << args.options.mockup_dir << " at " << (*bmc)->base_url() << "/redfish/v1\n";
  if (!(*bmc)->ca_cert_path().empty()) std::cout << "CA certificate: " << (*bmc)->ca_cert_path() << "\n";
  if (args.options.auth_required) std::cout << "user: " << args.options.username << "\n";
  std::cout << "press Ctrl-C to stop" << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  (*bmc)->Stop();
  std::cout << "stopped after " << (*bmc)->total_requests() << " requests" << std::endl;
  return kExitOk;
}

}  // namespace

void AddMockBmcCommand(CliApp& app) {
  auto args = std::make_shared<MockBmcArgs>();
  args->options.tls = false;
  sim::MockBmcOptions& o = args->options;
  CLI::App* cmd = app.root->add_subcommand("mock-bmc", "Serve a Redfish mockup as a mock BMC until Ctrl-C");
  cmd->add_option("--mockup", o.mockup_dir, "DMTF mockup directory (index.json tree)")->required();
  cmd->add_option("--scenario", o.scenario_file, "Scenario file (JSON or YAML), see docs/mock-bmc.md");
  cmd->add_option("--port", o.port, "TCP port (0 = pick a free one)")->capture_default_str();
  cmd->add_option("--bind", o.bind_address, "Address to bind (loopback only by default)")->capture_default_str();
  cmd->add_flag("--allow-non-loopback", o.allow_non_loopback, "Permit binding a non-loopback address");
  cmd->add_flag("--tls", o.tls, "Serve HTTPS (self-signed certificate unless --cert/--key)");
  cmd->add_option("--cert", o.cert_path, "PEM certificate for --tls");
  cmd->add_option("--key", o.key_path, "PEM private key for --tls");
  cmd->add_option("--user", o.username, "User name accepted by the mock")->capture_default_str();
  cmd->add_option("--password-file", args->password_file, "File whose first line is the accepted password");
  cmd->add_flag("--no-auth", args->no_auth, "Serve every resource without credentials");
  cmd->add_option("--max-sessions", o.max_sessions, "Session limit (503 beyond)")->capture_default_str();
  cmd->add_option("--page-size", o.page_size, "Serve collections in pages of N members (0 = whole)");
  cmd->add_option("--speed", o.time_scale, "Scenario seconds per wall-clock second")->default_val(1.0);
  cmd->add_option("--latency-ms", args->latency_ms, "Delay every answer by this many milliseconds")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--advertise-sse", o.advertise_sse, "Add ServerSentEventUri to the EventService");
  cmd->callback([&app, args] { app.exit_code = RunMockBmc(*args); });
}

}  // namespace faultline::cli
