// `faultline collect amd`: read every AMD Instinct GPU once (or --count times) through AMD
// SMI (libamd_smi.so, dlopen'ed) or, without it, the amdgpu sysfs files under --root; run
// the GPU and fabric detectors over the samples and print a per-GPU table, or one JSON
// object per sample with --json. Exit: 0 sampled, 1 a sample read no GPU after an
// earlier one did, 2 bad option or no AMD GPU reachable (no library and no amdgpu card).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cli/collect_util.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "core/json.h"
#include "core/time.h"
#include "engine/detect/fabric_detectors.h"
#include "engine/detect/gpu_detectors.h"
#include "sources/amdsmi/amd_collector.h"

namespace faultline::cli {
namespace {

struct CollectAmdArgs {
  std::string root = "/";
  std::string library;
  bool no_library = false;
  std::string node;
  bool json = false;
  double interval_s = 10;
  int count = 1;
};

void RenderTable(std::ostream& out, const std::vector<Observation>& obs) {
  std::map<int, std::map<std::string, std::string>> rows;
  for (const Observation& o : obs) {
    if (o.component.type != ComponentType::kGpu) continue;
    auto& r = rows[std::atoi(o.component.name.c_str())];
    r["bdf"] = MapValue(o.component.keys, "bdf");
    const std::string loc = MapValue(o.attrs, "location");
    const std::string v = o.value ? FormatNumber(*o.value) : "";
    switch (o.kind) {
      case ObsKind::kTemperature:
        r[MapValue(o.attrs, "sensor")] = v;
        break;
      case ObsKind::kPower:
        r["power"] = v;
        break;
      case ObsKind::kEccSbe:
        if (loc == "dram") r["hbm_ce"] = v;
        break;
      case ObsKind::kEccDbe:
        if (loc == "dram") r["hbm_ue"] = v;
        if (loc == "sram") r["chip_ue"] = v;
        break;
      case ObsKind::kRetiredPages:
        r["pages"] = v + (MapValue(o.attrs, "limit").empty() ? "" : "/" + MapValue(o.attrs, "limit"));
        break;
      case ObsKind::kClockThrottle:
        r["throttle"] = MapValue(o.attrs, "amd_reasons").empty() ? "none" : MapValue(o.attrs, "amd_reasons");
        break;
      case ObsKind::kNvlinkCrcData:
        r["xgmi_ce"] = v;
        break;
      case ObsKind::kGpuLost:
        r["lost"] = "LOST";
        break;
      default:
        break;
    }
  }
  char line[256];
  std::snprintf(line, sizeof(line), "%-4s %-14s %-7s %-6s %-6s %-7s %-7s %-7s %-9s %-8s %s\n", "gpu", "bdf", "hotspot",
                "mem", "watts", "hbm_ce", "hbm_ue", "chip_ue", "pages", "xgmi_ce", "throttle");
  out << line;
  for (auto& [index, row] : rows) {
    auto& r = row;  // lambdas cannot capture structured bindings under clang 14
    auto c = [&](const char* k) { return r.count(k) && !r[k].empty() ? r[k] : std::string("-"); };
    std::snprintf(line, sizeof(line), "%-4d %-14s %-7s %-6s %-6s %-7s %-7s %-7s %-9s %-8s %s%s\n", index,
                  c("bdf").c_str(), c("gpu").c_str(), c("memory").c_str(), c("power").c_str(), c("hbm_ce").c_str(),
                  c("hbm_ue").c_str(), c("chip_ue").c_str(), c("pages").c_str(), c("xgmi_ce").c_str(),
                  c("throttle").c_str(), r.count("lost") ? "  LOST" : "");
    out << line;
  }
}

Json SampleJson(const amdsmi::AmdSample& s, const std::string& node, const std::vector<Finding>& findings) {
  Json errors = Json::array();
  for (const amdsmi::AmdError& e : s.errors)
    errors.push_back({{"gpu", e.gpu}, {"call", e.call}, {"message", e.message}});
  return Json{{"time", FormatIso8601(s.time_ns)},
              {"time_ns", s.time_ns},
              {"node", node},
              {"via", s.via},
              {"gpu_count", s.gpu_count},
              {"observations", s.observations},
              {"findings", findings},
              {"errors", errors},
              {"notes", s.notes}};
}

int Run(const CollectAmdArgs& args) {
  if (args.count < 1 || !(args.interval_s > 0)) {
    std::cerr << "faultline collect amd: --count must be >= 1 and --interval > 0\n";
    return kExitUsage;
  }
  const std::string node = args.node.empty() ? HostNameOr("localhost") : args.node;
  amdsmi::AmdOptions o;
  o.library_path = args.library;
  o.use_library = !args.no_library;
  o.sysfs_root = args.root;
  o.node = node;
  auto collector = amdsmi::AmdCollector::Open(std::move(o));
  auto detectors = MakeGpuDetectors();
  for (auto& d : MakeFabricDetectors(FabricOptions{}, nullptr)) detectors.push_back(std::move(d));
  int rc = kExitOk;
  bool seen_gpu = false;
  for (int i = 0; i < args.count; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(args.interval_s));
    amdsmi::AmdSample s = collector->Sample();
    if (s.gpu_count == 0 && s.observations.empty()) {
      if (!seen_gpu) {
        std::cerr << "faultline collect amd: no AMD GPU reachable: "
                  << (collector->library_status().empty() ? "AMD SMI lists none" : collector->library_status())
                  << "; no amdgpu card under " << args.root << "sys/class/drm\n";
        for (const amdsmi::AmdError& e : s.errors) std::cerr << "error: " << e.message << "\n";
        return kExitUsage;
      }
      rc = kExitFailure;
    }
    seen_gpu = seen_gpu || s.gpu_count > 0;
    std::vector<Finding> findings;
    for (auto& d : detectors) {
      for (const Observation& obs : s.observations) d->Observe(obs);
      for (Finding& f : d->Findings()) findings.push_back(std::move(f));
    }
    if (args.json) {
      std::cout << SampleJson(s, node, findings).dump() << std::endl;
      continue;
    }
    std::cout << FormatIso8601(s.time_ns) << "  node " << node << "  via " << s.via << "  " << s.gpu_count
              << " GPU(s), " << s.observations.size() << " observations, " << s.errors.size() << " error(s)\n";
    RenderTable(std::cout, s.observations);
    for (const std::string& n : s.notes) std::cout << "note: " << n << "\n";
    for (const amdsmi::AmdError& e : s.errors) std::cout << "error: " << e.message << "\n";
    if (!findings.empty()) RenderFindings(std::cout, findings);
    std::cout << std::flush;
  }
  return rc;
}

constexpr char kHelp[] =
    "Where the readings come from:\n"
    "  1. AMD SMI (libamd_smi.so from ROCm), loaded at run time: --amdsmi-lib PATH, else $FAULTLINE_AMDSMI_LIB,\n"
    "     else the loader's search path (add /opt/rocm/lib to LD_LIBRARY_PATH or pass the full path).\n"
    "  2. Without it (not installed, no permission, driver not loaded) the amdgpu sysfs files under --root:\n"
    "     sys/class/drm/card<N>/device/ras/*_err_count, ras/gpu_vram_bad_pages, pcie_replay_count, hwmon.\n"
    "     The output's \"via\" says which was used and the notes say why the library was not.\n"
    "  Reading ras/*_err_count clears the hardware error registers (the driver keeps the totals): run one\n"
    "  reader of them per node (the agent), not a loop of this command beside it.\n"
    "\n"
    "What the findings mean (same classes as NVIDIA GPUs, docs/amd.md):\n"
    "  - HBM (UMC) uncorrectable or deferred errors: hbm_uncorrectable; on-chip blocks (GFX, SDMA, ...): gpu_sram.\n"
    "  - correctable HBM errors rising fast (needs samples over 30 min or more): hbm_sbe_aging.\n"
    "  - bad pages at the driver's bad_page_threshold: hbm_uncorrectable / rma; a page that could not be\n"
    "    reserved (F): row_remap_exhausted; pages pending (P): reset to retire them.\n"
    "  - socket / HBM thermal violation, hotspot at its critical temperature: gpu_thermal.\n"
    "  - XGMI (the NVLink-class GPU-to-GPU link) errors: nvlink_errors.  A GPU that stops enumerating: lost.\n"
    "\n"
    "Examples:\n"
    "  faultline collect amd                                           # this node, one sample\n"
    "  faultline collect amd --amdsmi-lib /opt/rocm/lib/libamd_smi.so --json > amd.jsonl\n"
    "  faultline collect amd --no-amdsmi --root /tmp/copy-of-node      # sysfs files of a copied tree only\n"
    "  faultline collect amd --count 7 --interval 300                  # half an hour: correctable-error rates\n";

}  // namespace

