#include "sources/sysfs/collector.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <utility>

#include "core/inventory.h"
#include "sources/sysfs/counter_parse.h"

namespace faultline {
namespace {

constexpr char kIbDir[] = "/sys/class/infiniband";

// The plain IB port counters (PMA counters under ports/<n>/counters/) and their kinds.
// Deliberately an allowlist: nothing under hw_counters/ is ever read.
struct IbCounterKind {
  const char* file;
  ObsKind kind;
};
constexpr IbCounterKind kIbCounters[] = {
    {"symbol_error", ObsKind::kIbSymbolError},
    {"link_error_recovery", ObsKind::kIbLinkErrorRecovery},
    {"link_downed", ObsKind::kIbLinkDowned},
    {"port_rcv_errors", ObsKind::kIbRcvError},
    {"local_link_integrity_errors", ObsKind::kIbLinkIntegrity},
    {"port_xmit_discards", ObsKind::kIbXmitDiscards},
    {"port_rcv_remote_physical_errors", ObsKind::kOther},
    {"excessive_buffer_overrun_errors", ObsKind::kOther},
};

constexpr const char* kAerFiles[][2] = {
    {"aer_dev_correctable", "correctable"}, {"aer_dev_nonfatal", "nonfatal"}, {"aer_dev_fatal", "fatal"}};
constexpr const char* kRootPortFiles[][3] = {
    {"aer_rootport_total_err_cor", "correctable", "ROOTPORT_TOTAL_ERR_COR"},
    {"aer_rootport_total_err_nonfatal", "nonfatal", "ROOTPORT_TOTAL_ERR_NONFATAL"},
    {"aer_rootport_total_err_fatal", "fatal", "ROOTPORT_TOTAL_ERR_FATAL"}};

std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string FirstLine(std::string_view s) {
  s = s.substr(0, s.find('\n'));
  return std::string(s.substr(0, 128));
}

std::string PciId(uint32_t vendor, uint32_t device) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%04x:%04x", vendor & 0xffff, device & 0xffff);
  return buf;
}

// A short printable identity string (hca_type, board_id, fw_ver); "" when the file is
// absent or holds anything else, so a garbled file never becomes a grouping key.
std::string IdentityAttr(const SysfsFs& fs, const std::string& path) {
  auto text = fs.ReadFile(path, kMaxAttrBytes);
  if (!text.ok()) return "";
  std::string v = FirstLine(*text);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
  if (v.size() > 64) return "";
  for (char c : v) {
    if (c < 0x21 || c > 0x7e) return "";
  }
  return v;
}

Status InFile(const std::string& path, const Status& st) {
  // Parsers name the problem; prefix the file so the operator knows which one.
  if (st.message().rfind(path, 0) == 0) return st;
  return Status(st.code(), path + ": " + st.message());
}

}  // namespace

SysfsCollector::SysfsCollector(const SysfsFs& fs, const Clock& clock, SysfsOptions options, const Topology* topology)
    : fs_(fs), clock_(clock), options_(std::move(options)), topology_(topology) {}

ComponentRef SysfsCollector::PcieRef(const PcieDevice& d) const {
  ComponentRef ref = PcieComponent(d.bdf);
  ref.keys["device"] = std::string(PcieRoleName(d.role));
  if (d.vendor != 0 || d.device != 0) ref.keys["pci_id"] = PciId(d.vendor, d.device);
  if (!d.slot.empty()) ref.keys["slot"] = d.slot;
  if (!d.port_type.empty()) ref.keys["port_type"] = d.port_type;
  std::string chain;
  for (const std::string& up : d.upstream) chain += (chain.empty() ? "" : ">") + up;
  if (!chain.empty()) ref.keys["upstream"] = chain;
  if (topology_ != nullptr) {
    // A riser named for the device itself wins; else the nearest bridge above it that has one.
    std::string riser = topology_->RiserFor(d.slot, d.bdf);
    for (auto it = d.upstream.rbegin(); riser.empty() && it != d.upstream.rend(); ++it) {
      const PcieDevice* up = tree_.Find(*it);
      riser = topology_->RiserFor(up != nullptr ? up->slot : "", *it);
    }
    if (!riser.empty()) ref.keys["riser"] = riser;
    for (const TopoGpu& g : topology_->gpus) {
      if (!g.bdf.empty() && g.bdf == d.bdf) ref.keys["gpu_index"] = std::to_string(g.index);
    }
  }
  return ref;
}

