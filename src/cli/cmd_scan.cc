// `faultline scan`: the first thing to run on a suspect node (docs/scan.md). Reads every
// source reachable on this host once through the agent's own sources (scan_sources.h),
// runs the agent's detectors and isolator over what they gave (engine/offline), and prints
// the diagnosis with the policy's plan for it, and every source with what became of it.
// No store is needed; --store keeps what was read.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/collect_util.h"
#include "cli/commands.h"
#include "cli/scan_report.h"
#include "cli/scan_sources.h"
#include "core/json.h"
#include "core/time.h"
#include "daemon/config.h"
#include "daemon/pipeline.h"
#include "daemon/sources.h"
#include "engine/isolate/isolator.h"
#include "engine/offline/offline.h"
#include "policy/rules.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct ScanArgs {
  std::string config;
  std::string node;
  std::string root;
  std::string kmsg;
  std::string nvml_lib;
  std::string amd_lib;
  std::string dcgm_url;
  std::string redfish;
  std::string redfish_user;
  std::string redfish_password_file;
  std::string redfish_ca_file;
  bool redfish_insecure = false;
  bool redfish_allow_http = false;
  std::string topology;
  std::vector<std::string> skip;
  std::string since;
  std::string store;
  double timeout_s = 10;
  bool json = false;
};

void Fail(const std::string& message) { std::cerr << "faultline scan: " << message << "\n"; }

// What a one-shot read changes in any config, the agent's included: events are not
// followed (nothing waits for them), every NVML poll is a full one, a BMC sweep ends by
// the deadline, and no endpoint is opened for workload reports nobody would send.
void MakeOneShot(daemon::AgentConfig& c, int64_t timeout_ns) {
  c.redfish.events = false;
  c.redfish.wait_for_events = false;
  c.redfish.sweep_deadline_ns = timeout_ns;
  c.nvml.slow_every = 1;
  c.workload.listen.clear();
}

void ApplyFlags(const ScanArgs& a, daemon::AgentConfig& c) {
  auto set = [](const std::string& flag, std::string& field) {
    if (!flag.empty()) field = flag;
  };
  set(a.root, c.sysfs.root);
  set(a.kmsg, c.kmsg.path);
  set(a.nvml_lib, c.nvml.library_path);
  set(a.amd_lib, c.amd.library_path);
  set(a.dcgm_url, c.dcgm_exporter.url);
  set(a.redfish, c.redfish.url);
  set(a.redfish_user, c.redfish.user);
  set(a.redfish_password_file, c.redfish.password_file);
  set(a.redfish_ca_file, c.redfish.ca_file);
  set(a.topology, c.sysfs.topology_file);
  if (a.redfish_insecure) c.redfish.insecure = true;
  if (a.redfish_allow_http) c.redfish.allow_http = true;
  for (const std::string& s : a.skip) {
    if (s == "kmsg") c.kmsg.enabled = false;
    if (s == "nvml") c.nvml.enabled = false;
    if (s == "sysfs") c.sysfs.enabled = false;
    if (s == "amd") c.amd.enabled = false;
    if (s == "ethernet") c.ethernet.enabled = false;
    if (s == "redfish") c.redfish.url.clear();
    if (s == "dcgm_exporter") c.dcgm_exporter.url.clear();
  }
}

// The agent's config file when given, else its defaults with AMD on (a scan looks for
// every kind of GPU); then the flags, which override the file.
Result<daemon::AgentConfig> BuildConfig(const ScanArgs& args) {
  daemon::AgentConfig config;
  config.amd.enabled = true;
  if (!args.config.empty()) {
    auto loaded = daemon::LoadAgentConfig(args.config);
    if (!loaded.ok()) return loaded.status();
    config = std::move(loaded).value();
  }
  ApplyFlags(args, config);
  MakeOneShot(config, static_cast<int64_t>(args.timeout_s * 1e9));
  return config;
}

std::string NodeName(const ScanArgs& args, const daemon::AgentConfig& config) {
  if (!args.node.empty()) return args.node;
  if (!config.agent.node.empty()) return config.agent.node;
  return HostNameOr("localhost");
}

