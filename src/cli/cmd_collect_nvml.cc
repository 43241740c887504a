// `faultline collect nvml`: samples every GPU through NVML once (or --count times) and
// prints the observations: a per-GPU table by default, one JSON object per sample with
// --json. Exit code 2 when NVML is unavailable (no driver/library), 1 when a sample could
// not enumerate the GPUs, else 0.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "cli/collect_util.h"
#include "cli/commands.h"
#include "core/json.h"
#include "core/time.h"
#include "engine/detect/gpu_detectors.h"
#include "sources/nvml/nvml_collector.h"

namespace faultline::cli {
namespace {

struct CollectNvmlArgs {
  bool json = false;
  double interval_s = 10;
  int count = 1;
  std::string node;
  std::string lib;
};

// The GPU-layer detectors, fed every sample. Detectors are stateful across samples
// (rates, sustained throttling), so one set lives for the whole run.
class NvmlFindingsHook {
 public:
  std::vector<Finding> Observe(const std::vector<Observation>& observations) {
    std::vector<Finding> out;
    for (auto& d : detectors_) {
      for (const Observation& o : observations) d->Observe(o);
      for (Finding& f : d->Findings()) out.push_back(std::move(f));
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<Detector>> detectors_ = MakeGpuDetectors();
};

Json SampleJson(const nvml::NvmlSample& s, const std::string& node, const std::vector<Finding>& findings) {
  Json errors = Json::array();
  for (const auto& e : s.errors) {
    errors.push_back({{"gpu", e.gpu},
                      {"call", e.call},
                      {"code", e.code},
                      {"error", nvml::NvmlErrorName(e.code)},
                      {"message", e.message}});
  }
  return Json{
      {"time", FormatIso8601(s.time_ns)}, {"time_ns", s.time_ns}, {"node", node},     {"gpu_count", s.gpu_count},
      {"observations", s.observations},   {"findings", findings}, {"errors", errors}, {"notes", s.notes}};
}

// One row of the human table, folded from a GPU's observations.
struct GpuRow {
  std::map<std::string, std::string> cells;
  int links = 0;
  int links_up = 0;
  double link_errors = 0;
};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), v == std::floor(v) ? "%.0f" : "%.1f", v);
  return buf;
}

std::string Attr(const Observation& o, const char* key) {
  auto it = o.attrs.find(key);
  return it == o.attrs.end() ? "" : it->second;
}

void FoldLink(const Observation& o, GpuRow& row) {
  if (o.kind == ObsKind::kNvlinkState) {
    ++row.links;
    row.links_up += o.value.value_or(0) > 0 ? 1 : 0;
  } else if (o.value) {
    row.link_errors += *o.value;
  }
}

// The table column an observation fills, or "" for those it does not show.
std::string Column(const Observation& o) {
  const bool location = o.attrs.count("location") > 0;
  const bool vol = Attr(o, "counter") == "volatile";
  switch (o.kind) {
    case ObsKind::kTemperature:
      return Attr(o, "sensor") == "memory" ? "hbm_c" : "temp_c";
    case ObsKind::kPower:
      return "power_w";
    case ObsKind::kPowerLimit:
      return "limit_w";
    case ObsKind::kClock:
      return Attr(o, "clock") == "sm" ? "sm_mhz" : "mem_mhz";
    case ObsKind::kClockThrottle:
      return "reasons";
    case ObsKind::kEccSbe:
      return !location && vol ? "sbe_vol" : "";
    case ObsKind::kEccDbe:
      return !location && vol ? "dbe_vol" : "";
    case ObsKind::kRowRemapPending:
      return "remap_pend";
    case ObsKind::kRowRemapFailure:
      return "remap_fail";
    case ObsKind::kPcieLinkGen:
      return "gen";
    case ObsKind::kPcieLinkWidth:
      return "width";
    case ObsKind::kPcieReplay:
      return "replay";
    case ObsKind::kGpuLost:
      return "lost";
    default:
      return "";
  }
}

void Fold(const Observation& o, GpuRow& row) {
  if (o.component.type == ComponentType::kNvlink) return FoldLink(o, row);
  if (o.kind == ObsKind::kGpuIdentity) {
    row.cells["name"] = Attr(o, "name");
    row.cells["bdf"] = Attr(o, "bdf");
    return;
  }
  const std::string col = Column(o);
  if (col.empty()) return;
  if (o.kind == ObsKind::kClockThrottle) {
    row.cells[col] = Attr(o, "mask");
  } else if (o.kind == ObsKind::kGpuLost) {
    row.cells[col] = Attr(o, "error");
  } else if (o.value) {
    row.cells[col] = Num(*o.value) + (Attr(o, "max").empty() ? "" : "/" + Attr(o, "max"));
  }
}

void RenderTable(std::ostream& out, const nvml::NvmlSample& s, const std::string& node) {
  std::map<int, GpuRow> rows;
  for (const auto& o : s.observations) {
    auto it = o.component.keys.find("index");
    if (it != o.component.keys.end()) Fold(o, rows[std::atoi(it->second.c_str())]);
  }
  out << FormatIso8601(s.time_ns) << "  node " << node << "  " << s.gpu_count << " GPU(s), " << s.observations.size()
      << " observations\n";
  static const char* kCols[] = {"bdf",     "temp_c",  "hbm_c",   "power_w", "limit_w",    "sm_mhz",
                                "mem_mhz", "reasons", "sbe_vol", "dbe_vol", "remap_pend", "remap_fail",
                                "gen",     "width",   "replay",  "lost"};
  char line[512];
  std::snprintf(line, sizeof(line), "%-4s", "gpu");
  out << line;
  for (const char* c : kCols) out << " " << c;
  out << " nvlink_up nvlink_err  name\n";
  for (auto& [index, row] : rows) {
    out << std::to_string(index) << std::string(index < 10 ? 3 : 2, ' ');
    for (const char* c : kCols) {
      const std::string v = row.cells.count(c) ? row.cells[c] : "-";
      out << " " << v << std::string(v.size() < std::strlen(c) ? std::strlen(c) - v.size() : 0, ' ');
    }
    out << " " << row.links_up << "/" << row.links << "      " << Num(row.link_errors) << "  " << row.cells["name"]
        << "\n";
  }
  for (const auto& e : s.errors) out << "error: " << e.message << "\n";
  for (const auto& n : s.notes) out << "note: " << n << "\n";
}

int Run(const CollectNvmlArgs& args) {
  if (args.count < 0 || !(args.interval_s > 0)) {
    std::cerr << "faultline collect nvml: --count must be >= 0 and --interval > 0\n";
    return kExitUsage;
  }
  nvml::NvmlOptions options;
  options.library_path = args.lib;
  options.node = args.node.empty() ? HostNameOr("localhost") : args.node;
  options.slow_every = 1;  // a look by hand: every field at every sample
  auto collector = nvml::NvmlCollector::Open(options);
  if (!collector.ok()) {
    std::cerr << "faultline collect nvml: " << collector.status().message() << "\n";
    return kExitUsage;
  }
  NvmlFindingsHook findings;
  int rc = kExitOk;
  const auto interval =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(args.interval_s));
  (*collector)->Run(args.count, interval, [&](const nvml::NvmlSample& s) {
    for (const auto& e : s.errors) rc = e.gpu < 0 ? kExitFailure : rc;
    const std::vector<Finding> found = findings.Observe(s.observations);
    if (args.json) {
      std::cout << SampleJson(s, options.node, found).dump() << std::endl;
    } else {
      RenderTable(std::cout, s, options.node);
      std::cout << std::flush;
    }
    return true;
  });
  return rc;
}

}  // namespace

void AddCollectNvmlCommand(CliApp& app) {
  auto args = std::make_shared<CollectNvmlArgs>();
  CLI::App* cmd = app.collect->add_subcommand(
      "nvml",
      "Sample every GPU through NVML (libnvidia-ml.so.1, or $FAULTLINE_NVML_LIB): identity, ECC, retired pages,\n"
      "row remapping, temperatures, power, clocks, clock event reasons, PCIe and NVLink counters.\n"
      "Exit code: 0 sampled, 1 a sample could not list the GPUs, 2 NVML unavailable or bad option.");
  cmd->add_flag("--json", args->json,
                "One JSON object per sample and line: {time, node, gpu_count, observations, findings, errors, notes}");
  cmd->add_option("--interval", args->interval_s, "Seconds between samples (default 10)");
  cmd->add_option("--count", args->count, "Number of samples (default 1; 0 = until interrupted)");
  cmd->add_option("--node", args->node, "Node name stamped on observations (default: the host name)");
  cmd->add_option("--lib", args->lib,
                  "Path of the NVML library to load (default: $FAULTLINE_NVML_LIB or the system's)");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
