// Discovery of the PCIe devices the fabric layer cares about and the bridges above
// them. /sys/bus/pci/devices/<bdf> is a symlink into /sys/devices/pci<dom>:<bus>/...;
// the directories on the resolved path are the upstream bridges, root port first, so
// an error can be placed on the device, its switch port, the riser or the root port.
//
// Discovery reads only identity files (class, vendor, slot addresses) that never change
// while the node is up: the collector does it once and caches the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sources/sysfs/fs.h"

namespace faultline {

enum class PcieRole { kGpu, kNvswitch, kNic, kBridge, kRootPort };

// "gpu", "nvswitch", "nic", "bridge", "root_port" (the "device" key of pcie components).
std::string_view PcieRoleName(PcieRole role);

// Classifies by PCI class code (24 bits) and vendor; nullopt for devices the fabric
// layer ignores (storage, USB, ...).
std::optional<PcieRole> ClassifyPci(uint32_t class_code, uint32_t vendor);

struct PcieDevice {
  std::string bdf;  // "0000:1b:00.0"
  PcieRole role = PcieRole::kBridge;
  uint32_t class_code = 0;
  uint32_t vendor = 0;
  uint32_t device = 0;
  std::vector<std::string> upstream;  // bridges above it, root port first, parent last
  std::string port_type;              // bridges: "root", "upstream" or "downstream" (switch ports)
  std::string slot;                   // physical slot name, "" when none
  std::string sysfs_dir;              // "/sys/bus/pci/devices/<bdf>"

  const std::string* parent() const { return upstream.empty() ? nullptr : &upstream.back(); }
};

struct PcieTree {
  std::vector<PcieDevice> devices;  // endpoints of interest plus every bridge above them, sorted by BDF
  const PcieDevice* Find(std::string_view bdf) const;
};

// Scans <root>/sys/bus/pci. Per-device problems (unreadable class, dangling link) are
// appended to `errors` and that device is skipped; only an unreadable device directory
// fails the whole scan (kNotFound when the node has no PCI sysfs at all).
Result<PcieTree> ScanPcieTree(const SysfsFs& fs, std::vector<Status>& errors);

}  // namespace faultline