// Reads every configured source once. Cursors come from a private in-memory store: a scan
// reads each log from its start, whatever an agent on this node has already read. 2 on a
// source that cannot even be set up (a bad topology file), 3 when not even that store opens.
int ReadSources(const daemon::AgentConfig& config, const std::string& node, const Clock& clock, int64_t timeout_ns,
                std::unique_ptr<Topology>& topology, ScanRead& read) {
  auto cursors = Store::Open(":memory:");
  if (!cursors.ok()) {
    Fail(cursors.status().ToString());
    return kExitUnknown;
  }
  auto sources = daemon::MakeConfiguredSources(config, node, clock, **cursors, topology);
  if (!sources.ok()) {
    Fail(sources.status().message());
    return kExitUsage;
  }
  read =
      PollSourcesOnce(std::move(sources).value(), UnconfiguredSources(config), clock, clock.MonotonicNs() + timeout_ns);
  return kExitOk;
}

// Layers whose source answered: those that gave observations, and a kernel log read
// without error even when it held nothing (a clean kernel log is evidence the OS is fine).
std::set<Layer> LayersRead(const std::vector<ScanSourceReport>& sources) {
  std::set<Layer> layers;
  for (const ScanSourceReport& s : sources) {
    if (s.state == ScanState::kRead || (s.state == ScanState::kEmpty && s.name == "kmsg")) layers.insert(s.layer);
  }
  return layers;
}

bool SawAnything(const std::vector<ScanSourceReport>& sources) {
  for (const ScanSourceReport& s : sources) {
    if (s.state == ScanState::kRead) return true;
  }
  return false;
}

// The node needs action for a fault at warning or worse, or one whose plan does something
// (drain, reset, ticket, page on-call). Not for an informational diagnosis the plan only
// watches, nor for a program's own fault (a segfault): its owner is told, the node is fine.
bool NeedsAction(const Diagnosis& d, const std::vector<policy::Proposal>& plan) {
  if (policy::IsWorkloadsFault(d.fault_class)) return false;
  if (d.severity >= Severity::kWarning) return true;
  for (const policy::Proposal& p : plan) {
    if (!p.refused) return true;
  }
  return false;
}

// Healthy, or needs action for the first diagnosis that does, with its plan.
void Judge(ScanAnalysis& a) {
  a.verdict = Verdict::kHealthy;
  for (size_t i = 0; i < a.diagnoses.size(); ++i) {
    std::vector<policy::Proposal> plan = policy::PlanActions(a.diagnoses[i]);
    if (!NeedsAction(a.diagnoses[i], plan)) continue;
    a.verdict = Verdict::kNeedsAction;
    a.plan = std::move(plan);
    // The acting diagnosis leads, even after an informational one the isolator ranked first.
    const auto acting = a.diagnoses.begin() + static_cast<std::ptrdiff_t>(i);
    std::rotate(a.diagnoses.begin(), acting, acting + 1);
    return;
  }
}

ScanAnalysis Analyze(std::vector<Observation> observations, const ScanRead& read, const Topology* topology,
                     std::optional<int64_t> since_ns) {
  ScanAnalysis a;
  if (!SawAnything(read.sources)) return a;  // kCouldNotSee: no reading to judge
  OfflineOptions options;
  options.topology = topology;
  options.since_ns = since_ns;
  options.layers_read = LayersRead(read.sources);
  IsolateInput input = BuildOfflineInput(std::move(observations), options);
  std::vector<Diagnosis> dx = Isolate(input);
  a.findings = std::move(input.findings);
  for (Diagnosis& d : dx) {
    if (d.fault_class != FaultClass::kNone) {
      a.diagnoses.push_back(std::move(d));
    } else if (!a.nothing_wrong) {
      a.nothing_wrong = std::move(d);
    }
  }
  Judge(a);
  return a;
}

// What a stored finding must match for a repeat to be left out: the agent's identity of
// the event (daemon::FindingKey) and what a reader would act on.
std::string FindingSignature(const Finding& f) {
  return daemon::FindingKey(f) + "|" + std::to_string(f.count) + "|" + std::string(ToString(f.severity)) + "|" +
         std::string(ToString(f.action));
}