ComponentRef SysfsCollector::IbRef(const IbPortInfo& p) const {
  ComponentRef ref{ComponentType::kIb, p.device + "/" + std::to_string(p.port), {}};
  ref.keys["device"] = p.device;
  ref.keys["port"] = std::to_string(p.port);
  if (!p.bdf.empty()) ref.keys["bdf"] = p.bdf;
  if (!p.link_layer.empty()) ref.keys["link_layer"] = p.link_layer;
  if (!p.model.empty()) ref.keys["model"] = p.model;
  if (!p.board_id.empty()) ref.keys["board_id"] = p.board_id;
  if (!p.fw_ver.empty()) ref.keys["fw_ver"] = p.fw_ver;
  if (const TopoIbPort* t = topology_ != nullptr ? topology_->FindIbPort(p.device, p.port) : nullptr) {
    AddPlacementKeys(*t, ref.keys);
  }
  return ref;
}

void SysfsCollector::Discover(std::vector<Status>& errors) {
  tree_ = PcieTree{};
  pcie_refs_.clear();
  link_max_.clear();
  ib_ports_.clear();
  if (options_.pcie) {
    auto tree = ScanPcieTree(fs_, errors);
    if (tree.ok()) {
      tree_ = std::move(*tree);
    } else {
      errors.push_back(tree.status());
    }
    for (const PcieDevice& d : tree_.devices) {
      pcie_refs_.push_back(PcieRef(d));
      link_max_.push_back(ReadLinkMax(d, errors));
    }
  }
  if (options_.infiniband) DiscoverIb(errors);
  discovered_ = true;
}

void SysfsCollector::DiscoverIb(std::vector<Status>& errors) {
  auto devs = fs_.ListDir(kIbDir);
  if (!devs.ok()) {
    // No InfiniBand stack loaded is a normal configuration, not an error.
    if (devs.status().code() != StatusCode::kNotFound) errors.push_back(devs.status());
    return;
  }
  for (const std::string& dev : *devs) {
    const std::string dev_dir = std::string(kIbDir) + "/" + dev;
    auto ports = fs_.ListDir(dev_dir + "/ports");
    if (!ports.ok()) {
      errors.push_back(ports.status());
      continue;
    }
    std::string bdf;
    if (auto real = fs_.RealPath(dev_dir + "/device"); real.ok()) {
      bdf = NormalizeBdf(real->substr(real->rfind('/') + 1));
    }
    // The HCA's model, for comparing its ports with their siblings: hca_type names the
    // chip (MT4129), board_id the card; without hca_type the PCI id says the same.
    std::string model = IdentityAttr(fs_, dev_dir + "/hca_type");
    if (const PcieDevice* pci = model.empty() && !bdf.empty() ? tree_.Find(bdf) : nullptr) {
      model = PciId(pci->vendor, pci->device);
    }
    const std::string board_id = IdentityAttr(fs_, dev_dir + "/board_id");
    const std::string fw_ver = IdentityAttr(fs_, dev_dir + "/fw_ver");
    for (const std::string& port : *ports) {
      auto n = ParseCounter(port);
      if (!n.ok() || *n > 255) continue;
      IbPortInfo p{dev, static_cast<int>(*n), dev_dir + "/ports/" + port, bdf, "", model, board_id, fw_ver, {}};
      if (auto ll = fs_.ReadFile(p.dir + "/link_layer", kMaxAttrBytes); ll.ok()) p.link_layer = FirstLine(*ll);
      if (auto files = fs_.ListDir(p.dir + "/counters"); files.ok()) {
        for (const IbCounterKind& c : kIbCounters) {
          if (std::binary_search(files->begin(), files->end(), std::string(c.file))) p.counters.push_back(c.file);
        }
      } else {
        errors.push_back(files.status());
      }
      ib_ports_.push_back(std::move(p));
    }
  }
}

