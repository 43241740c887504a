// The simulator's commands as seen from the production binary. `faultline sim`,
// `faultline mock-bmc`, `faultline bench accuracy` and `faultline bench redfish-sweep`
// run the test doubles (mock BMC, fake sysfs, node simulator), which live in a separate
// program, faultline-sim, installed next to faultline: the agent's binary links none of
// them. Each of these subcommands hands its arguments, --help included, to
// `faultline-sim <same subcommand>` by exec, so output, signals and exit code are the
// simulator's own. A production build (-DFAULTLINE_WITH_SIM=OFF) has no faultline-sim:
// the commands then say so and exit with kExitUsage.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace faultline::cli {
namespace {

constexpr const char* kSimProgram = "faultline-sim";

// The directory of the running executable ("" when /proc is unavailable).
std::string SelfDir() {
  std::string buf(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  buf.resize(static_cast<size_t>(n));
  const size_t slash = buf.rfind('/');
  return slash == std::string::npos ? "" : buf.substr(0, slash);
}

// Replaces this process with `faultline-sim <path...> <args...>`; returns only on failure.
int Delegate(const std::vector<std::string>& path, const std::vector<std::string>& args) {
  const std::string program = SelfDir() + "/" + kSimProgram;
  std::vector<std::string> words{program};
  words.insert(words.end(), path.begin(), path.end());
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  ::execv(program.c_str(), argv.data());
  const int err = errno;
  std::string name = "faultline";
  for (const std::string& p : path) name += " " + p;
  if (err == ENOENT) {
    std::cerr << name << ": the simulator is not installed (" << program
              << " is missing; a production build, -DFAULTLINE_WITH_SIM=OFF, leaves it out)\n";
  } else {
    std::cerr << name << ": cannot run " << program << ": " << std::strerror(err) << "\n";
  }
  return kExitUsage;
}

// A subcommand that takes every following argument as-is (its own --help included).
void AddForwarder(CliApp& app, CLI::App* parent, std::vector<std::string> path, const std::string& help) {
  CLI::App* cmd = parent->add_subcommand(path.back(), help + " (runs " + kSimProgram + ")");
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->allow_extras();
  cmd->callback([&app, cmd, path] { app.exit_code = Delegate(path, cmd->remaining()); });
}

}  // namespace

void AddSimDelegates(CliApp& app) {
  AddForwarder(app, app.root, {"mock-bmc"}, "Serve a Redfish mockup as a mock BMC until Ctrl-C");
  AddForwarder(app, app.root, {"sim"},
               "Simulate an HGX node from a scenario file; with --agent, run the agent against it and print the "
               "diagnosis");
  AddForwarder(app, app.bench, {"bench", "accuracy"},
               "Score the agent over a directory of simulator scenarios (confusion matrix, macro-F1)");
  AddForwarder(app, app.bench, {"bench", "redfish-sweep"}, "Time Redfish sweeps of a mockup served by the mock BMC");
  AddForwarder(app, app.bench, {"bench", "fleet"},
               "The fleet analyzer over a simulated fleet of N nodes: ingest rate, time to name a slow node, "
               "precision/recall, correlation, CPU and memory");
  AddForwarder(app, app.bench, {"bench", "agent-rest"},
               "The agent's idle cost and fault-to-diagnosis latency against a simulated healthy node");
  AddForwarder(app, app.bench, {"bench", "agent-days"},
               "The agent's work per simulated hour as its history grows (hours to days, simulated clock)");
  AddForwarder(app, app.bench, {"bench", "remediation"},
               "The remediation policy over the scenarios against a simulated cluster: time to the correct "
               "action, wrong or duplicate actions, a fault storm against the breaker");
  AddForwarder(app, app.bench, {"bench", "agent"},
               "Score the assistant's answer to \"why is this node slow, and what failed?\" over the scenarios");
}

}  // namespace faultline::cli