// The agent stores a primary diagnosis only when it differs from the latest stored one by
// class, part, action or severity (daemon/pipeline.cc); so does a scan.
std::string DiagnosisSignature(const Diagnosis& d) {
  return std::string(ToString(d.fault_class)) + "|" + d.component.Id() + "|" + std::string(ToString(d.action)) + "|" +
         std::string(ToString(d.severity));
}

Status SaveFindings(Store& store, const std::string& node, const std::vector<Finding>& findings) {
  RecordQuery q;
  q.node = node;
  q.limit = 0;
  auto stored = store.ListFindings(q);
  if (!stored.ok()) return stored.status();
  std::set<std::string> known;
  for (const Row<Finding>& row : stored->rows) known.insert(FindingSignature(row.value));
  for (const Finding& f : findings) {
    if (known.count(FindingSignature(f))) continue;
    auto id = store.PutFinding(node, f);
    if (!id.ok()) return id.status();
  }
  return Status::Ok();
}

Status SaveDiagnosis(Store& store, const std::string& node, const Diagnosis& primary, int64_t now_ns) {
  auto latest = store.LatestDiagnosis(node);
  if (!latest.ok()) return latest.status();
  if (latest->has_value() && DiagnosisSignature((*latest)->value) == DiagnosisSignature(primary)) return Status::Ok();
  auto id = store.PutDiagnosis(node, primary, now_ns);
  return id.ok() ? Status::Ok() : id.status();
}

// What was read, found and concluded, as the agent would have stored it: observations
// (the store drops those it holds already), findings and the primary diagnosis, each
// only when new, so scanning a node twice stores its facts once. Nothing is stored when
// nothing could be read.
Status SaveToStore(Store& store, const std::string& node, const std::vector<Observation>& observations,
                   const ScanAnalysis& a, int64_t now_ns) {
  if (a.verdict == Verdict::kCouldNotSee) return Status::Ok();
  auto appended = store.Append(observations);
  if (!appended.ok()) return appended.status();
  if (Status s = SaveFindings(store, node, a.findings); !s.ok()) return s;
  const Diagnosis* primary = PrimaryDiagnosis(a);
  return primary ? SaveDiagnosis(store, node, *primary, now_ns) : Status::Ok();
}

// 2 when the store cannot be opened: found out before any source is read.
int OpenStore(const std::string& path, std::unique_ptr<Store>& store) {
  if (path.empty()) return kExitOk;
  auto opened = Store::Open(path);
  if (!opened.ok()) {
    Fail("--store " + path + ": " + opened.status().ToString());
    return kExitUsage;
  }
  store = std::move(opened).value();
  return kExitOk;
}

std::optional<int64_t> SinceNs(const std::string& since, int64_t now_ns, bool& bad) {
  if (since.empty()) return std::nullopt;
  auto t = ParseTimeArg(since, now_ns);
  bad = !t;
  return t;
}

// Ends the process once the report is out, without waiting for a hung poll's thread.
[[noreturn]] void ExitNow(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

int Run(const ScanArgs& args) {
  const SystemClock clock;
  const int64_t start_ns = clock.MonotonicNs();
  bool bad_since = false;
  const std::optional<int64_t> since_ns = SinceNs(args.since, clock.NowNs(), bad_since);
  if (bad_since) {
    Fail("cannot read time '" + args.since + "' (ISO 8601 or a duration like 2h)");
    return kExitUsage;
  }
  auto config = BuildConfig(args);
  if (!config.ok()) {
    Fail(config.status().message());
    return kExitUsage;
  }
  std::unique_ptr<Store> store;
  if (int rc = OpenStore(args.store, store); rc != kExitOk) return rc;
  const std::string node = NodeName(args, *config);
  std::unique_ptr<Topology> topology;
  ScanRead read;
  const int64_t timeout_ns = static_cast<int64_t>(args.timeout_s * 1e9);
  if (int rc = ReadSources(*config, node, clock, timeout_ns, topology, read); rc != kExitOk) return rc;
  std::vector<Observation> kept;
  if (store) kept = read.observations;  // the analysis consumes its copy
  const ScanAnalysis a = Analyze(std::move(read.observations), read, topology.get(), since_ns);
  int code = ExitCode(a.verdict);
  if (store) {
    if (Status s = SaveToStore(*store, node, kept, a, clock.NowNs()); !s.ok()) {
      Fail("--store " + args.store + ": " + s.ToString());
      code = kExitUsage;
    }
  }
  const int64_t elapsed_ms = (clock.MonotonicNs() - start_ns) / 1'000'000;
  if (args.json) {
    std::cout << ScanReportJson(node, read, a, elapsed_ms).dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    PrintScanReport(node, read, a, elapsed_ms);
  }
  if (read.stuck) ExitNow(code);  // the clock and topology stay alive for the hung thread
  return code;
}

}  // namespace

