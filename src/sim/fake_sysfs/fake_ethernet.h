// The Ethernet / RoCE half of a fake sysfs tree (tests, benchmark, simulator): turns some
// RDMA devices of a FakeSysfsTree into RoCE NICs and writes what the ethernet source reads:
//   /sys/class/infiniband/<dev>/ports/1/{link_layer=Ethernet, rate, gid_attrs/ndevs/0,
//                                        hw_counters/<name>}
//   /sys/class/net/<if>/{device -> the NIC's PCI directory, type=1, operstate, carrier,
//                        speed, carrier_changes, carrier_down_count, statistics/<name>,
//                        ethtool_stats}
// `ethtool_stats` ("name: value" lines) is the test double of the SIOCETHTOOL statistics
// (sources/ethernet/ethtool_stats.h FileEthtoolStats); no kernel writes such a file.
// Files are replaced atomically (written aside, renamed), so a reader in another process
// never sees half a file. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline {

struct FakeRoceNic {
  std::string device;   // "mlx5_3"
  std::string netdev;   // "eth3"
  std::string pci_dir;  // "/sys/devices/..." of its PCI function
};

class FakeEthernet {
 public:
  // Makes each `device` of `tree` a RoCE NIC with netdev `netdevs[i]`: link up at
  // `speed_mbps`, every counter at zero. The tree must outlive this object.
  static Result<FakeEthernet> Create(const FakeSysfsTree& tree, const std::vector<std::string>& devices,
                                     const std::vector<std::string>& netdevs, int64_t speed_mbps = 400000);

  const std::vector<FakeRoceNic>& nics() const { return nics_; }

  // By NIC index (the order given to Create).
  Status SetOperstate(size_t nic, const std::string& operstate);             // carrier follows (up = 1)
  Status SetSpeed(size_t nic, int64_t mbps);                                 // also the RDMA port's rate
  Status SetCarrierChanges(size_t nic, uint64_t changes);                    // and carrier_down_count = changes / 2
  Status SetStatistic(size_t nic, const std::string& name, uint64_t value);  // statistics/<name>
  Status SetHwCounter(size_t nic, const std::string& name, uint64_t value);
  // Replaces the whole ethtool statistics file.
  Status SetEthtool(size_t nic, const std::map<std::string, uint64_t>& stats);

 private:
  explicit FakeEthernet(std::string root) : root_(std::move(root)) {}
  Status Write(const std::string& path, const std::string& content) const;
  std::string NetDir(size_t nic) const { return "/sys/class/net/" + nics_.at(nic).netdev; }
  std::string PortDir(size_t nic) const { return "/sys/class/infiniband/" + nics_.at(nic).device + "/ports/1"; }

  std::string root_;
  std::vector<FakeRoceNic> nics_;
};

}  // namespace faultline
