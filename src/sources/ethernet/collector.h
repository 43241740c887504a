// The RoCE / Ethernet fabric source (docs/ethernet.md). Emits Observations (layer
// kFabric, source kSysfs) for
//  - every RDMA port whose link layer is Ethernet, `roce/<dev>/<port>`: the RoCE
//    hw_counters (CNPs, ECN marks, out-of-sequence, sequence errors, ACK timeouts,
//    adaptive retransmissions, slow restarts; mlx5 and bnxt_re names) as kRoceCounter;
//  - every physical Ethernet interface, `eth/<if>`: operstate/carrier (kEthLinkState),
//    negotiated speed (kEthSpeed, Gb/s, with the expected rate when the topology gives
//    one), carrier changes, sysfs statistics and the driver's ethtool statistics (PFC
//    pauses per priority, PHY CRC/symbol errors, link-down events, discards) as kEthCounter.
// Readings carry the driver's name in `counter` (what names the series), the canonical
// name in `canonical`, the group (congestion/loss/link/host_drain) in `group`, and the PFC
// priority in `priority`. Detectors work on deltas (counters are cumulative).
//
// Cost: the hw_counters are read on their own, slower schedule (`rdma_interval_ns`) and at
// a bounded rate: at most `rdma_max_ports_per_sample` ports per Collect(), oldest first,
// each port's files in one burst (one driver refresh serves the burst: the kernel caches
// the port's stats for `lifespan` ms). A file that fails with anything but "absent" is
// never read again until Rescan() (on restricted mlx5 functions every read fails in
// firmware and floods the kernel log; SIGNALS-ethernet-amd A3). cost() says what the
// reads took. Interface files are plain sysfs/ethtool reads, every sample.
//
// Paths are inside `fs` (a RootFs under --root in the CLI, the fake tree in tests); names
// read from directories are checked (IsSafeInterfaceName / IsSafeRdmaName) before they
// become part of a path. Thread-compatible: one collector per thread.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/types.h"
#include "parse/topology.h"
#include "sources/ethernet/ethtool_stats.h"
#include "sources/sysfs/fs.h"

namespace faultline {

struct EthernetOptions {
  std::string node;                           // stamped on every observation
  int64_t rdma_interval_ns = 30'000'000'000;  // a port's hw_counters at most this often
  size_t rdma_max_ports_per_sample = 4;       // ... and at most this many ports per sample
  bool ethtool = true;                        // read the driver statistics
};

struct EthernetCost {
  uint64_t port_reads = 0;  // bursts (one port's hw_counters)
  uint64_t file_reads = 0;
  int64_t total_ns = 0;     // wall time spent reading hw_counters
  int64_t max_port_ns = 0;  // the slowest burst
};

struct EthernetSample {
  int64_t time_ns = 0;
  std::vector<Observation> observations;
  std::vector<Status> errors;
  size_t rdma_ports_read = 0;  // hw_counters bursts in this sample (the bound above)
};

struct RocePortInfo {
  std::string device;  // "mlx5_0"
  int port = 1;
  std::string dir;  // "/sys/class/infiniband/mlx5_0/ports/1"
  std::string bdf;
  std::string model;                  // hca_type, else ""
  std::string netdev;                 // "eth2" when known
  std::vector<std::string> counters;  // allowlisted hw_counters files present
  std::set<std::string> disabled;     // files that failed: not read again
  int64_t last_read_ns = -1;          // clock time of the last burst
};

struct EthInterfaceInfo {
  std::string name;  // "eth2"
  std::string bdf;
  std::string model;        // the RDMA device's hca_type, else the PCI vendor:device, else ""
  std::string rdma_device;  // the RoCE port behind it, when there is one
  int rdma_port = 0;
};

class EthernetCollector {
 public:
  // `fs`, `ethtool`, `clock` (and `topology`, optional) must outlive the collector.
  EthernetCollector(const SysfsFs& fs, const EthtoolStats& ethtool, const Clock& clock, EthernetOptions options,
                    const Topology* topology = nullptr);

  EthernetSample Collect();
  void Rescan() { discovered_ = false; }

  const std::vector<RocePortInfo>& roce_ports() const { return roce_; }
  const std::vector<EthInterfaceInfo>& interfaces() const { return ifaces_; }
  const EthernetCost& cost() const { return cost_; }

 private:
  void Discover(std::vector<Status>& errors);
  void DiscoverRdma(std::vector<Status>& errors);
  void DiscoverInterfaces(std::vector<Status>& errors);
  ComponentRef RoceRef(const RocePortInfo& p) const;
  ComponentRef EthRef(const EthInterfaceInfo& i) const;
  const TopoIbPort* TopoFor(const std::string& device, int port, const std::string& netdev) const;
  void CollectInterface(const EthInterfaceInfo& i, EthernetSample& s) const;
  void CollectRoce(RocePortInfo& p, EthernetSample& s);
  Observation Make(const ComponentRef& ref, ObsKind kind, double value, std::string raw, int64_t t) const;

  const SysfsFs& fs_;
  const EthtoolStats& ethtool_;
  const Clock& clock_;
  EthernetOptions options_;
  const Topology* topology_;
  bool discovered_ = false;
  std::vector<RocePortInfo> roce_;
  std::vector<EthInterfaceInfo> ifaces_;
  EthernetCost cost_;
};

}  // namespace faultline