void AddCollectAmdCommand(CliApp& app) {
  auto args = std::make_shared<CollectAmdArgs>();
  CLI::App* cmd = app.collect->add_subcommand(
      "amd",
      "Read AMD Instinct GPUs (ECC per RAS block, bad pages, temperatures, power, throttling, XGMI, PCIe replays)\n"
      "through AMD SMI or the amdgpu sysfs files, plus the GPU and fabric detectors' findings.\n"
      "Exit code: 0 sampled, 1 a later sample read no GPU, 2 bad option or no AMD GPU reachable.");
  cmd->add_option("--root", args->root, "Filesystem root holding sys/ for the sysfs files (default /)");
  cmd->add_option("--amdsmi-lib", args->library,
                  "AMD SMI library to load (default $FAULTLINE_AMDSMI_LIB, else libamd_smi.so)");
  cmd->add_flag("--no-amdsmi", args->no_library, "Do not load AMD SMI: read the sysfs files only");
  cmd->add_flag(
      "--json", args->json,
      "One JSON object per sample and line: {time, node, via, gpu_count, observations, findings, errors, notes}");
  cmd->add_option("--interval", args->interval_s, "Seconds between samples (default 10)");
  cmd->add_option("--count", args->count, "Number of samples (default 1; rates need 2 or more)");
  cmd->add_option("--node", args->node, "Node name stamped on observations (default: the host name)");
  cmd->footer(kHelp);
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
