#include "sim/fake_sysfs/fake_sysfs.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace faultline {
namespace {

namespace fs = std::filesystem;

// Counter names as the kernel prints them in aer_dev_* (drivers/pci/pcie/aer.c).
const std::vector<std::string> kCorrectable = {"RxErr",   "BadTLP",      "BadDLLP",    "Rollover",
                                               "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"};
const std::vector<std::string> kUncorrectable = {"Undefined",     "DLP",
                                                 "SDES",          "TLP",
                                                 "FCP",           "CmpltTO",
                                                 "CmpltAbrt",     "UnxCmplt",
                                                 "RxOF",          "MalfTLP",
                                                 "ECRC",          "UnsupReq",
                                                 "ACSViol",       "UncorrIntErr",
                                                 "BlockedTLP",    "AtomicOpBlocked",
                                                 "TLPBlockedErr", "PoisonTLPBlocked"};
const char* const kIbCounterFiles[] = {"symbol_error",
                                       "link_error_recovery",
                                       "link_downed",
                                       "port_rcv_errors",
                                       "port_rcv_remote_physical_errors",
                                       "port_rcv_switch_relay_errors",
                                       "port_xmit_discards",
                                       "port_xmit_constraint_errors",
                                       "port_rcv_constraint_errors",
                                       "local_link_integrity_errors",
                                       "excessive_buffer_overrun_errors",
                                       "VL15_dropped",
                                       "port_xmit_data",
                                       "port_rcv_data",
                                       "port_xmit_packets",
                                       "port_rcv_packets",
                                       "port_xmit_wait"};
const char* const kHwCounterFiles[] = {"rx_write_requests", "out_of_buffer", "duplicate_request", "np_cnp_sent"};

std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%0*x", digits, v);
  return buf;
}

std::string Bdf(int bus, int dev) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0000:%02x:%02x.0", bus & 0xff, dev & 0x1f);
  return buf;
}

std::string Speed(double gts) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GT/s PCIe\n", gts);
  return buf;
}

