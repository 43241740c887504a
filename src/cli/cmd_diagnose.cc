// `faultline diagnose`: offline diagnosis of saved kernel logs (any dmesg/journal/syslog
// form, raw kmsg dumps, gzip, or "-" for stdin).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/render.h"
#include "core/clock.h"
#include "core/inventory.h"
#include "core/json.h"
#include "core/time.h"
#include "engine/detect/kernel_detector.h"
#include "engine/isolate/isolator.h"
#include "sources/kmsg/log_reader.h"

namespace faultline::cli {
namespace {

struct DiagnoseArgs {
  std::vector<std::string> files;
  bool json = false;
  std::string gpu_map;
  std::string since;
  std::string until;
  std::string node;
  std::string boot_time;
};

struct InputReport {
  std::string path;
  KernelLogStats stats;
};

// Reads every file; returns 2 (usage) on a file that cannot be opened at all.
int ReadInputs(const DiagnoseArgs& args, const KernelLogOptions& options, std::vector<Observation>& obs,
               std::vector<InputReport>& reports) {
  for (const std::string& path : args.files) {
    auto reader = KernelLogReader::Create(options);
    if (!reader.ok()) {
      std::cerr << "faultline diagnose: " << reader.status().ToString() << "\n";
      return kExitFailure;
    }
    Status st = (*reader)->ReadFile(path);
    if (!st.ok()) {
      std::cerr << "faultline diagnose: " << st.message() << "\n";
      return kExitUsage;
    }
    const KernelLogStats& s = (*reader)->stats();
    for (const std::string& w : s.warnings) std::cerr << "warning: " << w << "\n";
    if (s.truncated_lines) std::cerr << "warning: " << path << ": " << s.truncated_lines << " over-long line(s) cut\n";
    if (s.binary_lines) std::cerr << "warning: " << path << ": " << s.binary_lines << " line(s) with binary data\n";
    for (Observation& o : (*reader)->TakeObservations()) obs.push_back(std::move(o));
    reports.push_back({path, s});
  }
  return kExitOk;
}

bool InWindow(const Observation& o, std::optional<int64_t> since, std::optional<int64_t> until) {
  if (o.time_ns == 0) return true;  // undated (dmesg uptime only): cannot be filtered, kept
  return (!since || o.time_ns >= *since) && (!until || o.time_ns <= *until);
}

// The isolator leads with a `none` diagnosis when nothing needs action (it carries the
// ruled-out layers); informational diagnoses may follow it.
struct Outcome {
  std::optional<Diagnosis> nothing_wrong;
  std::vector<Diagnosis> diagnoses;  // every diagnosis of a real fault class, most important first
};

Outcome Split(std::vector<Diagnosis> dx) {
  Outcome o;
  if (!dx.empty() && dx.front().fault_class == FaultClass::kNone) {
    o.nothing_wrong = std::move(dx.front());
    dx.erase(dx.begin());
  }
  std::erase_if(dx, [](const Diagnosis& d) { return d.fault_class == FaultClass::kNone; });
  o.diagnoses = std::move(dx);
  return o;
}

Json ReportJson(const std::string& node, const std::vector<InputReport>& reports, const Outcome& outcome,
                const std::vector<Finding>& findings) {
  const std::vector<Diagnosis>& dx = outcome.diagnoses;
  Json inputs = Json::array();
  for (const InputReport& r : reports) {
    inputs.push_back({{"path", r.path}, {"bytes", r.stats.bytes}, {"lines", r.stats.lines},
                      {"classified_lines", r.stats.classified_lines}, {"unknown_lines", r.stats.unknown_lines()},
                      {"truncated_lines", r.stats.truncated_lines}, {"binary_lines", r.stats.binary_lines},
                      {"folded_duplicates", r.stats.folded_duplicates}, {"warnings", r.stats.warnings}});
  }
  Json j{{"node", node}, {"inputs", inputs}, {"diagnoses", dx}, {"findings", findings}};
  if (outcome.nothing_wrong) {
    j["primary"] = *outcome.nothing_wrong;
  } else {
    j["primary"] = dx.empty() ? Json{{"fault_class", "none"}, {"action", "none"}} : Json(dx.front());
  }
  return j;
}

int Run(const DiagnoseArgs& args) {
  const SystemClock clock;
  KernelLogOptions options;
  options.node = args.node;
  if (!args.boot_time.empty()) {
    auto boot = ParseIso8601(args.boot_time);
    if (!boot) {
      std::cerr << "faultline diagnose: --boot-time wants an ISO 8601 time, got '" << args.boot_time << "'\n";
      return kExitUsage;
    }
    options.boot_time_ns = boot;
  }
  std::optional<int64_t> since, until;
  for (auto [text, out] : {std::pair{&args.since, &since}, std::pair{&args.until, &until}}) {
    if (text->empty()) continue;
    *out = ParseTimeArg(*text, clock.NowNs());
    if (!*out) {
      std::cerr << "faultline diagnose: cannot read time '" << *text << "' (ISO 8601 or a duration like 2h)\n";
      return kExitUsage;
    }
  }
  Inventory inventory;
  if (!args.gpu_map.empty()) {
    auto inv = Inventory::LoadGpuMap(args.gpu_map);
    if (!inv.ok()) {
      std::cerr << "faultline diagnose: " << inv.status().message() << "\n";
      return kExitUsage;
    }
    inventory = std::move(*inv);
  }
  std::vector<Observation> obs;
  std::vector<InputReport> reports;
  if (int rc = ReadInputs(args, options, obs, reports); rc != kExitOk) return rc;

  KernelDetector detector(KernelDetectorOptions{}, inventory);
  for (const Observation& o : obs) {
    if (InWindow(o, since, until)) detector.Observe(o);
  }
  IsolateInput input;
  input.findings = detector.Findings();
  input.layers_with_data = {Layer::kOs};
  const Outcome outcome = Split(Isolate(input));

  std::string node = args.node;
  if (node.empty() && !reports.empty()) node = reports.front().stats.host;
  if (args.json) {
    std::cout << ReportJson(node, reports, outcome, input.findings).dump(2) << "\n";
    return kExitOk;
  }
  uint64_t lines = 0, classified = 0;
  for (const InputReport& r : reports) lines += r.stats.lines, classified += r.stats.classified_lines;
  std::cout << "faultline diagnose: " << reports.size() << " file(s), " << lines << " lines (" << classified
            << " recognized)" << (node.empty() ? "" : ", node " + node) << "\n\n";
  if (outcome.nothing_wrong || outcome.diagnoses.empty()) {
    std::cout << "No fault found in the kernel log that needs action.\n";
    if (outcome.nothing_wrong) RenderDiagnoses(std::cout, {*outcome.nothing_wrong});
    if (!outcome.diagnoses.empty()) std::cout << "Informational:\n";
  }
  RenderDiagnoses(std::cout, outcome.diagnoses);
  return kExitOk;
}

}  // namespace

void AddDiagnoseCommand(CliApp& app) {
  auto args = std::make_shared<DiagnoseArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "diagnose",
      "Diagnose a node from saved logs: prints the root causes, most important first, with evidence, "
      "action and confidence.\n"
      "Accepts dmesg (plain, -T, --decode/-x, --time-format iso), journalctl -k, syslog, raw /dev/kmsg dumps,\n"
      "gzip-compressed files and '-' for stdin; the form is detected per line.\n"
      "Exit code: 0 when the logs were read (whatever they show), 2 for a missing/unreadable input or bad option.");
  cmd->add_option("files", args->files, "Log files to read ('-' = stdin)")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object: {diagnoses, primary, findings, inputs, node}");
  cmd->add_option("--gpu-map", args->gpu_map,
                  "JSON file mapping PCI bus ids to GPU index/UUID/serial: "
                  "{\"gpus\":[{\"index\":0,\"uuid\":\"GPU-..\",\"serial\":\"..\",\"pci_bus_id\":\"0000:17:00.0\"}]}");
  cmd->add_option("--since", args->since, "Ignore lines before this time (ISO 8601, or a duration like 2h = 2h ago)");
  cmd->add_option("--until", args->until, "Ignore lines after this time (ISO 8601 or duration ago)");
  cmd->add_option("--node", args->node, "Node name for the report (default: the syslog host name, if any)");
  cmd->add_option("--boot-time", args->boot_time,
                  "UTC boot time (ISO 8601) to date plain dmesg '[uptime]' lines; without it they keep uptime only");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
