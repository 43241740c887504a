// faultline-sim: the simulator and the test doubles (`sim`, `mock-bmc`, `bench accuracy`,
// `bench redfish-sweep`). Users normally reach it through `faultline <subcommand>`, which
// execs this program with the same arguments; the usage lines therefore say "faultline".
#include "cli/sim/sim_commands.h"

namespace {

using Registrar = void (*)(faultline::cli::CliApp&);

// Every subcommand, in the order `--help` lists them.
constexpr Registrar kCommands[] = {
    faultline::cli::AddSimCommand,
    faultline::cli::AddMockBmcCommand,
    faultline::cli::AddBenchRedfishSweepCommand,
    faultline::cli::AddBenchAgentRestCommand,
    faultline::cli::AddBenchAgentDaysCommand,
    faultline::cli::AddBenchRemediationCommand,
    faultline::cli::AddBenchAgentCommand,
    faultline::cli::AddSimFleetCommand,
    faultline::cli::AddBenchFleetCommand,
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App root{
      "faultline-sim: the node simulator and test doubles behind `faultline sim`, `faultline mock-bmc`,\n"
      "`faultline bench accuracy` and `faultline bench redfish-sweep`.",
      "faultline"};
  root.require_subcommand(1);
  root.set_version_flag("--version", "faultline-sim 0.1.0");
  faultline::cli::CliApp app;
  app.root = &root;
  app.bench = root.add_subcommand("bench", "Measure accuracy and throughput with the simulator; prints figures");
  app.bench->require_subcommand(1);
  for (Registrar add : kCommands) add(app);
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = root.exit(e);
    return rc == 0 ? 0 : faultline::cli::kExitUsage;
  }
  return app.exit_code;
}