std::string IbStateName(int state) {
  static const char* const kNames[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  return state >= 0 && state <= 5 ? kNames[state] : "UNKNOWN";
}

std::string PhysStateName(int phys) {
  static const char* const kNames[] = {
      "NOP", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test"};
  return phys >= 0 && phys <= 7 ? kNames[phys] : "Unknown";
}

Status Write(const fs::path& path, std::string_view content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) return Status(StatusCode::kIoError, "cannot write " + path.string());
  return Status::Ok();
}

Status Symlink(const std::string& target, const fs::path& link) {
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  fs::create_directory_symlink(target, link, ec);
  if (ec) return Status(StatusCode::kIoError, "symlink " + link.string() + ": " + ec.message());
  return Status::Ok();
}

struct IdSet {
  uint32_t class_code, vendor, device;
  double speed;
  int width;
};

IdSet IdsFor(const std::string& role, const std::string& port_type, bool ethernet) {
  if (role == "gpu") return {0x030200, 0x10de, 0x2330, 32.0, 16};
  if (role == "nvswitch") return {0x068000, 0x10de, 0x22a3, 16.0, 4};
  if (role == "nic")
    return ethernet ? IdSet{0x020000, 0x15b3, 0x101d, 16.0, 16} : IdSet{0x020700, 0x15b3, 0x1021, 32.0, 16};
  if (role == "nvme") return {0x010802, 0x144d, 0xa80a, 16.0, 4};
  if (port_type == "root") return {0x060400, 0x8086, 0x352a, 32.0, 16};
  return {0x060400, 0x1000, 0xc030, 32.0, 16};  // PCIe switch port
}

// Builds the device list; no I/O.
class Layout {
 public:
  explicit Layout(const FakeSysfsOptions& o) : o_(o) {}

  std::vector<FakePcieDevice> Build(std::vector<bool>& ethernet) {
    const int switches = std::max(1, o_.root_complexes * o_.switches_per_root_complex);
    int sw = 0;
    for (int rc = 0; rc < o_.root_complexes; ++rc) {
      const int base = rc * 0x80;
      int next_bus = base + 1;
      const std::string host = "/sys/devices/pci0000:" + Hex(static_cast<uint32_t>(base), 2).substr(2);
      for (int s = 0; s < o_.switches_per_root_complex; ++s, ++sw) {
        const FakePcieDevice rp = Add(Bdf(base, 1 + s), "root_port", "root", "", host, false);
        const FakePcieDevice us = Add(Bdf(next_bus++, 0), "bridge", "upstream", rp.bdf, rp.dir, false);
        const int ds_bus = next_bus++;
        int ds_dev = 0;
        auto endpoint = [&](const std::string& role, bool eth) {
          const FakePcieDevice ds = Add(Bdf(ds_bus, ds_dev++), "bridge", "downstream", us.bdf, us.dir, false);
          Add(Bdf(next_bus++, 0), role, "", ds.bdf, ds.dir, eth);
        };
        for (int g = Share(o_.gpus, switches, sw); g < Share(o_.gpus, switches, sw + 1); ++g) endpoint("gpu", false);
        for (int n = Share(o_.ib_hcas, switches, sw); n < Share(o_.ib_hcas, switches, sw + 1); ++n)
          endpoint("nic", false);
        if (sw == 0) {
          for (int n = 0; n < o_.nvswitches; ++n) endpoint("nvswitch", false);
        }
      }
      if (rc < o_.eth_nics) {
        const FakePcieDevice rp =
            Add(Bdf(base, 1 + o_.switches_per_root_complex), "root_port", "root", "", host, false);
        Add(Bdf(next_bus++, 0), "nic", "", rp.bdf, rp.dir, true);
      }
      // A device the fabric layer must ignore: an NVMe drive on its own root port.
      const FakePcieDevice rp = Add(Bdf(base, 0x10), "root_port", "root", "", host, false);
      Add(Bdf(next_bus++, 0), "nvme", "", rp.bdf, rp.dir, false);
    }
    ethernet = eth_;
    return devices_;
  }

 private:
  static int Share(int total, int parts, int i) { return total * i / parts; }

  const FakePcieDevice& Add(std::string bdf, std::string role, std::string port_type, std::string parent,
                            const std::string& parent_dir, bool eth) {
    FakePcieDevice d;
    d.dir = parent_dir + "/" + bdf;
    d.bdf = std::move(bdf);
    d.role = std::move(role);
    d.port_type = std::move(port_type);
    d.parent = std::move(parent);
    if (d.role == "gpu") d.slot = std::to_string(++gpu_slots_);
    if (d.role == "nic") {
      d.slot = std::to_string(eth ? 30 + eth_count_ : 10 + ib_count_ + 1);
      d.ib_device = "mlx5_" + std::to_string(eth ? o_.ib_hcas + eth_count_ : ib_count_);
      (eth ? eth_count_ : ib_count_)++;
    }
    devices_.push_back(std::move(d));
    eth_.push_back(eth);
    return devices_.back();
  }

  const FakeSysfsOptions& o_;
  std::vector<FakePcieDevice> devices_;
  std::vector<bool> eth_;
  int gpu_slots_ = 0, ib_count_ = 0, eth_count_ = 0;
};

}  // namespace

std::string FakeSysfsScratchDir(std::string_view tag) {
  std::string base = "/dev/shm";
  if (::access(base.c_str(), W_OK) != 0) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  return base + "/faultline_fake_sysfs_" + std::string(tag) + "_" + std::to_string(::getpid());
}

Result<FakeSysfsTree> FakeSysfsTree::Create(const std::string& root_dir, const FakeSysfsOptions& options) {
  if (options.gpus < 0 || options.ib_hcas < 0 || options.root_complexes < 1 || options.root_complexes > 2 ||
      options.switches_per_root_complex < 1 || options.switches_per_root_complex > 8) {
    return Status(StatusCode::kInvalidArgument, "fake sysfs: unsupported layout");
  }
  FakeSysfsTree t;
  t.root_ = root_dir;
  while (t.root_.size() > 1 && t.root_.back() == '/') t.root_.pop_back();
  std::vector<bool> ethernet;
  Layout layout(options);
  // Layout::Add returns references into a growing vector; copy what it built.
  std::vector<FakePcieDevice> devices = layout.Build(ethernet);
  for (size_t i = 0; i < devices.size(); ++i) {
    const FakePcieDevice& d = devices[i];
    const fs::path dir = t.root_ + d.dir;
    const IdSet ids = IdsFor(d.role, d.port_type, ethernet[i]);
    const std::pair<const char*, std::string> files[] = {{"class", Hex(ids.class_code, 6) + "\n"},
                                                         {"vendor", Hex(ids.vendor, 4) + "\n"},
                                                         {"device", Hex(ids.device, 4) + "\n"},
                                                         {"current_link_speed", Speed(ids.speed)},
                                                         {"max_link_speed", Speed(ids.speed)},
                                                         {"current_link_width", std::to_string(ids.width) + "\n"},
                                                         {"max_link_width", std::to_string(ids.width) + "\n"}};
    for (const auto& [name, content] : files) {
      if (Status s = Write(dir / name, content); !s.ok()) return s;
    }
    if (Status s = Symlink("../../.." + d.dir.substr(4), t.root_ + "/sys/bus/pci/devices/" + d.bdf); !s.ok()) return s;
    if (!d.slot.empty()) {
      if (Status s = Write(t.root_ + "/sys/bus/pci/slots/" + d.slot + "/address", d.bdf.substr(0, 10) + "\n");
          !s.ok()) {
        return s;
      }
    }
    if (d.role == "nvme") continue;  // kept without AER files: not every device has the capability
    t.devices_.push_back(d);
    if (Status s = t.WriteAer(d); !s.ok()) return s;
    if (d.port_type == "root") {
      if (Status s = t.WriteRootTotals(d.bdf); !s.ok()) return s;
    }
    if (!d.ib_device.empty()) {
      if (Status s = t.WriteIbDevice(d, ethernet[i], options); !s.ok()) return s;
    }
  }
  return t;
}

