#include "sources/sysfs/pcie_tree.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/inventory.h"
#include "parse/text.h"
#include "sources/sysfs/counter_parse.h"

namespace faultline {
namespace {

constexpr uint32_t kNvidia = 0x10de;
constexpr char kDevicesDir[] = "/sys/bus/pci/devices";
constexpr char kSlotsDir[] = "/sys/bus/pci/slots";

struct Raw {
  std::string bdf;
  uint32_t class_code = 0, vendor = 0, device = 0;
  std::vector<std::string> upstream;
};

std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) parts.emplace_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

// The BDFs on a resolved device path: /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0
// gives {0000:00:01.0, 0000:01:00.0}; the last one is the device itself.
std::vector<std::string> BdfsOnPath(std::string_view real) {
  std::vector<std::string> out;
  for (const std::string& part : Split(real)) {
    if (std::string bdf = NormalizeBdf(part); !bdf.empty() && bdf == part) out.push_back(bdf);
  }
  return out;
}

Result<uint32_t> ReadId(const SysfsFs& fs, const std::string& dir, const char* file) {
  auto text = fs.ReadFile(dir + "/" + file, kMaxAttrBytes);
  if (!text.ok()) return text.status();
  auto v = ParsePciId(*text);
  if (!v.ok()) return Status(v.status().code(), dir + "/" + file + ": " + v.status().message());
  return v;
}

std::optional<Raw> ReadRaw(const SysfsFs& fs, const std::string& name, std::vector<Status>& errors) {
  const std::string dir = std::string(kDevicesDir) + "/" + name;
  auto real = fs.RealPath(dir);
  if (!real.ok()) {
    errors.push_back(real.status());
    return std::nullopt;
  }
  Raw raw;
  raw.bdf = NormalizeBdf(name);
  std::vector<std::string> chain = BdfsOnPath(*real);
  if (raw.bdf.empty() || chain.empty() || chain.back() != raw.bdf) {
    errors.push_back(Status(StatusCode::kCorrupt, dir + ": not a PCI device path (" + *real + ")"));
    return std::nullopt;
  }
  chain.pop_back();
  raw.upstream = std::move(chain);
  auto cls = ReadId(fs, dir, "class");
  auto vendor = ReadId(fs, dir, "vendor");
  if (!cls.ok() || !vendor.ok()) {
    errors.push_back(!cls.ok() ? cls.status() : vendor.status());
    return std::nullopt;
  }
  raw.class_code = *cls;
  raw.vendor = *vendor;
  if (auto dev = ReadId(fs, dir, "device"); dev.ok()) raw.device = *dev;
  return raw;
}

// Slot address files hold "dddd:bb:dd" (no function): every function of that device sits in the slot.
std::map<std::string, std::string> ReadSlots(const SysfsFs& fs, std::vector<Status>& errors) {
  std::map<std::string, std::string> by_address;
  auto names = fs.ListDir(kSlotsDir);
  if (!names.ok()) return by_address;  // no slots directory is normal (many servers)
  for (const std::string& slot : *names) {
    auto text = fs.ReadFile(std::string(kSlotsDir) + "/" + slot + "/address", kMaxAttrBytes);
    if (!text.ok()) {
      if (text.status().code() != StatusCode::kNotFound) errors.push_back(text.status());
      continue;
    }
    std::string bdf = NormalizeBdf(std::string(Trim(*text)) + ".0");
    if (!bdf.empty()) by_address[bdf.substr(0, bdf.size() - 2)] = slot;
  }
  return by_address;
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view PcieRoleName(PcieRole role) {
  switch (role) {
    case PcieRole::kGpu:
      return "gpu";
    case PcieRole::kNvswitch:
      return "nvswitch";
    case PcieRole::kNic:
      return "nic";
    case PcieRole::kBridge:
      return "bridge";
    case PcieRole::kRootPort:
      return "root_port";
  }
  return "bridge";
}

std::optional<PcieRole> ClassifyPci(uint32_t class_code, uint32_t vendor) {
  const uint32_t base_sub = class_code >> 8;
  if (vendor == kNvidia && (base_sub == 0x0302 || base_sub == 0x0300)) return PcieRole::kGpu;
  if (vendor == kNvidia && class_code == 0x068000) return PcieRole::kNvswitch;
  if (base_sub == 0x0207 || base_sub == 0x0200) return PcieRole::kNic;
  if (base_sub == 0x0604) return PcieRole::kBridge;
  return std::nullopt;
}

const PcieDevice* PcieTree::Find(std::string_view bdf) const {
  auto it = std::lower_bound(devices.begin(), devices.end(), bdf,
                             [](const PcieDevice& d, std::string_view b) { return d.bdf < b; });
  return it != devices.end() && it->bdf == bdf ? &*it : nullptr;
}

Result<PcieTree> ScanPcieTree(const SysfsFs& fs, std::vector<Status>& errors) {
  auto names = fs.ListDir(kDevicesDir);
  if (!names.ok()) return names.status();
  std::map<std::string, Raw> all;
  for (const std::string& name : *names) {
    if (auto raw = ReadRaw(fs, name, errors)) all[raw->bdf] = std::move(*raw);
  }
  // Keep endpoints of interest and every bridge above them: other bridges lead to
  // devices the fabric layer does not watch.
  std::set<std::string> keep;
  for (const auto& [bdf, raw] : all) {
    auto role = ClassifyPci(raw.class_code, raw.vendor);
    if (!role || *role == PcieRole::kBridge) continue;
    keep.insert(bdf);
    for (const std::string& up : raw.upstream) keep.insert(up);
  }
  const auto slots = ReadSlots(fs, errors);
  PcieTree tree;
  for (const std::string& bdf : keep) {
    auto it = all.find(bdf);
    if (it == all.end()) continue;  // a bridge on the path without its own entry (rare; hidden by the platform)
    const Raw& raw = it->second;
    PcieDevice d;
    d.bdf = bdf;
    d.class_code = raw.class_code;
    d.vendor = raw.vendor;
    d.device = raw.device;
    d.upstream = raw.upstream;
    d.sysfs_dir = std::string(kDevicesDir) + "/" + bdf;
    d.role = ClassifyPci(raw.class_code, raw.vendor).value_or(PcieRole::kBridge);
    if (d.role == PcieRole::kBridge) {
      // Switch ports alternate below a root port: upstream port, downstream ports, ...
      if (d.upstream.empty()) {
        d.role = PcieRole::kRootPort;
        d.port_type = "root";
      } else {
        d.port_type = d.upstream.size() % 2 == 1 ? "upstream" : "downstream";
      }
    }
    if (auto s = slots.find(bdf.substr(0, bdf.size() - 2)); s != slots.end()) d.slot = std::string(Trimmed(s->second));
    tree.devices.push_back(std::move(d));
  }
  return tree;
}

}  // namespace faultline