Observation SysfsCollector::Make(const ComponentRef& ref, ObsKind kind, double value, std::string raw,
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

SysfsCollector::LinkMax SysfsCollector::ReadLinkMax(const PcieDevice& d, std::vector<Status>& errors) const {
  LinkMax m;
  auto read_speed = [&](const PcieDevice& dev, bool report) -> double {
    auto text = fs_.ReadFile(dev.sysfs_dir + "/max_link_speed", kMaxAttrBytes);
    auto v = text.ok() ? ParseLinkSpeed(*text) : Result<double>(text.status());
    if (!v.ok() && report && v.status().code() != StatusCode::kNotFound) {
      errors.push_back(InFile(dev.sysfs_dir + "/max_link_speed", v.status()));
    }
    return v.ok() ? *v : 0;
  };
  auto read_width = [&](const PcieDevice& dev, bool report) -> int {
    auto text = fs_.ReadFile(dev.sysfs_dir + "/max_link_width", kMaxAttrBytes);
    auto v = text.ok() ? ParseLinkWidth(*text) : Result<int>(text.status());
    if (!v.ok() && report && v.status().code() != StatusCode::kNotFound) {
      errors.push_back(InFile(dev.sysfs_dir + "/max_link_width", v.status()));
    }
    return v.ok() ? *v : 0;
  };
  m.device_speed = m.speed = read_speed(d, true);
  m.device_width = m.width = read_width(d, true);
  // The link trains to the slower end: a Gen5 GPU under a Gen4 switch port is not degraded.
  if (const PcieDevice* parent = d.parent() != nullptr ? tree_.Find(*d.parent()) : nullptr) {
    if (double ps = read_speed(*parent, false); ps > 0 && m.speed > 0) m.speed = std::min(m.speed, ps);
    if (int pw = read_width(*parent, false); pw > 0 && m.width > 0) m.width = std::min(m.width, pw);
  }
  return m;
}

void SysfsCollector::CollectLink(const PcieDevice& d, SysfsSample& s) const {
  // Root and downstream ports describe the link *below* them, which the child reports.
  if (d.role == PcieRole::kRootPort || d.port_type == "downstream") return;
  const size_t i = static_cast<size_t>(&d - tree_.devices.data());
  const ComponentRef& ref = pcie_refs_[i];
  const LinkMax& m = link_max_[i];
  if (m.speed > 0) {
    const std::string path = d.sysfs_dir + "/current_link_speed";
    auto text = fs_.ReadFile(path, kMaxAttrBytes);
    auto cur = text.ok() ? ParseLinkSpeed(*text) : Result<double>(text.status());
    if (cur.ok()) {
      Observation o = Make(ref, ObsKind::kPcieLinkSpeed, *cur, path + ": " + FirstLine(*text), s.time_ns);
      o.attrs = {{"max", Num(m.speed)},
                 {"device_max", Num(m.device_speed)},
                 {"gen", Num(PcieGenFromSpeed(*cur))},
                 {"max_gen", Num(PcieGenFromSpeed(m.speed))}};
      s.observations.push_back(std::move(o));
    } else if (cur.status().code() != StatusCode::kUnsupported) {  // "Unknown": link down, width says so
      s.errors.push_back(InFile(path, cur.status()));
    }
  }
  if (m.width > 0) {
    const std::string path = d.sysfs_dir + "/current_link_width";
    auto text = fs_.ReadFile(path, kMaxAttrBytes);
    auto cur = text.ok() ? ParseLinkWidth(*text) : Result<int>(text.status());
    if (cur.ok()) {
      Observation o = Make(ref, ObsKind::kPcieLinkWidth, *cur, path + ": " + FirstLine(*text), s.time_ns);
      o.attrs = {{"max", Num(m.width)}, {"device_max", Num(m.device_width)}};
      s.observations.push_back(std::move(o));
    } else {
      s.errors.push_back(InFile(path, cur.status()));
    }
  }
}

void SysfsCollector::CollectAer(const PcieDevice& d, SysfsSample& s) const {
  const ComponentRef& ref = pcie_refs_[static_cast<size_t>(&d - tree_.devices.data())];
  for (const auto& [file, severity] : kAerFiles) {
    const std::string path = d.sysfs_dir + "/" + file;
    auto text = fs_.ReadFile(path, kMaxAttrBytes);
    if (!text.ok()) {
      // A device without the AER capability has no such file: not an error.
      if (text.status().code() != StatusCode::kNotFound) s.errors.push_back(text.status());
      continue;
    }
    auto counters = ParseAerCounters(*text);
    if (!counters.ok()) {
      s.errors.push_back(InFile(path, counters.status()));
      continue;
    }
    for (const AerCounter& c : *counters) {
      const bool total = c.name.rfind("TOTAL_", 0) == 0;
      if (!total && c.value == 0 && options_.aer_nonzero_only) continue;
      Observation o = Make(ref, ObsKind::kPcieAer, static_cast<double>(c.value),
                           path + ": " + c.name + " " + std::to_string(c.value), s.time_ns);
      o.attrs = {{"severity", severity}, {"error", c.name}};
      s.observations.push_back(std::move(o));
    }
  }
  if (d.role != PcieRole::kRootPort) return;
  for (const auto& [file, severity, name] : kRootPortFiles) {
    const std::string path = d.sysfs_dir + "/" + file;
    auto text = fs_.ReadFile(path, kMaxAttrBytes);
    if (!text.ok()) {
      if (text.status().code() != StatusCode::kNotFound) s.errors.push_back(text.status());
      continue;
    }
    auto v = ParseCounter(*text);
    if (!v.ok()) {
      s.errors.push_back(InFile(path, v.status()));
      continue;
    }
    Observation o = Make(ref, ObsKind::kPcieAer, static_cast<double>(*v), path + ": " + std::to_string(*v), s.time_ns);
    o.attrs = {{"severity", severity}, {"error", name}};
    s.observations.push_back(std::move(o));
  }
}

void SysfsCollector::CollectIb(const IbPortInfo& p, SysfsSample& s) const {
  const ComponentRef ref = IbRef(p);
  auto read = [&](const std::string& file) -> Result<std::string> {
    auto text = fs_.ReadFile(p.dir + "/" + file, kMaxAttrBytes);
    if (!text.ok()) s.errors.push_back(text.status());
    return text;
  };
  if (auto state = read("state"); state.ok()) {
    if (auto st = ParseIbState(*state); st.ok()) {
      Observation o = Make(ref, ObsKind::kIbPortState, st->number, p.dir + "/state: " + FirstLine(*state), s.time_ns);
      o.attrs["state"] = st->name;
      if (auto phys = read("phys_state"); phys.ok()) {
        if (auto ps = ParseIbState(*phys); ps.ok()) {
          o.attrs["phys_state"] = ps->name;
          o.attrs["phys_state_num"] = std::to_string(ps->number);
        } else {
          s.errors.push_back(InFile(p.dir + "/phys_state", ps.status()));
        }
      }
      s.observations.push_back(std::move(o));
    } else {
      s.errors.push_back(InFile(p.dir + "/state", st.status()));
    }
  }
  if (auto rate = read("rate"); rate.ok()) {
    if (auto r = ParseIbRate(*rate); r.ok()) {
      Observation o = Make(ref, ObsKind::kIbRate, *r, p.dir + "/rate: " + FirstLine(*rate), s.time_ns);
      // The node-wide expected rate is for the InfiniBand compute ports; an Ethernet
      // (RoCE / management) port is only judged against a rate given for it explicitly.
      if (topology_ != nullptr) {
        const TopoIbPort* t = topology_->FindIbPort(p.device, p.port);
        const double expected = p.link_layer == "Ethernet" ? (t != nullptr ? t->expected_rate_gbps : 0)
                                                           : topology_->ExpectedIbRate(p.device, p.port);
        if (expected > 0) o.attrs["expected"] = Num(expected);
      }
      s.observations.push_back(std::move(o));
    } else {
      s.errors.push_back(InFile(p.dir + "/rate", r.status()));
    }
  }
  for (const std::string& file : p.counters) {
    auto text = read("counters/" + file);
    if (!text.ok()) continue;
    auto v = ParseCounter(*text);
    if (!v.ok()) {
      if (v.status().code() != StatusCode::kUnsupported)
        s.errors.push_back(InFile(p.dir + "/counters/" + file, v.status()));
      continue;
    }
    ObsKind kind = ObsKind::kOther;
    for (const IbCounterKind& c : kIbCounters) {
      if (file == c.file) kind = c.kind;
    }
    Observation o =
        Make(ref, kind, static_cast<double>(*v), p.dir + "/counters/" + file + ": " + std::to_string(*v), s.time_ns);
    o.attrs["counter"] = file;
    if (IbCounterSaturated(file, *v)) {
      o.attrs["saturated"] = "true";
      o.attrs["counter_max"] = std::to_string(*v);
    }
    s.observations.push_back(std::move(o));
  }
}

SysfsSample SysfsCollector::Collect() {
  SysfsSample s;
  s.time_ns = clock_.NowNs();
  if (!discovered_) Discover(s.errors);
  for (const PcieDevice& d : tree_.devices) {
    CollectLink(d, s);
    CollectAer(d, s);
  }
  for (const IbPortInfo& p : ib_ports_) CollectIb(p, s);
  return s;
}

}  // namespace faultline
