// `faultline collect ethernet`: read the RoCE / Ethernet fabric once (or --count times):
// RDMA ports whose link layer is Ethernet (their RoCE hw_counters), every physical
// Ethernet interface (operstate, carrier, speed, carrier changes, sysfs statistics) and
// the drivers' ethtool statistics (PFC pauses per priority, PHY CRC/symbol errors,
// link-down events), then the RoCE detector over the samples: congestion vs link faults.
// Under / the ethtool statistics come from the kernel through the SIOCETHTOOL ioctl; with
// --root DIR every file is read under DIR and the statistics from DIR's
// sys/class/net/<if>/ethtool_stats files (a copied or fake tree: the ioctl can only ask the
// running kernel). Exit code: 0 sampled, 1 nothing could be read, 2 bad option / topology.
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
#include "engine/detect/fabric_roce.h"
#include "parse/topology.h"
#include "sources/ethernet/collector.h"
#include "sources/ethernet/ethtool_stats.h"

namespace faultline::cli {
namespace {

struct CollectEthernetArgs {
  std::string root = "/";
  std::string topology;
  std::string node;
  bool json = false;
  double interval_s = 10;
  int count = 1;
  int rdma_max_ports = 64;
  bool no_ethtool = false;
};

// One row per interface / RoCE port: the readings an operator looks at first.
void RenderTable(std::ostream& out, const std::vector<Observation>& obs) {
  std::map<std::string, std::map<std::string, std::string>> rows;
  for (const Observation& o : obs) {
    if (!o.value) continue;
    auto& r = rows[o.component.Id()];
    for (const char* k : {"netdev", "rdma_device", "switch", "switch_port", "cable"}) {
      if (const std::string v = MapValue(o.component.keys, k); !v.empty()) r[k] = v;
    }
    const std::string canonical = MapValue(o.attrs, "canonical");
    if (o.kind == ObsKind::kEthLinkState) r["state"] = MapValue(o.attrs, "operstate");
    if (o.kind == ObsKind::kEthSpeed) {
      r["speed"] =
          FormatNumber(*o.value) + (MapValue(o.attrs, "expected").empty() ? "" : "/" + MapValue(o.attrs, "expected"));
    }
    if (canonical == "carrier_changes") r["flaps"] = FormatNumber(*o.value);
    if (canonical == "rx_crc_errors_phy" || (canonical == "rx_crc_errors" && !r.count("crc")))
      r["crc"] = FormatNumber(*o.value);
    if (canonical == "rx_prio_pause")
      r["pause"] = FormatNumber(std::stod(r.count("pause") ? r["pause"] : "0") + *o.value);
    if (canonical == "np_cnp_sent") r["cnp"] = FormatNumber(*o.value);
    if (canonical == "np_ecn_marked_roce_packets") r["ecn"] = FormatNumber(*o.value);
    if (canonical == "out_of_sequence") r["oos"] = FormatNumber(*o.value);
    if (canonical == "local_ack_timeout_err") r["ack_to"] = FormatNumber(*o.value);
  }
  if (rows.empty()) {
    out << "no RoCE port or physical Ethernet interface found\n";
    return;
  }
  char line[320];
  const char* fmt = "%-16s %-6s %-9s %-6s %-8s %-10s %-10s %-10s %-8s %-8s %s\n";
  std::snprintf(line, sizeof(line), fmt, "component", "state", "Gb/s", "flaps", "crc", "pfc_pause", "ecn", "cnp_sent",
                "oos", "ack_to", "switch:port cable");
  out << line;
  for (auto& [id, row] : rows) {
    auto& r = row;  // lambdas cannot capture structured bindings under clang 14
    auto c = [&](const char* k) { return r.count(k) && !r[k].empty() ? r[k] : std::string("-"); };
    const std::string where = r.count("switch") ? r["switch"] + ":" + c("switch_port") + " " + c("cable") : "-";
    std::snprintf(line, sizeof(line), fmt, id.c_str(), c("state").c_str(), c("speed").c_str(), c("flaps").c_str(),
                  c("crc").c_str(), c("pause").c_str(), c("ecn").c_str(), c("cnp").c_str(), c("oos").c_str(),
                  c("ack_to").c_str(), where.c_str());
    out << line;
  }
}

Json CostJson(const EthernetCost& c) {
  return Json{{"rdma_port_reads", c.port_reads},
              {"rdma_file_reads", c.file_reads},
              {"rdma_read_ns_total", c.total_ns},
              {"rdma_read_ns_max_port", c.max_port_ns}};
}

int Run(const CollectEthernetArgs& args) {
  if (args.count < 1 || !(args.interval_s > 0) || args.rdma_max_ports < 1) {
    std::cerr << "faultline collect ethernet: --count and --rdma-max-ports must be >= 1 and --interval > 0\n";
    return kExitUsage;
  }
  std::unique_ptr<Topology> topology;
  if (!args.topology.empty()) {
    auto t = LoadTopologyFile(args.topology);
    if (!t.ok()) {
      std::cerr << "faultline collect ethernet: " << t.status().message() << "\n";
      return kExitUsage;
    }
    topology = std::make_unique<Topology>(std::move(*t));
  }
  const std::string node = args.node.empty() ? HostNameOr("localhost") : args.node;
  RootFs fs(args.root);
  IoctlEthtoolStats ioctl_stats;
  FileEthtoolStats file_stats(fs);
  const bool live = args.root == "/" || args.root.empty();
  const EthtoolStats& ethtool = live ? static_cast<const EthtoolStats&>(ioctl_stats) : file_stats;
  SystemClock clock;
  // Here the operator chose the pace: every sample reads every port's hw_counters (the
  // interval is theirs), still at most --rdma-max-ports ports per sample.
  EthernetOptions options{.node = node,
                          .rdma_interval_ns = 0,
                          .rdma_max_ports_per_sample = static_cast<size_t>(args.rdma_max_ports),
                          .ethtool = !args.no_ethtool};
  EthernetCollector collector(fs, ethtool, clock, options, topology.get());
  RoceOptions roce;
  RoceFabricDetector detector(roce, topology.get());
  int rc = kExitOk;
  for (int i = 0; i < args.count; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(args.interval_s));
    EthernetSample s = collector.Collect();
    if (s.observations.empty() && !s.errors.empty()) rc = kExitFailure;
    for (const Observation& o : s.observations) detector.Observe(o);
    const std::vector<Finding> findings = detector.Findings();
    if (args.json) {
      Json errors = Json::array();
      for (const Status& e : s.errors) errors.push_back({{"code", StatusCodeName(e.code())}, {"message", e.message()}});
      std::cout << Json{{"time", FormatIso8601(s.time_ns)},
                        {"time_ns", s.time_ns},
                        {"node", node},
                        {"ethtool", live ? "ioctl" : "file"},
                        {"roce_ports", collector.roce_ports().size()},
                        {"interfaces", collector.interfaces().size()},
                        {"cost", CostJson(collector.cost())},
                        {"observations", s.observations},
                        {"findings", findings},
                        {"errors", errors}}
                       .dump()
                << std::endl;
      continue;
    }
    std::cout << FormatIso8601(s.time_ns) << "  node " << node << "  root " << args.root << "  "
              << collector.roce_ports().size() << " RoCE port(s), " << collector.interfaces().size()
              << " interface(s), " << s.observations.size() << " observations, " << s.errors.size()
              << " error(s); hw_counters: " << s.rdma_ports_read << " port(s) read, "
              << FormatNumber(static_cast<double>(collector.cost().total_ns) / 1e6) << " ms in all so far\n";
    RenderTable(std::cout, s.observations);
    for (const Status& e : s.errors) std::cout << "error: " << e.ToString() << "\n";
    if (!findings.empty()) RenderFindings(std::cout, findings);
    std::cout << std::flush;
  }
  return rc;
}

constexpr char kHelp[] =
    "What it reads (docs/ethernet.md):\n"
    "  roce/<dev>/<port>  an RDMA port whose link_layer is Ethernet: hw_counters np_ecn_marked_roce_packets,\n"
    "                     np_cnp_sent, rp_cnp_handled, out_of_sequence, packet_seq_err, local_ack_timeout_err,\n"
    "                     roce_adp_retrans, roce_slow_restart, ... (mlx5; bnxt_re names map onto them).\n"
    "                     Reading them can cost a firmware command: the agent reads them on their own slower\n"
    "                     schedule ([ethernet] rdma_interval, rdma_max_ports); here every sample reads them.\n"
    "  eth/<if>           a physical Ethernet interface: operstate, carrier, speed (vs the topology's expected\n"
    "                     rate or its sibling ports), carrier_changes, statistics/rx_crc_errors, and the driver's\n"
    "                     ethtool statistics: rx_prio<p>_pause[_duration], rx_crc_errors_phy, rx_symbol_err_phy,\n"
    "                     link_down_events_phy, rx_discards_phy ... (SIOCETHTOOL ioctl; no `ethtool` is run).\n"
    "What it tells apart (rates need --count 2 or more):\n"
    "  fabric_congestion  PFC pause storms, ECN/CNP surges with no loss: the traffic or the fabric, not a part\n"
    "                     of this node (action monitor: never replace hardware for it).\n"
    "  ib_link_errors     CRC/symbol errors, retransmissions, sequence errors, ACK timeouts, a speed below the\n"
    "  ib_link_down       expected one (400G -> 200G), carrier flaps, a port down: names the NIC port and, with\n"
    "                     --topology, the cable and the switch port.\n"
    "One sample already shows ports slower than their siblings or than the topology's expected rate.\n"
    "\n"
    "Examples:\n"
    "  faultline collect ethernet                                  # this node, one sample\n"
    "  faultline collect ethernet --count 3 --interval 10 --json   # rates over 20 s, JSON lines\n"
    "  faultline collect ethernet --topology /etc/faultline/topology.json   # names cables and switch ports\n"
    "  faultline collect ethernet --root /tmp/copy-of-node         # a copied or fake tree holding sys/\n";

}  // namespace

