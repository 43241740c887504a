// faultline: finds why a GPU node is slow or failing. See README.md and docs/.
#include <cstdio>

#include "cli/commands.h"

namespace {

using Registrar = void (*)(faultline::cli::CliApp&);

// Every subcommand, in the order `--help` lists them.
constexpr Registrar kCommands[] = {
    faultline::cli::AddScanCommand,
    faultline::cli::AddDiagnoseCommand,
    faultline::cli::AddCollectKmsgCommand,
    faultline::cli::AddCollectNvmlCommand,
    faultline::cli::AddCollectDcgmCommand,
    faultline::cli::AddCollectSysfsCommand,
    faultline::cli::AddCollectEthernetCommand,
    faultline::cli::AddCollectAmdCommand,
    faultline::cli::AddCollectRedfishCommand,
    faultline::cli::AddCollectIpmiCommand,
    faultline::cli::AddAgentCommand,
    faultline::cli::AddWhySlowCommand,
    faultline::cli::AddServeCommand,
    faultline::cli::AddRmaBundleCommand,
    faultline::cli::AddCheckCommand,
    faultline::cli::AddResolveCommand,
    faultline::cli::AddAskCommand,
    faultline::cli::AddFleetCommand,
    faultline::cli::AddSimDelegates,
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App root{"faultline: find why a GPU node got slow or failed, across BMC, GPU, kernel-log and fabric telemetry."};
  root.require_subcommand(1);
  root.set_version_flag("--version", "faultline 0.1.0");
  faultline::cli::CliApp app;
  app.root = &root;
  app.collect = root.add_subcommand("collect", "Read one telemetry source once (or a few times) and print it");
  app.collect->require_subcommand(1);
  app.bench = root.add_subcommand("bench", "Measure throughput and overhead; prints figures");
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
