// `faultline diagnose`: offline diagnosis of saved inputs of every layer: kernel logs (any
// dmesg/journal/syslog form, raw kmsg dumps), `faultline collect ... --json` snapshots
// (Redfish, NVML, sysfs/fabric, dcgm-exporter), JSON observations, and raw dcgm-exporter
// scrapes; plain or gzip, or "-" for stdin. The form is sniffed per file
// (engine/offline/snapshot.h); the analysis is engine/offline/offline.h.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/collect_util.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "core/clock.h"
#include "core/inventory.h"
#include "core/json.h"
#include "core/time.h"
#include "engine/isolate/isolator.h"
#include "engine/offline/offline.h"
#include "engine/offline/snapshot.h"
#include "parse/json_log.h"
#include "parse/topology.h"
#include "sources/kmsg/log_reader.h"

namespace faultline::cli {
namespace {

struct DiagnoseArgs {
  std::vector<std::string> files;
  bool json = false;
  std::string gpu_map;
  std::string topology;
  std::string since;
  std::string until;
  std::string node;
  std::string boot_time;
  size_t max_snapshot_mb = 64;
  size_t max_observations = 200'000;
};

// What one input gave, for the report.
struct InputReport {
  std::string path;
  SnapshotFormat format = SnapshotFormat::kKernelLog;
  uint64_t bytes = 0;
  KernelLogStats kernel;  // kernel logs
  Snapshot snapshot;      // other forms (observations moved out)
  size_t observations = 0;
  std::string error;  // why the input could not be used at all ("" = used)
};

// Everything read, across inputs. Bounded: at most ReadContext::max_observations
// observations in all (each kernel log is also bounded by its reader's own caps).
struct Inputs {
  std::vector<Observation> observations;
  uint64_t dropped = 0;  // observations past the total cap
  std::vector<InputReport> reports;
  std::set<Layer> layers_read;
};

struct ReadContext {
  KernelLogOptions kernel;
  SnapshotOptions snapshot;
  size_t max_snapshot_bytes = 0;
  size_t max_observations = 0;  // across every input
  int64_t now_ns = 0;
};

size_t Remaining(const ReadContext& ctx, const Inputs& in) {
  return ctx.max_observations > in.observations.size() ? ctx.max_observations - in.observations.size() : 0;
}

constexpr size_t kHeadBytes = 64 * 1024;  // enough to tell the forms apart

using GzPtr = std::unique_ptr<gzFile_s, decltype(&gzclose)>;

// zlib reads plain files transparently, so one path serves plain, gzip and stdin.
Result<GzPtr> OpenInput(const std::string& path) {
  errno = 0;
  gzFile gz = path == "-" ? gzdopen(dup(0), "rb") : gzopen(path.c_str(), "rb");
  if (!gz) {
    const int e = errno;
    const StatusCode code = e == ENOENT   ? StatusCode::kNotFound
                            : e == EACCES ? StatusCode::kPermissionDenied
                                          : StatusCode::kIoError;
    return Status(code, "cannot open " + path + (e ? std::string(": ") + std::strerror(e) : ""));
  }
  gzbuffer(gz, 256 * 1024);
  return GzPtr(gz, &gzclose);
}

// Appends up to `max` bytes; false at end of input or on a read error (`error` says which).
bool ReadMore(gzFile gz, std::string& out, size_t max, std::string& error) {
  const size_t before = out.size();
  out.resize(before + max);
  const int n = gzread(gz, out.data() + before, static_cast<unsigned int>(max));
  out.resize(before + (n > 0 ? static_cast<size_t>(n) : 0));
  if (n == static_cast<int>(max)) return true;
  int errnum = Z_OK;
  const char* msg = gzerror(gz, &errnum);
  // A damaged or truncated gzip stream (Z_BUF_ERROR = unexpected end): keep what was read.
  if (n < 0 || errnum != Z_OK) error = msg && *msg ? msg : "read error";
  return false;
}

// Fills `buf` (its whole size) from the input; returns the bytes read, fewer at end of
// input or on a read error (`error` says which).
size_t ReadInto(gzFile gz, std::string& buf, std::string& error) {
  const int n = gzread(gz, buf.data(), static_cast<unsigned int>(buf.size()));
  if (n == static_cast<int>(buf.size())) return buf.size();
  int errnum = Z_OK;
  const char* msg = gzerror(gz, &errnum);
  if (n < 0 || errnum != Z_OK) error = msg && *msg ? msg : "read error";
  return n > 0 ? static_cast<size_t>(n) : 0;
}

// Streams the log through the reader chunk by chunk; the reader keeps only bounded,
// deduplicated observations, capped by what is left of the total.
void ReadKernelLog(gzFile gz, std::string head, const ReadContext& ctx, InputReport& r, Inputs& in,
                   std::string& read_error) {
  KernelLogOptions options = ctx.kernel;
  options.max_observations = std::min(options.max_observations, Remaining(ctx, in));
  const bool capped_by_total = options.max_observations < ctx.kernel.max_observations;
  auto reader = KernelLogReader::Create(options);
  if (!reader.ok()) {
    r.error = reader.status().ToString();
    return;
  }
  // A kernel log saved as JSON is turned back into lines on the way (parse/json_log.h).
  std::optional<JsonLogToText> json;
  if (r.format != SnapshotFormat::kKernelLog) {
    json.emplace(r.format == SnapshotFormat::kDmesgJson ? JsonLogForm::kDmesg : JsonLogForm::kJournal);
  }
  std::string lines;
  uint64_t input_bytes = 0;
  auto feed = [&](std::string_view data) {
    input_bytes += data.size();
    if (!json) {
      (*reader)->Feed(data);
      return;
    }
    lines.clear();
    json->Feed(data, lines);
    (*reader)->Feed(lines);
  };
  bool more = head.size() == kHeadBytes && read_error.empty();
  feed(head);
  // One buffer for the whole file, read into in place (no zero fill per chunk).
  std::string chunk(options.chunk_bytes, '\0');
  while (more) {
    const size_t n = ReadInto(gz, chunk, read_error);
    more = n == chunk.size();
    feed(std::string_view(chunk.data(), n));
  }
  (*reader)->Finish();
  r.kernel = (*reader)->stats();
  r.bytes = input_bytes;
  if (json && (json->stats().bad || json->stats().oversized)) {
    r.kernel.warnings.push_back(r.path + ": " + std::to_string(json->stats().bad) +
                                " JSON record(s) unreadable or without a message, " +
                                std::to_string(json->stats().oversized) + " over 1 MiB; skipped");
  }
  if (r.kernel.aggregated) {
    r.kernel.warnings.push_back(r.path + ": " + std::to_string(r.kernel.aggregated) + " distinct line(s) past " +
                                std::to_string(options.max_variants) +
                                " of one kind on one component were counted, not kept");
  }
  if (r.kernel.dropped) {
    in.dropped += r.kernel.dropped;
    r.kernel.warnings.push_back(r.path + ": " + std::to_string(r.kernel.dropped) + " observation(s) dropped past " +
                                (capped_by_total
                                     ? "the total of " + std::to_string(ctx.max_observations) + " (--max-observations)"
                                     : std::to_string(options.max_observations) + " per log"));
  }
  std::vector<Observation> observations = (*reader)->TakeObservations();
  r.observations = observations.size();
  if (in.observations.empty()) {
    in.observations.swap(observations);  // the common case, one log: no move of every observation
  } else {
    in.observations.insert(in.observations.end(), std::make_move_iterator(observations.begin()),
                           std::make_move_iterator(observations.end()));
  }
  in.layers_read.insert(Layer::kOs);
}

void ReadSnapshotInput(gzFile gz, std::string text, const ReadContext& ctx, InputReport& r, Inputs& in,
                       std::string& read_error) {
  bool more = text.size() == kHeadBytes && read_error.empty();
  while (more && text.size() <= ctx.max_snapshot_bytes) more = ReadMore(gz, text, 4u << 20, read_error);
  r.bytes = text.size();
  if (text.size() > ctx.max_snapshot_bytes) {
    r.error = "larger than " + std::to_string(ctx.max_snapshot_bytes >> 20) + " MiB (--max-snapshot-mb)";
    return;
  }
  SnapshotOptions options = ctx.snapshot;
  options.max_observations = Remaining(ctx, in);
  Result<Snapshot> snap = ParseSnapshot(text, r.format, options);
  if (!snap.ok()) {
    r.error = snap.status().message();
    return;
  }
  r.snapshot = std::move(*snap);
  std::vector<Observation>& observations = r.snapshot.observations;
  if (r.snapshot.dropped) {
    in.dropped += r.snapshot.dropped;
    r.snapshot.warnings.push_back(std::to_string(r.snapshot.dropped) + " observation(s) dropped past the total of " +
                                  std::to_string(ctx.max_observations) + " (--max-observations)");
  }
  r.observations = observations.size();
  in.observations.insert(in.observations.end(), std::make_move_iterator(observations.begin()),
                         std::make_move_iterator(observations.end()));
  observations = {};
}

// A saved scrape carries no time of its own: the file's modification time is when it was
// written, the closest thing to when it was scraped.
int64_t ScrapeTime(const std::string& path, int64_t now_ns) {
  struct stat st {};
  if (path == "-" || stat(path.c_str(), &st) != 0) return now_ns;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * kNsPerSec + st.st_mtim.tv_nsec;
}

// Reads one input into `in`. Fails only when the input cannot be opened or read at all;
// damage inside it is reported on the InputReport.
Status ReadInput(const std::string& path, ReadContext ctx, Inputs& in) {
  auto gz = OpenInput(path);
  if (!gz.ok()) return gz.status();
  InputReport r;
  r.path = path;
  std::string head, read_error;
  ReadMore(gz->get(), head, kHeadBytes, read_error);
  if (head.empty() && !read_error.empty()) return Status(StatusCode::kIoError, path + ": " + read_error);
  r.format = SniffSnapshot(head);
  if (IsKernelLogFormat(r.format)) {
    ReadKernelLog(gz->get(), std::move(head), ctx, r, in, read_error);
  } else {
    ctx.snapshot.scrape_time_ns = ScrapeTime(path, ctx.now_ns);
    ReadSnapshotInput(gz->get(), std::move(head), ctx, r, in, read_error);
  }
  if (!read_error.empty()) {
    r.kernel.warnings.push_back(path + ": read stopped early after " + std::to_string(r.bytes) +
                                " bytes: " + read_error);
  }
  in.reports.push_back(std::move(r));
  return Status::Ok();
}

void PrintWarnings(const InputReport& r) {
  const KernelLogStats& s = r.kernel;
  for (const std::string& w : s.warnings) std::cerr << "warning: " << w << "\n";
  if (s.truncated_lines) std::cerr << "warning: " << r.path << ": " << s.truncated_lines << " over-long line(s) cut\n";
  if (s.binary_lines) std::cerr << "warning: " << r.path << ": " << s.binary_lines << " line(s) with binary data\n";
  for (const std::string& w : r.snapshot.warnings) std::cerr << "warning: " << r.path << ": " << w << "\n";
  if (!r.error.empty()) std::cerr << "error: " << r.path << ": skipped: " << r.error << "\n";
}

// Returns 2 (usage) on an input that cannot be opened or read at all.
int ReadInputs(const DiagnoseArgs& args, const ReadContext& ctx, Inputs& in) {
  for (const std::string& path : args.files) {
    if (Status st = ReadInput(path, ctx, in); !st.ok()) {
      std::cerr << "faultline diagnose: " << st.message() << "\n";
      return kExitUsage;
    }
    PrintWarnings(in.reports.back());
  }
  return kExitOk;
}

// Diagnosing one node from another node's snapshot is a likely mistake worth a word.
void WarnAboutNodes(const std::vector<Observation>& observations) {
  std::set<std::string> nodes;
  for (const Observation& o : observations) {
    if (!o.node.empty()) nodes.insert(o.node);
  }
  if (nodes.size() < 2) return;
  std::cerr << "warning: the inputs hold observations of " << nodes.size() << " nodes (";
  size_t shown = 0;
  for (const std::string& n : nodes) {
    if (shown++ == 4) {
      std::cerr << ", ...";
      break;
    }
    std::cerr << (shown > 1 ? ", " : "") << n;
  }
  std::cerr << "); they are diagnosed as one\n";
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

Json InputJson(const InputReport& r) {
  Json j{{"path", r.path}, {"format", ToString(r.format)}, {"bytes", r.bytes}, {"observations", r.observations}};
  if (IsKernelLogFormat(r.format)) {
    const KernelLogStats& s = r.kernel;
    j.update({{"lines", s.lines},
              {"classified_lines", s.classified_lines},
              {"unknown_lines", s.unknown_lines()},
              {"truncated_lines", s.truncated_lines},
              {"binary_lines", s.binary_lines},
              {"folded_duplicates", s.folded_duplicates},
              {"aggregated_lines", s.aggregated},
              {"dropped_observations", s.dropped},
              {"warnings", s.warnings}});
  } else {
    Json sources = Json::array();
    for (Source s : r.snapshot.sources) sources.push_back(ToString(s));
    std::vector<std::string> warnings = r.kernel.warnings;  // read errors land there
    warnings.insert(warnings.end(), r.snapshot.warnings.begin(), r.snapshot.warnings.end());
    j.update({{"records", r.snapshot.records},
              {"rejected", r.snapshot.rejected},
              {"dropped_observations", r.snapshot.dropped},
              {"sources", sources},
              {"warnings", warnings}});
  }
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

Json ReportJson(const std::string& node, const std::vector<InputReport>& reports, const Outcome& outcome,
                const std::vector<Finding>& findings) {
  const std::vector<Diagnosis>& dx = outcome.diagnoses;
  Json inputs = Json::array();
  for (const InputReport& r : reports) inputs.push_back(InputJson(r));
  Json j{{"node", node}, {"inputs", inputs}, {"diagnoses", dx}, {"findings", findings}};
  if (outcome.nothing_wrong) {
    j["primary"] = *outcome.nothing_wrong;
  } else {
    j["primary"] = dx.empty() ? Json{{"fault_class", "none"}, {"action", "none"}} : Json(dx.front());
  }
  return j;
}

// "3 file(s): 1 kernel log, 2 lines (1 recognized); 2 snapshots, 184 observations (nvml, redfish)"
std::string Summary(const std::vector<InputReport>& reports) {
  uint64_t logs = 0, lines = 0, classified = 0, snapshots = 0, observations = 0, skipped = 0;
  std::set<std::string> sources;
  for (const InputReport& r : reports) {
    if (!r.error.empty()) {
      ++skipped;
    } else if (IsKernelLogFormat(r.format)) {
      ++logs, lines += r.kernel.lines, classified += r.kernel.classified_lines;
    } else {
      ++snapshots, observations += r.observations;
      for (Source s : r.snapshot.sources) sources.insert(std::string(ToString(s)));
    }
  }
  std::string out = std::to_string(reports.size()) + " file(s)";
  if (logs) {
    out += ", " + std::to_string(logs) + " kernel log(s), " + std::to_string(lines) + " lines (" +
           std::to_string(classified) + " recognized)";
  }
  if (snapshots) {
    out += ", " + std::to_string(snapshots) + " snapshot(s), " + std::to_string(observations) + " observations";
    std::string list;
    for (const std::string& s : sources) list += (list.empty() ? "" : ", ") + s;
    if (!list.empty()) out += " (" + list + ")";
  }
  if (skipped) out += ", " + std::to_string(skipped) + " skipped";
  return out;
}

std::string ReportNode(const DiagnoseArgs& args, const Inputs& in) {
  if (!args.node.empty()) return args.node;
  for (const InputReport& r : in.reports) {
    if (!r.kernel.host.empty()) return r.kernel.host;
  }
  for (const Observation& o : in.observations) {
    if (!o.node.empty() && o.source != Source::kKmsg) return o.node;
  }
  return "";
}

// Turns the options into the read context and the analysis options; 2 on a bad option.
int Prepare(const DiagnoseArgs& args, int64_t now_ns, ReadContext& ctx, OfflineOptions& offline,
            std::unique_ptr<Topology>& topology) {
  ctx.now_ns = now_ns;
  ctx.kernel.node = args.node;
  ctx.snapshot.node = args.node;
  ctx.max_snapshot_bytes = args.max_snapshot_mb << 20;
  ctx.max_observations = args.max_observations;
  if (!args.boot_time.empty()) {
    ctx.kernel.boot_time_ns = ParseIso8601(args.boot_time);
    if (!ctx.kernel.boot_time_ns) {
      std::cerr << "faultline diagnose: --boot-time wants an ISO 8601 time, got '" << args.boot_time << "'\n";
      return kExitUsage;
    }
  }
  for (auto [text, out] : {std::pair{&args.since, &offline.since_ns}, std::pair{&args.until, &offline.until_ns}}) {
    if (text->empty()) continue;
    *out = ParseTimeArg(*text, now_ns);
    if (!*out) {
      std::cerr << "faultline diagnose: cannot read time '" << *text << "' (ISO 8601 or a duration like 2h)\n";
      return kExitUsage;
    }
  }
  if (!args.gpu_map.empty()) {
    auto inv = Inventory::LoadGpuMap(args.gpu_map);
    if (!inv.ok()) {
      std::cerr << "faultline diagnose: " << inv.status().message() << "\n";
      return kExitUsage;
    }
    offline.inventory = std::move(*inv);
  }
  if (!args.topology.empty()) {
    auto t = LoadTopologyFile(args.topology);
    if (!t.ok()) {
      std::cerr << "faultline diagnose: " << t.status().message() << "\n";
      return kExitUsage;
    }
    topology = std::make_unique<Topology>(std::move(*t));
    offline.topology = topology.get();
  }
  return kExitOk;
}

void PrintHuman(const std::string& node, const std::vector<InputReport>& reports, const Outcome& outcome) {
  std::cout << "faultline diagnose: " << Summary(reports) << (node.empty() ? "" : ", node " + node) << "\n\n";
  if (outcome.nothing_wrong || outcome.diagnoses.empty()) {
    std::cout << "No fault found in the inputs that needs action.\n";
    if (outcome.nothing_wrong) RenderDiagnoses(std::cout, {*outcome.nothing_wrong});
    if (!outcome.diagnoses.empty()) std::cout << "Informational:\n";
  }
  RenderDiagnoses(std::cout, outcome.diagnoses);
}

int Run(const DiagnoseArgs& args) {
  const SystemClock clock;
  ReadContext ctx;
  OfflineOptions offline;
  std::unique_ptr<Topology> topology;
  if (int rc = Prepare(args, clock.NowNs(), ctx, offline, topology); rc != kExitOk) return rc;
  Inputs in;
  if (int rc = ReadInputs(args, ctx, in); rc != kExitOk) return rc;
  WarnAboutNodes(in.observations);
  const std::string node = ReportNode(args, in);
  offline.layers_read = in.layers_read;
  const IsolateInput input = BuildOfflineInput(std::move(in.observations), offline);
  const Outcome outcome = Split(Isolate(input));
  if (args.json) {
    std::cout
        << ReportJson(node, in.reports, outcome, input.findings).dump(2, ' ', false, Json::error_handler_t::replace)
        << "\n";
  } else {
    PrintHuman(node, in.reports, outcome);
  }
  return kExitOk;
}

}  // namespace

void AddDiagnoseCommand(CliApp& app) {
  auto args = std::make_shared<DiagnoseArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "diagnose",
      "Diagnose a node from saved logs and snapshots of every layer: prints the root causes, most important\n"
      "first, with evidence, action and confidence. Each file's form is detected from its content:\n"
      "  kernel logs: dmesg (plain, -T, --decode/-x, --time-format iso), journalctl -k, syslog, raw /dev/kmsg dumps;\n"
      "  snapshots: the output of `faultline collect redfish|nvml|sysfs|fabric|dcgm-exporter --json`,\n"
      "    JSON arrays or JSON lines of observations, and raw dcgm-exporter scrapes (Prometheus text).\n"
      "Files may be gzip-compressed; '-' reads stdin. All observations go through the agent's detectors in time\n"
      "order, so snapshots taken at different times (two NVML samples an hour apart) combine.\n"
      "Exit code: 0 when the inputs were read (whatever they show; a damaged file is reported and the rest used),\n"
      "2 for a missing/unreadable input or bad option.");
  cmd->add_option("files", args->files, "Log and snapshot files to read ('-' = stdin)")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object: {diagnoses, primary, findings, inputs, node}");
  cmd->add_option("--gpu-map", args->gpu_map,
                  "JSON file mapping PCI bus ids to GPU index/UUID/serial: "
                  "{\"gpus\":[{\"index\":0,\"uuid\":\"GPU-..\",\"serial\":\"..\",\"pci_bus_id\":\"0000:17:00.0\"}]}");
  cmd->add_option("--topology", args->topology,
                  "Topology file (JSON, docs/topology.md) naming switch ports and cables");
  cmd->add_option("--since", args->since,
                  "Ignore observations before this time (ISO 8601, or a duration like 2h = 2h ago)");
  cmd->add_option("--until", args->until, "Ignore observations after this time (ISO 8601 or duration ago)");
  cmd->add_option("--node", args->node,
                  "Node name for the report (default: the syslog host name, else the snapshots' node)");
  cmd->add_option("--boot-time", args->boot_time,
                  "UTC boot time (ISO 8601) to date plain dmesg '[uptime]' lines; without it they keep uptime only");
  cmd->add_option("--max-snapshot-mb", args->max_snapshot_mb,
                  "Skip (with an error) snapshot files larger than this many MiB, uncompressed (default 64; "
                  "kernel logs are streamed and have no size limit)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-observations", args->max_observations,
                  "Keep at most this many observations across all inputs (default 200000); the rest are dropped "
                  "with a warning. Kernel logs also fold repeats and count distinct lines past 1024 of one kind on "
                  "one component, so memory stays bounded whatever the input")
      ->check(CLI::Range(1000, 50'000'000));
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
