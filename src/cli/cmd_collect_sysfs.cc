// `faultline collect sysfs` and `faultline collect fabric`: read the PCIe and InfiniBand
// sysfs counters (under --root, "/" by default) once or --count times, run the fabric
// detectors over the samples, and print observations plus findings: tables by default,
// one JSON object per sample with --json. Rates need two samples (--count 2 or more).
// `fabric` also takes the operator's topology file to name switch ports, cables and risers.
// Exit code: 0 sampled, 1 nothing could be read, 2 bad option / unreadable topology.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cli/collect_util.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/time.h"
#include "engine/detect/fabric_detectors.h"
#include "parse/topology.h"
#include "sources/sysfs/collector.h"

namespace faultline::cli {
namespace {

struct CollectSysfsArgs {
  std::string root = "/";
  std::string topology;
  std::string node;
  bool json = false;
  double interval_s = 10;
  int count = 1;
};

// One table row per component, folded from its observations.
struct Row {
  std::map<std::string, std::string> cells;
};

void RenderPcie(std::ostream& out, const std::vector<Observation>& obs) {
  std::map<std::string, Row> rows;
  for (const Observation& o : obs) {
    if (o.component.type != ComponentType::kPcie || !o.value) continue;
    Row& r = rows[o.component.name];
    r.cells["role"] = MapValue(o.component.keys, "device");
    r.cells["slot"] = MapValue(o.component.keys, "slot");
    r.cells["riser"] = MapValue(o.component.keys, "riser");
    if (o.kind == ObsKind::kPcieLinkSpeed) r.cells["speed"] = FormatNumber(*o.value) + "/" + MapValue(o.attrs, "max");
    if (o.kind == ObsKind::kPcieLinkWidth)
      r.cells["width"] = "x" + FormatNumber(*o.value) + "/x" + MapValue(o.attrs, "max");
    const std::string err = MapValue(o.attrs, "error");
    if (err == "TOTAL_ERR_COR") r.cells["cor"] = FormatNumber(*o.value);
    if (err == "TOTAL_ERR_NONFATAL") r.cells["nonfatal"] = FormatNumber(*o.value);
    if (err == "TOTAL_ERR_FATAL") r.cells["fatal"] = FormatNumber(*o.value);
  }
  char line[256];
  std::snprintf(line, sizeof(line), "%-14s %-10s %-5s %-10s %-11s %-8s %-8s %-8s %s\n", "pcie", "device", "slot",
                "GT/s", "width", "aer_cor", "nonfatal", "fatal", "riser");
  out << line;
  for (auto& [bdf, row] : rows) {
    auto& r = row;  // lambdas cannot capture structured bindings under clang 14
    auto c = [&](const char* k) { return r.cells.count(k) && !r.cells[k].empty() ? r.cells[k] : std::string("-"); };
    std::snprintf(line, sizeof(line), "%-14s %-10s %-5s %-10s %-11s %-8s %-8s %-8s %s\n", bdf.c_str(),
                  c("role").c_str(), c("slot").c_str(), c("speed").c_str(), c("width").c_str(), c("cor").c_str(),
                  c("nonfatal").c_str(), c("fatal").c_str(), c("riser").c_str());
    out << line;
  }
}

void RenderIb(std::ostream& out, const std::vector<Observation>& obs) {
  std::map<std::string, Row> rows;
  for (const Observation& o : obs) {
    if (o.component.type != ComponentType::kIb || !o.value) continue;
    Row& r = rows[o.component.name];
    r.cells["cable"] = MapValue(o.component.keys, "cable");
    if (!MapValue(o.component.keys, "switch").empty()) {
      r.cells["switch"] = MapValue(o.component.keys, "switch") + ":" + MapValue(o.component.keys, "switch_port");
    }
    if (o.kind == ObsKind::kIbPortState)
      r.cells["state"] = MapValue(o.attrs, "state") + "/" + MapValue(o.attrs, "phys_state");
    if (o.kind == ObsKind::kIbRate) r.cells["rate"] = FormatNumber(*o.value);
    if (o.kind == ObsKind::kIbSymbolError) r.cells["symbol"] = FormatNumber(*o.value);
    if (o.kind == ObsKind::kIbLinkDowned) r.cells["downed"] = FormatNumber(*o.value);
    if (o.kind == ObsKind::kIbLinkErrorRecovery) r.cells["recovery"] = FormatNumber(*o.value);
  }
  if (rows.empty()) return;
  char line[256];
  std::snprintf(line, sizeof(line), "%-12s %-18s %-6s %-8s %-8s %-8s %-16s %s\n", "ib", "state", "Gb/s", "symbol",
                "recovery", "downed", "switch", "cable");
  out << line;
  for (auto& [name, row] : rows) {
    auto& r = row;  // lambdas cannot capture structured bindings under clang 14
    auto c = [&](const char* k) { return r.cells.count(k) && !r.cells[k].empty() ? r.cells[k] : std::string("-"); };
    std::snprintf(line, sizeof(line), "%-12s %-18s %-6s %-8s %-8s %-8s %-16s %s\n", name.c_str(), c("state").c_str(),
                  c("rate").c_str(), c("symbol").c_str(), c("recovery").c_str(), c("downed").c_str(),
                  c("switch").c_str(), c("cable").c_str());
    out << line;
  }
}

Json SampleJson(const SysfsSample& s, const std::string& node, const std::vector<Finding>& findings) {
  Json errors = Json::array();
  for (const Status& e : s.errors) errors.push_back({{"code", StatusCodeName(e.code())}, {"message", e.message()}});
  return Json{{"time", FormatIso8601(s.time_ns)}, {"time_ns", s.time_ns}, {"node", node},
              {"observations", s.observations},   {"findings", findings}, {"errors", errors}};
}

int Run(const CollectSysfsArgs& args, const char* name) {
  if (args.count < 1 || !(args.interval_s > 0)) {
    std::cerr << "faultline collect " << name << ": --count must be >= 1 and --interval > 0\n";
    return kExitUsage;
  }
  std::unique_ptr<Topology> topology;
  if (!args.topology.empty()) {
    auto t = LoadTopologyFile(args.topology);
    if (!t.ok()) {
      std::cerr << "faultline collect " << name << ": " << t.status().message() << "\n";
      return kExitUsage;
    }
    topology = std::make_unique<Topology>(std::move(*t));
  }
  const std::string node = args.node.empty() ? HostNameOr("localhost") : args.node;
  RootFs fs(args.root);
  SystemClock clock;
  SysfsCollector collector(fs, clock, SysfsOptions{node}, topology.get());
  auto detectors = MakeFabricDetectors(FabricOptions{}, topology.get());
  int rc = kExitOk;
  for (int i = 0; i < args.count; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(args.interval_s));
    SysfsSample s = collector.Collect();
    if (s.observations.empty() && !s.errors.empty()) rc = kExitFailure;
    std::vector<Finding> findings;
    for (auto& d : detectors) {
      for (const Observation& o : s.observations) d->Observe(o);
      for (Finding& f : d->Findings()) findings.push_back(std::move(f));
    }
    if (args.json) {
      std::cout << SampleJson(s, node, findings).dump() << std::endl;
      continue;
    }
    std::cout << FormatIso8601(s.time_ns) << "  node " << node << "  root " << args.root << "  "
              << s.observations.size() << " observations, " << s.errors.size() << " file error(s)\n";
    RenderPcie(std::cout, s.observations);
    RenderIb(std::cout, s.observations);
    for (const Status& e : s.errors) std::cout << "error: " << e.ToString() << "\n";
    if (!findings.empty()) RenderFindings(std::cout, findings);
    std::cout << std::flush;
  }
  return rc;
}

void AddOptions(CLI::App* cmd, CollectSysfsArgs& args) {
  cmd->add_option("--root", args.root, "Filesystem root holding sys/ (default /; a fake tree in tests)");
  cmd->add_flag("--json", args.json,
                "One JSON object per sample and line: {time, node, observations, findings, errors}");
  cmd->add_option("--interval", args.interval_s, "Seconds between samples (default 10)");
  cmd->add_option("--count", args.count, "Number of samples (default 1; rates need 2 or more)");
  cmd->add_option("--node", args.node, "Node name stamped on observations (default: the host name)");
}

constexpr char kOneSampleHelp[] =
    "What one sample (the default) already tells, with no history and no topology file:\n"
    "  - InfiniBand ports not ACTIVE now (DOWN/Polling, Disabled, INIT): ib_link_down, \"since unknown\".\n"
    "    A warning when the topology lists the port or sibling ports of the same HCA model are ACTIVE;\n"
    "    an info note when nothing says it should be cabled. The agent upgrades it to critical once\n"
    "    it has seen the port down for 2 minutes.\n"
    "  - Ports slower than most of their siblings (same link layer, HCA model and board: 7 at 400 Gb/s,\n"
    "    one at 200), and PCIe links below their max or below functions with the same PCI id.\n"
    "  - Counters pegged at their maximum (link_downed 255, symbol_error 65535, 2^32-1): rate unknown.\n"
    "  Ethernet (RoCE) ports are compared only with Ethernet siblings and never held to InfiniBand rates.\n"
    "Error rates (symbol errors/min, AER storms, flaps) need two samples or more: --count 2 --interval 30.\n"
    "\n"
    "Examples:\n"
    "  faultline collect sysfs                          # this node, one sample, tables + findings\n"
    "  faultline collect sysfs --count 3 --interval 20  # rates over 40 s\n"
    "  faultline collect sysfs --json > fabric.jsonl    # a snapshot `faultline diagnose` reads later\n"
    "  faultline collect sysfs --root /tmp/copy-of-node # a copied or fake tree holding sys/\n";

}  // namespace