void AddCollectEthernetCommand(CliApp& app) {
  auto args = std::make_shared<CollectEthernetArgs>();
  CLI::App* cmd = app.collect->add_subcommand(
      "ethernet",
      "Read the RoCE / Ethernet fabric (RDMA hw_counters of Ethernet ports, interface state/speed/errors, PFC and\n"
      "PHY statistics via the ethtool ioctl) and tell congestion from link faults.\n"
      "Exit code: 0 sampled, 1 nothing could be read, 2 bad option or topology file.");
  cmd->add_option("--root", args->root,
                  "Filesystem root holding sys/ (default /: the live kernel, ethtool statistics by ioctl; any other\n"
                  "root: its sys/class/net/<if>/ethtool_stats files)");
  cmd->add_flag("--json", args->json,
                "One JSON object per sample and line: {time, node, cost, observations, findings, errors}");
  cmd->add_option("--interval", args->interval_s, "Seconds between samples (default 10)");
  cmd->add_option("--count", args->count, "Number of samples (default 1; rates need 2 or more)");
  cmd->add_option("--node", args->node, "Node name stamped on observations (default: the host name)");
  cmd->add_option("--topology", args->topology, "Topology file (docs/topology.md): cables and switch ports");
  cmd->add_option("--rdma-max-ports", args->rdma_max_ports, "At most this many RoCE ports' hw_counters per sample");
  cmd->add_flag("--no-ethtool", args->no_ethtool, "Skip the driver statistics (sysfs files only)");
  cmd->footer(kHelp);
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
