// Subcommand registration. Each subcommand lives in its own cmd_*.cc file and adds
// itself to the parent commands in CliApp; main.cc lists them in one table.
// The CLI is the only place that prints; everything below it returns data.
#pragma once

#include <CLI/CLI.hpp>

namespace faultline::cli {

// Exit codes shared by every subcommand.
constexpr int kExitOk = 0;       // ran; findings (if any) are in the output
constexpr int kExitFailure = 1;  // ran but could not complete (e.g. a source failed)
constexpr int kExitUsage = 2;    // bad arguments, missing or unreadable input
// No data to judge (no rows for the node, stale data, every source failing): never "ok".
constexpr int kExitUnknown = 3;

struct CliApp {
  CLI::App* root = nullptr;
  CLI::App* collect = nullptr;  // `faultline collect <source>`
  CLI::App* bench = nullptr;    // `faultline bench <what>`
  int exit_code = kExitOk;
};

void AddDiagnoseCommand(CliApp& app);
void AddCollectKmsgCommand(CliApp& app);
void AddCollectNvmlCommand(CliApp& app);
void AddCollectDcgmCommand(CliApp& app);
void AddCollectSysfsCommand(CliApp& app);
void AddCollectAmdCommand(CliApp& app);  // cmd_collect_amd.cc: AMD Instinct GPUs (AMD SMI / amdgpu sysfs)
void AddCollectEthernetCommand(CliApp& app);  // cmd_collect_ethernet.cc: RoCE / Ethernet fabric
void AddCollectRedfishCommand(CliApp& app);
void AddCollectIpmiCommand(CliApp& app);
void AddAgentCommand(CliApp& app);
void AddWhySlowCommand(CliApp& app);
void AddServeCommand(CliApp& app);  // cmd_serve.cc: HTTP API + /metrics over a store
void AddRmaBundleCommand(CliApp& app);  // cmd_rma_bundle.cc: rma-bundle and facility-ticket
void AddCheckCommand(CliApp& app);      // cmd_check.cc: check --slurm (HealthCheckProgram)
void AddResolveCommand(CliApp& app);    // cmd_resolve.cc: close an incident, resume our drain
void AddAskCommand(CliApp& app);        // cmd_ask.cc: a question answered from the store (+ optional LLM)
void AddFleetCommand(CliApp& app);      // cmd_fleet.cc: fleet analyzer over NATS JetStream
void AddScanCommand(CliApp& app);       // cmd_scan.cc: read this node once, diagnose, exit code
// `sim`, `mock-bmc`, `bench accuracy`, `bench redfish-sweep`: handed to the separate
// faultline-sim program (cmd_sim_delegate.cc); the test doubles are not linked in here.
void AddSimDelegates(CliApp& app);

}  // namespace faultline::cli
