// The faultline-sim program's subcommands: everything that runs the test doubles (mock
// BMC, fake NVML library, fake sysfs tree, node simulator). Kept out of the production
// faultline binary, which hands these subcommands to faultline-sim (cmd_sim_delegate.cc).
#pragma once

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "cli/commands.h"

namespace faultline::cli {

void AddSimCommand(CliApp& app);  // also `bench accuracy`
void AddMockBmcCommand(CliApp& app);
void AddBenchRedfishSweepCommand(CliApp& app);
void AddBenchAgentRestCommand(CliApp& app);    // `bench agent-rest` (issue 16)
void AddBenchAgentDaysCommand(CliApp& app);    // `bench agent-days` (issue 16)
void AddBenchRemediationCommand(CliApp& app);  // `bench remediation` (issue 11)
void AddBenchAgentCommand(CliApp& app);        // `bench agent` (issue 13)
void AddSimFleetCommand(CliApp& app);          // `sim fleet` (issue 14); after AddSimCommand
void AddBenchFleetCommand(CliApp& app);        // `bench fleet` (issue 14)

// The scenario files of a directory (.yaml, .yml, .json), sorted by name; `ec` is set when
// the directory cannot be read. Shared by the scenario benches (accuracy, remediation, agent).
std::vector<std::filesystem::path> ScenarioFiles(const std::string& dir, std::error_code& ec);

}  // namespace faultline::cli