void AddScanCommand(CliApp& app) {
  auto args = std::make_shared<ScanArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "scan",
      "Check this node now: read every source reachable on this host once (the kernel ring buffer from\n"
      "/dev/kmsg without waiting, NVML, AMD SMI or amdgpu sysfs, PCIe/InfiniBand/Ethernet sysfs, and the BMC\n"
      "or a dcgm-exporter when given), run the agent's detectors and isolator, and print the diagnosis with\n"
      "the policy's plan for it, and every source: read, empty, failed (with the error), timed out, or not\n"
      "configured. Nothing is acted on. No store is needed; --store keeps what was read.\n"
      "Exit code: 0 healthy; 1 needs action (a fault at warning or worse, or one the policy would act on);\n"
      "2 bad options or an unusable --config/--store; 3 could not see (no source gave a reading).\n"
      "Examples:\n"
      "  sudo faultline scan\n"
      "  sudo faultline scan --redfish https://10.0.0.5 --redfish-user admin --redfish-password-file /etc/bmc.pw\n"
      "  faultline scan --config /etc/faultline/agent.toml --json --store /tmp/scan.db");
  cmd->add_option("--config", args->config, "Read the sources this agent config enables (flags override it)");
  cmd->add_option("--node", args->node, "Node name for the report (default: [agent] node, else the host name)");
  cmd->add_option("--root", args->root, "Filesystem root holding /sys (default /; a copied or fake tree)");
  cmd->add_option("--kmsg", args->kmsg,
                  "Kernel log: /dev/kmsg (default; what the ring buffer holds, read without waiting) or a log file");
  cmd->add_option("--nvml-lib", args->nvml_lib, "NVML library (default $FAULTLINE_NVML_LIB, else libnvidia-ml.so.1)");
  cmd->add_option("--amd-lib", args->amd_lib, "AMD SMI library (default $FAULTLINE_AMDSMI_LIB, else libamd_smi.so)");
  cmd->add_option("--dcgm-url", args->dcgm_url, "dcgm-exporter metrics URL, e.g. http://127.0.0.1:9400/metrics");
  cmd->add_option("--redfish", args->redfish, "BMC Redfish URL, e.g. https://10.0.0.5");
  cmd->add_option("--redfish-user", args->redfish_user, "BMC user (default $FAULTLINE_BMC_USER)");
  cmd->add_option("--redfish-password-file", args->redfish_password_file,
                  "File whose first line is the BMC password, mode 0600 (default $FAULTLINE_BMC_PASSWORD)");
  cmd->add_option("--redfish-ca-file", args->redfish_ca_file, "PEM bundle to trust for the BMC");
  cmd->add_flag("--redfish-insecure", args->redfish_insecure, "Skip the BMC's TLS verification (lab BMCs only)");
  cmd->add_flag("--redfish-allow-http", args->redfish_allow_http, "Allow a plain http:// BMC URL");
  cmd->add_option("--topology", args->topology, "Topology file (docs/topology.md) naming switch ports and cables");
  cmd->add_option("--skip", args->skip, "Do not read this source (repeatable)")
      ->check(CLI::IsMember({"kmsg", "nvml", "sysfs", "amd", "ethernet", "redfish", "dcgm_exporter"}));
  cmd->add_option("--since", args->since,
                  "Ignore what happened before this time (ISO 8601, or a duration like 2h); the ring buffer "
                  "otherwise goes back to boot");
  cmd->add_option("--store", args->store, "Keep the observations, findings and diagnosis in this store");
  cmd->add_option("--timeout", args->timeout_s, "Seconds every source gets to answer (default 10)")
      ->check(CLI::Range(0.1, 300.0));
  cmd->add_flag("--json", args->json,
                "Print one JSON object: {node, verdict, exit_code, sources, primary, diagnoses, plan, findings}");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
