// A generator for realistic fake sysfs trees (PCIe + InfiniBand) of an HGX-like node,
// used by the sysfs source's tests, the fabric benchmark and the simulator. It writes
// real files under a directory, laid out like the kernel's: /sys/bus/pci/devices/<bdf>
// are relative symlinks into /sys/devices/pci<dom>:<bus>/<root port>/<switch ports>/...,
// so a collector pointed at the directory cannot tell it from a live node.
//
// Default layout (FakeSysfsOptions{}): 2 root complexes (pci0000:00, pci0000:80), each
// with 2 root ports; each root port feeds one PCIe switch (upstream port + downstream
// ports) behind a riser that carries 2 GPUs and 2 InfiniBand HCAs; the first switch also
// carries the 4 NVSwitches; one Ethernet NIC hangs directly off an extra root port of each
// root complex. GPUs and HCAs are Gen5 x16, NVSwitches Gen4 x4, IB ports ACTIVE/LinkUp at
// 400 Gb/s (4X NDR). Each IB port also has a hw_counters/ directory the collector must
// never read. Ethernet (RoCE) NICs have link_layer "Ethernet" at 200 Gb/s and their own
// hca_type/board_id.
//
// The setters rewrite the files at once (between two samples). Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline {

struct FakeSysfsOptions {
  int gpus = 8;        // spread evenly over the switches
  int nvswitches = 4;  // all under the first switch
  int ib_hcas = 8;     // spread evenly over the switches
  int eth_nics = 2;    // on extra root ports, one per root complex
  int root_complexes = 2;
  int switches_per_root_complex = 2;
  std::string ib_rate = "400 Gb/sec (4X NDR)";
  int ib_ports_per_hca = 1;  // ports 1..N under each InfiniBand HCA (all ACTIVE at ib_rate)
  // Identity files of the InfiniBand HCAs (/sys/class/infiniband/<dev>/{hca_type,board_id,
  // fw_ver}); "" leaves the file out, as some drivers do. Ethernet NICs get their own.
  std::string hca_type = "MT4129";
  std::string board_id = "MT_0000000900";
  std::string fw_ver = "28.41.1000";
};

// One PCIe function the generator created.
struct FakePcieDevice {
  std::string bdf;
  std::string role;       // "gpu", "nvswitch", "nic", "bridge", "root_port"
  std::string port_type;  // bridges: "root", "upstream", "downstream"
  std::string parent;     // upstream bridge BDF, "" for root ports
  std::string slot;       // physical slot name, "" when none
  std::string ib_device;  // "mlx5_3" for HCAs/NICs
  std::string dir;        // real directory, relative to the root ("/sys/devices/...")
};

// A fresh directory name for a fake tree: under /dev/shm when it is a writable tmpfs
// (creating ~850 small files is 10x faster there), else under $TMPDIR or /tmp. `tag`
// keeps concurrent tests apart; the caller creates and removes the directory.
std::string FakeSysfsScratchDir(std::string_view tag);

class FakeSysfsTree {
 public:
  // Writes the tree under `root_dir` (created if needed; must not already hold a tree).
  static Result<FakeSysfsTree> Create(const std::string& root_dir, const FakeSysfsOptions& options = {});

  const std::string& root() const { return root_; }
  const std::vector<FakePcieDevice>& devices() const { return devices_; }
  const FakePcieDevice* Find(std::string_view bdf) const;
  std::vector<std::string> Bdfs(std::string_view role) const;  // by role, in BDF order
  std::vector<std::string> IbDevices() const;                  // "mlx5_0", ...
  std::string RootPortOf(std::string_view bdf) const;

  // AER counters. `severity` is "correctable", "nonfatal" or "fatal"; `error` a kernel
  // counter name ("RxErr", "BadTLP", "DLP", ...). TOTAL_ERR_* and the root port's
  // aer_rootport_total_err_* follow automatically, as the kernel's do.
  Status AddAer(std::string_view bdf, std::string_view severity, std::string_view error, uint64_t delta);
  // Zeroes every AER counter of a device (as after a reboot or driver reload).
  Status ResetAer(std::string_view bdf);
  // Current link speed in GT/s (2.5, 8, 16, 32 ...) and width.
  Status SetLink(std::string_view bdf, double speed_gts, int width);

  // InfiniBand port 1 of `device` unless `port` says otherwise.
  Status SetIbCounter(std::string_view device, std::string_view counter, uint64_t value, int port = 1);
  Status AddIbCounter(std::string_view device, std::string_view counter, uint64_t delta, int port = 1);
  Status SetIbState(std::string_view device, int state, int phys_state, int port = 1);
  Status SetIbRate(std::string_view device, std::string_view rate_text, int port = 1);

  // Writes arbitrary content to a path inside the root (for garbage-content tests).
  Status WriteRaw(const std::string& path, std::string_view content) const;

 private:
  struct AerState {
    std::map<std::string, std::vector<std::pair<std::string, uint64_t>>> by_severity;
  };
  Status WriteAer(const FakePcieDevice& d);
  Status WriteIbDevice(const FakePcieDevice& d, bool eth, const FakeSysfsOptions& options);
  Status WriteRootTotals(const std::string& root_port);
  std::string IbPortDir(std::string_view device, int port) const;

  std::string root_;
  std::vector<FakePcieDevice> devices_;
  std::map<std::string, AerState> aer_;
  std::map<std::string, std::map<std::string, uint64_t>> root_totals_;  // root port -> severity -> count
  std::map<std::string, uint64_t> ib_counters_;                         // "<dev>/<port>/<counter>" -> value
};

}  // namespace faultline
