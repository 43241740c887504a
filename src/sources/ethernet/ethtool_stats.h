// The driver statistics of an Ethernet interface (ETH_SS_STATS: rx_prio3_pause,
// rx_crc_errors_phy, link_down_events_phy, ...) behind a small interface, so the collector
// never knows where they came from:
//  - IoctlEthtoolStats: the kernel, through the SIOCETHTOOL ioctl on an AF_INET datagram
//    socket (ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS for the names,
//    ETHTOOL_GSTATS for the values). No `ethtool` program is run or parsed.
//  - FileEthtoolStats: a statistics file per interface inside a (fake or copied) tree,
//    `<root>/sys/class/net/<if>/ethtool_stats` ("name: value" lines). Not a kernel file:
//    the simulator and tests write it, and `collect ethernet --root DIR` reads it, because
//    the ioctl can only ever ask the running kernel.
//
// Contract: Read() returns the statistics or a Status; an interface without driver
// statistics (lo, a bridge, a veth) is kUnsupported, an absent interface kNotFound.
// Never throws; any name the kernel returns is checked (IsPlausibleStatName) before it is
// kept. Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sources/ethernet/eth_parse.h"
#include "sources/sysfs/fs.h"

namespace faultline {

class EthtoolStats {
 public:
  virtual ~EthtoolStats() = default;
  virtual Result<std::vector<EthtoolStat>> Read(const std::string& interface) const = 0;
};

class IoctlEthtoolStats final : public EthtoolStats {
 public:
  Result<std::vector<EthtoolStat>> Read(const std::string& interface) const override;
};

class FileEthtoolStats final : public EthtoolStats {
 public:
  explicit FileEthtoolStats(const SysfsFs& fs) : fs_(fs) {}
  Result<std::vector<EthtoolStat>> Read(const std::string& interface) const override;
  static std::string PathFor(const std::string& interface) { return "/sys/class/net/" + interface + "/ethtool_stats"; }

 private:
  const SysfsFs& fs_;
};

}  // namespace faultline
