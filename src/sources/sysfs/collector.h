// The sysfs fabric source: PCIe link state and AER counters for every GPU, NVSwitch,
// NIC and the bridges above them, and InfiniBand port state, rate and error counters.
// Emits Observations (layer kFabric, source kSysfs) in the shapes documented in
// docs/fabric.md; detectors compute rates from consecutive samples.
//
// Cheap and quiet by design: device discovery (ids, PCIe tree, slots, IB ports and which
// counter files exist) runs once and is cached; each sample then reads only plain
// counter and link files. It never reads `hw_counters/` or any other restricted file
// (reading some of those makes mlx5 flood the kernel log with ACCESS_REG errors).
//
// Errors: a missing, unreadable or garbled file becomes one Status in the sample's
// `errors` naming the file; the rest of the sample is still produced. A counter the
// kernel prints as "N/A (no PMA)" is skipped without an error (the HCA does not answer
// performance queries; nothing is wrong with the file).
//
// Identity keys that let detectors compare siblings without a topology file: IB ports
// carry `model` (hca_type or PCI id), `board_id`, `fw_ver`, `link_layer`; PCIe functions
// carry `pci_id` ("10de:2330"). A counter read at its maximum (IbCounterSaturated) gets
// attrs `saturated` = "true" and `counter_max`.
// Thread-compatible: one collector per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/types.h"
#include "parse/topology.h"
#include "sources/sysfs/fs.h"
#include "sources/sysfs/pcie_tree.h"

namespace faultline {

struct SysfsOptions {
  std::string node;        // node name put on every observation; default "" (unknown)
  bool pcie = true;        // read /sys/bus/pci
  bool infiniband = true;  // read /sys/class/infiniband
  // Emit per-error AER lines ("RxErr", "BadTLP", ...) only when non-zero; the TOTAL_*
  // lines are always emitted. Keeps a sample small (about 70 lines per device otherwise).
  bool aer_nonzero_only = true;
};

struct SysfsSample {
  int64_t time_ns = 0;
  std::vector<Observation> observations;
  std::vector<Status> errors;  // one per file that could not be read or parsed
};

// One discovered InfiniBand port (cached).
struct IbPortInfo {
  std::string device;  // "mlx5_0"
  int port = 1;
  std::string dir;                    // "/sys/class/infiniband/mlx5_0/ports/1"
  std::string bdf;                    // the HCA's PCI address when known
  std::string link_layer;             // "InfiniBand" / "Ethernet" when known
  std::string model;                  // hca_type ("MT4129"), else the HCA's PCI id ("15b3:1021"), else ""
  std::string board_id;               // board_id ("MT_0000000838") when present
  std::string fw_ver;                 // fw_ver when present
  std::vector<std::string> counters;  // counter file names present under counters/
};

class SysfsCollector {
 public:
  // `fs` and `clock` (and `topology`, optional) must outlive the collector.
  SysfsCollector(const SysfsFs& fs, const Clock& clock, SysfsOptions options, const Topology* topology = nullptr);

  // Reads one sample. Discovers devices on the first call (and after Rescan()).
  SysfsSample Collect();
  // Forgets the cached discovery (after hotplug or a driver reload).
  void Rescan() { discovered_ = false; }

  const PcieTree& tree() const { return tree_; }
  const std::vector<IbPortInfo>& ib_ports() const { return ib_ports_; }

 private:
  // Never-changing per-device facts, parallel to tree_.devices.
  struct LinkMax {
    double speed = 0;  // the link's max: min of this device's and its parent's max
    int width = 0;
    double device_speed = 0;  // this device's own max
    int device_width = 0;
  };

  void Discover(std::vector<Status>& errors);
  void DiscoverIb(std::vector<Status>& errors);
  ComponentRef PcieRef(const PcieDevice& d) const;
  ComponentRef IbRef(const IbPortInfo& p) const;
  LinkMax ReadLinkMax(const PcieDevice& d, std::vector<Status>& errors) const;
  void CollectLink(const PcieDevice& d, SysfsSample& s) const;
  void CollectAer(const PcieDevice& d, SysfsSample& s) const;
  void CollectIb(const IbPortInfo& p, SysfsSample& s) const;
  Observation Make(const ComponentRef& ref, ObsKind kind, double value, std::string raw, int64_t t) const;

  const SysfsFs& fs_;
  const Clock& clock_;
  SysfsOptions options_;
  const Topology* topology_;
  bool discovered_ = false;
  PcieTree tree_;
  std::vector<ComponentRef> pcie_refs_;
  std::vector<LinkMax> link_max_;
  std::vector<IbPortInfo> ib_ports_;
};

}  // namespace faultline