void AddCollectSysfsCommand(CliApp& app) {
  auto sysfs = std::make_shared<CollectSysfsArgs>();
  CLI::App* cmd = app.collect->add_subcommand(
      "sysfs",
      "Read PCIe (link speed/width, AER counters, slots, upstream bridges) and InfiniBand (state, rate, error\n"
      "counters) from sysfs, plus the fabric detectors' findings. An InfiniBand counter pegged at its maximum at\n"
      "the same value on every port of a link layer (2 or more; a driver/firmware baseline) is one info note\n"
      "(fault class none, quirk=true) instead of an ib_link_errors finding per port; a port whose counter moves\n"
      "off that value is judged on its own.\n"
      "Exit code: 0 sampled, 1 nothing could be read, 2 bad option.");
  AddOptions(cmd, *sysfs);
  cmd->footer(kOneSampleHelp);
  cmd->callback([sysfs, &app] { app.exit_code = Run(*sysfs, "sysfs"); });

  auto fabric = std::make_shared<CollectSysfsArgs>();
  CLI::App* fab = app.collect->add_subcommand(
      "fabric",
      "Like `collect sysfs`, with the operator's topology file (docs/topology.md) so findings name the switch\n"
      "port, cable and riser. Exit code: 0 sampled, 1 nothing could be read, 2 bad option or topology file.");
  AddOptions(fab, *fabric);
  fab->add_option("--topology", fabric->topology, "Topology file (JSON, docs/topology.md)");
  fab->footer(std::string(kOneSampleHelp) +
              "  faultline collect fabric --topology /etc/faultline/topology.json   # names cables and switch ports\n");
  fab->callback([fabric, &app] { app.exit_code = Run(*fabric, "fabric"); });
}

}  // namespace faultline::cli