Status FakeSysfsTree::WriteIbDevice(const FakePcieDevice& d, bool eth, const FakeSysfsOptions& options) {
  const std::string ib = root_ + "/sys/class/infiniband/" + d.ib_device;
  if (Status s = Symlink("../../.." + d.dir.substr(4), ib + "/device"); !s.ok()) return s;
  const std::pair<const char*, std::string> ids[] = {{"hca_type", eth ? "MT4125" : options.hca_type},
                                                     {"board_id", eth ? "MT_0000000910" : options.board_id},
                                                     {"fw_ver", eth ? "22.41.1000" : options.fw_ver}};
  for (const auto& [name, value] : ids) {
    if (value.empty()) continue;
    if (Status s = Write(ib + "/" + name, value + "\n"); !s.ok()) return s;
  }
  const int ports = eth ? 1 : std::max(1, options.ib_ports_per_hca);
  for (int port = 1; port <= ports; ++port) {
    const std::string dir = IbPortDir(d.ib_device, port);
    if (Status s = Write(dir + "/link_layer", eth ? "Ethernet\n" : "InfiniBand\n"); !s.ok()) return s;
    if (Status s = SetIbState(d.ib_device, 4, 5, port); !s.ok()) return s;
    if (Status s = SetIbRate(d.ib_device, eth ? "200 Gb/sec (4X HDR)" : options.ib_rate, port); !s.ok()) return s;
    for (const char* c : kIbCounterFiles) {
      if (Status s = SetIbCounter(d.ib_device, c, 0, port); !s.ok()) return s;
    }
    for (const char* c : kHwCounterFiles) {
      if (Status s = Write(dir + "/hw_counters/" + c, "0\n"); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

const FakePcieDevice* FakeSysfsTree::Find(std::string_view bdf) const {
  for (const FakePcieDevice& d : devices_) {
    if (d.bdf == bdf) return &d;
  }
  return nullptr;
}

std::vector<std::string> FakeSysfsTree::Bdfs(std::string_view role) const {
  std::vector<std::string> out;
  for (const FakePcieDevice& d : devices_) {
    if (d.role == role) out.push_back(d.bdf);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> FakeSysfsTree::IbDevices() const {
  std::vector<std::string> out;
  for (const FakePcieDevice& d : devices_) {
    if (!d.ib_device.empty()) out.push_back(d.ib_device);
  }
  return out;
}

std::string FakeSysfsTree::RootPortOf(std::string_view bdf) const {
  const FakePcieDevice* d = Find(bdf);
  while (d != nullptr && !d->parent.empty()) d = Find(d->parent);
  return d != nullptr ? d->bdf : "";
}

Status FakeSysfsTree::WriteAer(const FakePcieDevice& d) {
  AerState& st = aer_[d.bdf];
  if (st.by_severity.empty()) {
    for (const std::string& n : kCorrectable) st.by_severity["correctable"].emplace_back(n, 0);
    for (const char* sev : {"nonfatal", "fatal"}) {
      for (const std::string& n : kUncorrectable) st.by_severity[sev].emplace_back(n, 0);
    }
  }
  const std::pair<const char*, const char*> files[] = {
      {"correctable", "TOTAL_ERR_COR"}, {"nonfatal", "TOTAL_ERR_NONFATAL"}, {"fatal", "TOTAL_ERR_FATAL"}};
  for (const auto& [sev, total_name] : files) {
    std::string text;
    uint64_t total = 0;
    for (const auto& [name, v] : st.by_severity[sev]) {
      text += name + " " + std::to_string(v) + "\n";
      total += v;
    }
    text += std::string(total_name) + " " + std::to_string(total) + "\n";
    if (Status s = Write(root_ + d.dir + "/aer_dev_" + sev, text); !s.ok()) return s;
  }
  return Status::Ok();
}

Status FakeSysfsTree::WriteRootTotals(const std::string& root_port) {
  const FakePcieDevice* d = Find(root_port);
  if (d == nullptr) return Status(StatusCode::kNotFound, "no root port " + root_port);
  auto& totals = root_totals_[root_port];
  const std::pair<const char*, const char*> files[] = {
      {"correctable", "cor"}, {"nonfatal", "nonfatal"}, {"fatal", "fatal"}};
  for (const auto& [sev, suffix] : files) {
    if (Status s = Write(root_ + d->dir + "/aer_rootport_total_err_" + suffix, std::to_string(totals[sev]) + "\n");
        !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

Status FakeSysfsTree::AddAer(std::string_view bdf, std::string_view severity, std::string_view error, uint64_t delta) {
  const FakePcieDevice* d = Find(bdf);
  if (d == nullptr) return Status(StatusCode::kNotFound, "no device " + std::string(bdf));
  auto& lines = aer_[d->bdf].by_severity[std::string(severity)];
  auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == error; });
  if (it == lines.end()) return Status(StatusCode::kInvalidArgument, "no AER counter " + std::string(error));
  it->second += delta;
  if (Status s = WriteAer(*d); !s.ok()) return s;
  // The root port above counts every error message it receives.
  const std::string rp = RootPortOf(d->bdf);
  root_totals_[rp][std::string(severity)] += delta;
  return WriteRootTotals(rp);
}

Status FakeSysfsTree::ResetAer(std::string_view bdf) {
  const FakePcieDevice* d = Find(bdf);
  if (d == nullptr) return Status(StatusCode::kNotFound, "no device " + std::string(bdf));
  for (auto& [sev, lines] : aer_[d->bdf].by_severity) {
    for (auto& line : lines) line.second = 0;
  }
  return WriteAer(*d);
}

Status FakeSysfsTree::SetLink(std::string_view bdf, double speed_gts, int width) {
  const FakePcieDevice* d = Find(bdf);
  if (d == nullptr) return Status(StatusCode::kNotFound, "no device " + std::string(bdf));
  if (Status s = Write(root_ + d->dir + "/current_link_speed", Speed(speed_gts)); !s.ok()) return s;
  return Write(root_ + d->dir + "/current_link_width", std::to_string(width) + "\n");
}

std::string FakeSysfsTree::IbPortDir(std::string_view device, int port) const {
  return root_ + "/sys/class/infiniband/" + std::string(device) + "/ports/" + std::to_string(port);
}

Status FakeSysfsTree::SetIbCounter(std::string_view device, std::string_view counter, uint64_t value, int port) {
  ib_counters_[std::string(device) + "/" + std::to_string(port) + "/" + std::string(counter)] = value;
  return Write(IbPortDir(device, port) + "/counters/" + std::string(counter), std::to_string(value) + "\n");
}

Status FakeSysfsTree::AddIbCounter(std::string_view device, std::string_view counter, uint64_t delta, int port) {
  const std::string key = std::string(device) + "/" + std::to_string(port) + "/" + std::string(counter);
  return SetIbCounter(device, counter, ib_counters_[key] + delta, port);
}

Status FakeSysfsTree::SetIbState(std::string_view device, int state, int phys_state, int port) {
  const std::string dir = IbPortDir(device, port);
  if (Status s = Write(dir + "/state", std::to_string(state) + ": " + IbStateName(state) + "\n"); !s.ok()) return s;
  return Write(dir + "/phys_state", std::to_string(phys_state) + ": " + PhysStateName(phys_state) + "\n");
}

Status FakeSysfsTree::SetIbRate(std::string_view device, std::string_view rate_text, int port) {
  return Write(IbPortDir(device, port) + "/rate", std::string(rate_text) + "\n");
}

Status FakeSysfsTree::WriteRaw(const std::string& path, std::string_view content) const {
  return Write(root_ + path, content);
}

}  // namespace faultline
