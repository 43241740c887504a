// `faultline collect ipmi-sel --file F | --command 'ipmitool sel elist'`: parses an IPMI
// SEL listing (ipmitool or FreeIPMI ipmi-sel) into observations and runs the OOB event
// detector over them. `--json`: one object with observations, findings, errors.
// Exit codes: 0 parsed without errors; 1 the command failed or rows were rejected;
// 2 usage or an unreadable file.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/render.h"
#include "core/json.h"
#include "core/time.h"
#include "engine/detect/oob_detectors.h"
#include "sources/ipmi/command_runner.h"
#include "sources/ipmi/sel_parser.h"

namespace faultline::cli {
namespace {

struct CollectIpmiArgs {
  std::string file;
  std::string command;
  bool json = false;
  std::string node;
  double timeout_s = 60;
};

Result<std::string> ReadInput(const CollectIpmiArgs& a) {
  if (!a.file.empty()) {
    std::ifstream in(a.file, std::ios::binary);
    if (!in) return Status(StatusCode::kNotFound, "cannot read " + a.file);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  auto argv = ipmi::SplitCommandLine(a.command);
  if (!argv.ok()) return argv.status();
  ipmi::ProcessRunner runner;
  return runner.Run(*argv, {.timeout_ms = static_cast<int64_t>(a.timeout_s * 1000)});
}

int RunCollectIpmi(const CollectIpmiArgs& a) {
  if (a.file.empty() == a.command.empty()) {
    std::cerr << "faultline collect ipmi-sel: give exactly one of --file or --command\n";
    return kExitUsage;
  }
  auto text = ReadInput(a);
  if (!text.ok()) {
    std::cerr << "faultline collect ipmi-sel: " << text.status().message() << "\n";
    return text.status().code() == StatusCode::kNotFound || text.status().code() == StatusCode::kInvalidArgument
               ? kExitUsage
               : kExitFailure;
  }
  ipmi::SelParseResult r = ipmi::ParseSelText(*text, {.node = a.node});
  auto detector = MakeOobEventDetector({});
  for (const auto& o : r.observations) detector->Observe(o);
  const std::vector<Finding> findings = detector->Findings();
  if (a.json) {
    std::cout << Json{{"observations", r.observations}, {"findings", findings}, {"errors", r.errors}}.dump(2) << "\n";
  } else {
    for (const auto& o : r.observations) {
      std::cout << FormatIso8601(o.time_ns) << "  " << o.attrs.at("sensor_type") << "  " << o.attrs.at("sensor") << "  "
                << o.text << "  (" << o.attrs.at("assertion") << ")\n";
    }
    RenderFindings(std::cout, findings);
    for (const auto& e : r.errors) std::cerr << "error: " << e << "\n";
  }
  return r.errors.empty() ? kExitOk : kExitFailure;
}

}  // namespace

void AddCollectIpmiCommand(CliApp& app) {
  auto args = std::make_shared<CollectIpmiArgs>();
  CLI::App* cmd = app.collect->add_subcommand("ipmi-sel", "Parse an IPMI SEL listing (ipmitool / ipmi-sel)");
  auto* file = cmd->add_option("--file", args->file, "saved `ipmitool sel elist` or `ipmi-sel` output");
  auto* command = cmd->add_option("--command", args->command, "command to run, e.g. 'ipmitool sel elist'");
  file->excludes(command);
  cmd->add_flag("--json", args->json, "one JSON object: observations, findings, errors");
  cmd->add_option("--node", args->node, "node name for the observations");
  cmd->add_option("--timeout", args->timeout_s, "command timeout, seconds (default 60)");
  cmd->callback([args, &app] { app.exit_code = RunCollectIpmi(*args); });
}

}  // namespace faultline::cli
