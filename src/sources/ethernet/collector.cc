#include "sources/ethernet/collector.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <utility>

#include "core/inventory.h"
#include "sources/ethernet/eth_parse.h"
#include "sources/sysfs/counter_parse.h"

namespace faultline {
namespace {

constexpr char kIbDir[] = "/sys/class/infiniband";
constexpr char kNetDir[] = "/sys/class/net";
constexpr size_t kMaxInterfaces = 512;  // a node with more is not one this source understands
constexpr char kArphrdEther[] = "1";    // /sys/class/net/<if>/type of an Ethernet device

// Interface counters that are plain sysfs files (each read is cheap; statistics/* are the
// kernel's rtnl_link_stats64 fields).
constexpr const char* kNetCounterFiles[] = {"carrier_changes", "carrier_down_count", "statistics/rx_crc_errors",
                                            "statistics/rx_frame_errors", "statistics/rx_missed_errors"};

std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string FirstLine(std::string_view s) {
  s = s.substr(0, s.find('\n'));
  return std::string(s.substr(0, 128));
}

// A short printable identity string, "" when absent or anything else.
std::string IdentityAttr(const SysfsFs& fs, const std::string& path) {
  auto text = fs.ReadFile(path, kMaxAttrBytes);
  if (!text.ok()) return "";
  std::string v = FirstLine(*text);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
  if (v.empty() || v.size() > 64) return "";
  for (char c : v) {
    if (c < 0x21 || c > 0x7e) return "";
  }
  return v;
}

std::string BdfOf(const SysfsFs& fs, const std::string& device_link) {
  auto real = fs.RealPath(device_link);
  if (!real.ok()) return "";
  return NormalizeBdf(real->substr(real->rfind('/') + 1));
}

std::string PciModel(const SysfsFs& fs, const std::string& device_link) {
  const std::string vendor = IdentityAttr(fs, device_link + "/vendor");
  const std::string device = IdentityAttr(fs, device_link + "/device");
  if (vendor.size() != 6 || device.size() != 6) return "";
  return vendor.substr(2) + ":" + device.substr(2);  // "0x15b3" -> "15b3"
}

Status InFile(const std::string& path, const Status& st) {
  if (st.message().rfind(path, 0) == 0) return st;
  return Status(st.code(), path + ": " + st.message());
}

}  // namespace

EthernetCollector::EthernetCollector(const SysfsFs& fs, const EthtoolStats& ethtool, const Clock& clock,
                                     EthernetOptions options, const Topology* topology)
    : fs_(fs), ethtool_(ethtool), clock_(clock), options_(std::move(options)), topology_(topology) {}

void EthernetCollector::Discover(std::vector<Status>& errors) {
  roce_.clear();
  ifaces_.clear();
  DiscoverRdma(errors);
  DiscoverInterfaces(errors);
  discovered_ = true;
}

void EthernetCollector::DiscoverRdma(std::vector<Status>& errors) {
  auto devs = fs_.ListDir(kIbDir);
  if (!devs.ok()) {
    if (devs.status().code() != StatusCode::kNotFound) errors.push_back(devs.status());
    return;  // no RDMA stack: a plain Ethernet node
  }
  for (const std::string& dev : *devs) {
    if (!IsSafeRdmaName(dev)) {
      errors.push_back(Status(StatusCode::kCorrupt, std::string(kIbDir) + ": unusable device name skipped"));
      continue;
    }
    const std::string dev_dir = std::string(kIbDir) + "/" + dev;
    auto ports = fs_.ListDir(dev_dir + "/ports");
    if (!ports.ok()) {
      errors.push_back(ports.status());
      continue;
    }
    const std::string bdf = BdfOf(fs_, dev_dir + "/device");
    const std::string model = IdentityAttr(fs_, dev_dir + "/hca_type");
    for (const std::string& port : *ports) {
      auto n = ParseCounter(port);
      if (!n.ok() || *n < 1 || *n > 255) continue;
      RocePortInfo p{dev, static_cast<int>(*n), dev_dir + "/ports/" + port, bdf, model, "", {}, {}, -1};
      auto ll = fs_.ReadFile(p.dir + "/link_layer", kMaxAttrBytes);
      if (!ll.ok() || FirstLine(*ll) != "Ethernet") continue;  // InfiniBand ports are the sysfs source's
      // The netdev carrying this port's RoCE traffic (GID table attribute, kernel sysfs.c).
      if (auto ndev = fs_.ReadFile(p.dir + "/gid_attrs/ndevs/0", kMaxAttrBytes); ndev.ok()) {
        const std::string name = FirstLine(*ndev);
        if (IsSafeInterfaceName(name)) p.netdev = name;
      }
      if (auto files = fs_.ListDir(p.dir + "/hw_counters"); files.ok()) {
        for (const std::string& f : RoceCounterFiles()) {
          if (std::binary_search(files->begin(), files->end(), f)) p.counters.push_back(f);
        }
      } else if (files.status().code() != StatusCode::kNotFound) {
        errors.push_back(files.status());
      }
      roce_.push_back(std::move(p));
    }
  }
}

void EthernetCollector::DiscoverInterfaces(std::vector<Status>& errors) {
  auto names = fs_.ListDir(kNetDir);
  if (!names.ok()) {
    if (names.status().code() != StatusCode::kNotFound) errors.push_back(names.status());
    return;
  }
  for (const std::string& name : *names) {
    if (!IsSafeInterfaceName(name)) {
      errors.push_back(Status(StatusCode::kCorrupt, std::string(kNetDir) + ": unusable interface name skipped"));
      continue;
    }
    if (ifaces_.size() >= kMaxInterfaces) {
      errors.push_back(Status(StatusCode::kCorrupt, std::string(kNetDir) + ": too many interfaces, rest skipped"));
      break;
    }
    const std::string dir = std::string(kNetDir) + "/" + name;
    // Physical Ethernet only: a PCI device behind it (lo, bridges, veths, bonds have
    // none) and ARPHRD_ETHER (an IPoIB netdev is type 32).
    EthInterfaceInfo i{name, BdfOf(fs_, dir + "/device"), "", "", 0};
    if (i.bdf.empty()) continue;
    if (auto type = fs_.ReadFile(dir + "/type", kMaxAttrBytes); type.ok() && FirstLine(*type) != kArphrdEther) {
      continue;
    }
    for (const RocePortInfo& p : roce_) {
      if (p.netdev == name || (p.netdev.empty() && !p.bdf.empty() && p.bdf == i.bdf)) {
        i.rdma_device = p.device;
        i.rdma_port = p.port;
        i.model = p.model;
      }
    }
    if (i.model.empty()) i.model = PciModel(fs_, dir + "/device");
    ifaces_.push_back(std::move(i));
  }
  // A RoCE port whose netdev was found by its PCI address learns the name too.
  for (RocePortInfo& p : roce_) {
    for (const EthInterfaceInfo& i : ifaces_) {
      if (p.netdev.empty() && i.rdma_device == p.device && i.rdma_port == p.port) p.netdev = i.name;
    }
  }
}

const TopoIbPort* EthernetCollector::TopoFor(const std::string& device, int port, const std::string& netdev) const {
  if (topology_ == nullptr) return nullptr;
  const TopoIbPort* t = device.empty() ? nullptr : topology_->FindIbPort(device, port);
  // A plain Ethernet interface is listed by its name, port 1 (docs/ethernet.md).
  if (t == nullptr && !netdev.empty()) t = topology_->FindIbPort(netdev, 1);
  return t;
}

ComponentRef EthernetCollector::RoceRef(const RocePortInfo& p) const {
  ComponentRef ref{ComponentType::kRoce, p.device + "/" + std::to_string(p.port), {}};
  ref.keys["device"] = p.device;
  ref.keys["port"] = std::to_string(p.port);
  ref.keys["link_layer"] = "Ethernet";
  if (!p.bdf.empty()) ref.keys["bdf"] = p.bdf;
  if (!p.model.empty()) ref.keys["model"] = p.model;
  if (!p.netdev.empty()) ref.keys["netdev"] = p.netdev;
  if (const TopoIbPort* t = TopoFor(p.device, p.port, p.netdev)) {
    AddPlacementKeys(*t, ref.keys);
  }
  return ref;
}

ComponentRef EthernetCollector::EthRef(const EthInterfaceInfo& i) const {
  ComponentRef ref{ComponentType::kEth, i.name, {}};
  ref.keys["interface"] = i.name;
  if (!i.bdf.empty()) ref.keys["bdf"] = i.bdf;
  if (!i.model.empty()) ref.keys["model"] = i.model;
  if (!i.rdma_device.empty()) {
    ref.keys["rdma_device"] = i.rdma_device;
    ref.keys["rdma_port"] = std::to_string(i.rdma_port);
  }
  if (const TopoIbPort* t = TopoFor(i.rdma_device, i.rdma_port, i.name)) {
    AddPlacementKeys(*t, ref.keys);
  }
  return ref;
}

Observation EthernetCollector::Make(const ComponentRef& ref, ObsKind kind, double value, std::string raw,
                                    int64_t t) const {
  Observation o;
  o.time_ns = t;
  o.node = options_.node;
  o.layer = Layer::kFabric;
  o.source = Source::kSysfs;
  o.component = ref;
  o.kind = kind;
  o.value = value;
  o.raw = std::move(raw);
  return o;
}

void EthernetCollector::CollectInterface(const EthInterfaceInfo& i, EthernetSample& s) const {
  const ComponentRef ref = EthRef(i);
  const std::string dir = std::string(kNetDir) + "/" + i.name;
  auto read = [&](const std::string& file) -> Result<std::string> {
    auto text = fs_.ReadFile(dir + "/" + file, kMaxAttrBytes);
    if (!text.ok() && text.status().code() != StatusCode::kNotFound) s.errors.push_back(text.status());
    return text;
  };
  std::string operstate;
  if (auto text = read("operstate"); text.ok()) {
    auto st = ParseOperstate(*text);
    if (st.ok()) {
      operstate = *st;
      Observation o =
          Make(ref, ObsKind::kEthLinkState, operstate == "up" ? 1 : 0, dir + "/operstate: " + operstate, s.time_ns);
      o.attrs["operstate"] = operstate;
      // carrier reads EINVAL while the interface is administratively down: only ask when up.
      if (operstate == "up") {
        if (auto c = fs_.ReadFile(dir + "/carrier", kMaxAttrBytes); c.ok()) {
          if (auto carrier = ParseCarrier(*c); carrier.ok()) o.attrs["carrier"] = *carrier ? "1" : "0";
        }
      }
      s.observations.push_back(std::move(o));
    } else {
      s.errors.push_back(InFile(dir + "/operstate", st.status()));
    }
  }
  if (operstate == "up") {
    if (auto text = read("speed"); text.ok()) {
      auto mbps = ParseSpeedMbps(*text);
      if (mbps.ok()) {
        Observation o = Make(ref, ObsKind::kEthSpeed, static_cast<double>(*mbps) / 1000.0,
                             dir + "/speed: " + std::to_string(*mbps), s.time_ns);
        o.attrs["mbps"] = std::to_string(*mbps);
        const TopoIbPort* t = TopoFor(i.rdma_device, i.rdma_port, i.name);
        if (t != nullptr && t->expected_rate_gbps > 0) o.attrs["expected"] = Num(t->expected_rate_gbps);
        s.observations.push_back(std::move(o));
      } else if (mbps.status().code() != StatusCode::kUnsupported) {
        s.errors.push_back(InFile(dir + "/speed", mbps.status()));
      }
    }
  }
  auto counter = [&](const std::string& name, uint64_t value, const std::string& raw, const char* via) {
    auto info = LookupEthCounter(name);
    if (!info) return;
    Observation o = Make(ref, ObsKind::kEthCounter, static_cast<double>(value), raw, s.time_ns);
    o.attrs["counter"] = name;
    o.attrs["canonical"] = info->canonical;
    o.attrs["group"] = std::string(ToString(info->group));
    o.attrs["via"] = via;
    if (info->priority >= 0) o.attrs["priority"] = std::to_string(info->priority);
    s.observations.push_back(std::move(o));
  };
  for (const char* file : kNetCounterFiles) {
    auto text = read(file);
    if (!text.ok()) continue;
    auto v = ParseCounter(*text);
    if (!v.ok()) {
      if (v.status().code() != StatusCode::kUnsupported) s.errors.push_back(InFile(dir + "/" + file, v.status()));
      continue;
    }
    const std::string name = std::string(file).substr(std::string(file).rfind('/') + 1);
    counter(name, *v, dir + "/" + file + ": " + std::to_string(*v), "sysfs");
  }
  if (!options_.ethtool) return;
  auto stats = ethtool_.Read(i.name);
  if (!stats.ok()) {
    if (stats.status().code() != StatusCode::kUnsupported) s.errors.push_back(stats.status());
    return;
  }
  for (const EthtoolStat& st : *stats) {
    counter(st.name, st.value, i.name + " ethtool " + st.name + ": " + std::to_string(st.value), "ethtool");
  }
}

void EthernetCollector::CollectRoce(RocePortInfo& p, EthernetSample& s) {
  const ComponentRef ref = RoceRef(p);
  const auto start = std::chrono::steady_clock::now();
  uint64_t files = 0;
  // One burst: the first read refreshes the driver's cache, the rest are served from it.
  for (const std::string& file : p.counters) {
    if (p.disabled.count(file)) continue;
    const std::string path = p.dir + "/hw_counters/" + file;
    auto text = fs_.ReadFile(path, kMaxAttrBytes);
    ++files;
    if (!text.ok()) {
      if (text.status().code() == StatusCode::kNotFound) continue;
      // EINVAL from a restricted function's firmware, or permission: never again (each
      // failing read may print an ACCESS_REG error in the kernel log).
      p.disabled.insert(file);
      s.errors.push_back(Status(text.status().code(), text.status().message() + " (not read again)"));
      continue;
    }
    auto v = ParseCounter(*text);
    if (!v.ok()) {
      if (v.status().code() != StatusCode::kUnsupported) s.errors.push_back(InFile(path, v.status()));
      continue;
    }
    auto info = LookupRoceCounter(file);
    Observation o =
        Make(ref, ObsKind::kRoceCounter, static_cast<double>(*v), path + ": " + std::to_string(*v), s.time_ns);
    o.attrs["counter"] = file;
    o.attrs["canonical"] = info ? info->canonical : file;
    o.attrs["group"] = std::string(ToString(info ? info->group : EthCounterGroup::kInfo));
    s.observations.push_back(std::move(o));
  }
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  ++cost_.port_reads;
  cost_.file_reads += files;
  cost_.total_ns += ns;
  cost_.max_port_ns = std::max(cost_.max_port_ns, ns);
  p.last_read_ns = clock_.MonotonicNs();
  ++s.rdma_ports_read;
}

EthernetSample EthernetCollector::Collect() {
  EthernetSample s;
  s.time_ns = clock_.NowNs();
  if (!discovered_) Discover(s.errors);
  for (const EthInterfaceInfo& i : ifaces_) CollectInterface(i, s);
  // The ports due for a burst, least recently read first, at most the bound per sample.
  const int64_t now = clock_.MonotonicNs();
  std::vector<RocePortInfo*> due;
  for (RocePortInfo& p : roce_) {
    if (p.counters.empty()) continue;
    if (p.last_read_ns < 0 || now - p.last_read_ns >= options_.rdma_interval_ns) due.push_back(&p);
  }
  std::stable_sort(due.begin(), due.end(),
                   [](const RocePortInfo* a, const RocePortInfo* b) { return a->last_read_ns < b->last_read_ns; });
  if (due.size() > options_.rdma_max_ports_per_sample) due.resize(options_.rdma_max_ports_per_sample);
  for (RocePortInfo* p : due) CollectRoce(*p, s);
  return s;
}

}  // namespace faultline
