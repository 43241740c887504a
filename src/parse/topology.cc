#include "parse/topology.h"

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/inventory.h"

namespace faultline {
namespace {

using Json = nlohmann::json;

// Thrown inside this file only; ParseTopology turns it into a Status.
struct TopoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void RequireObject(const Json& j, std::string_view where, std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) throw TopoError(std::string(where) + ": expected an object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) throw TopoError(std::string(where) + ": unknown key \"" + key + "\"");
  }
}

const Json* Field(const Json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string Str(const Json& j, const char* key, std::string_view where) {
  const Json* f = Field(j, key);
  if (f == nullptr) return "";
  if (f->is_string()) return f->get<std::string>();
  // Port numbers and slot names are often written as numbers; accept both.
  if (f->is_number_integer()) return std::to_string(f->get<int64_t>());
  throw TopoError(std::string(where) + "." + key + ": expected a string");
}

int Int(const Json& j, const char* key, std::string_view where, int fallback, int lo = -1, int hi = 1 << 20) {
  const Json* f = Field(j, key);
  if (f == nullptr) return fallback;
  if (!f->is_number_integer()) throw TopoError(std::string(where) + "." + key + ": expected an integer");
  const int64_t v = f->get<int64_t>();
  if (v < lo || v > hi) throw TopoError(std::string(where) + "." + key + ": out of range");
  return static_cast<int>(v);
}

double Rate(const Json& j, const char* key, std::string_view where) {
  const Json* f = Field(j, key);
  if (f == nullptr) return 0;
  if (!f->is_number()) throw TopoError(std::string(where) + "." + key + ": expected a number");
  const double v = f->get<double>();
  if (!(v >= 0 && v <= 1e6)) throw TopoError(std::string(where) + "." + key + ": out of range");
  return v;
}

const Json& Array(const Json& j, const char* key, std::string_view where) {
  static const Json kEmpty = Json::array();
  const Json* f = Field(j, key);
  if (f == nullptr) return kEmpty;
  if (!f->is_array()) throw TopoError(std::string(where) + "." + key + ": expected an array");
  if (f->size() > kMaxTopologyEntries) throw TopoError(std::string(where) + "." + key + ": too many entries");
  return *f;
}

std::string Bdf(const Json& j, const char* key, std::string_view where) {
  std::string raw = Str(j, key, where);
  if (raw.empty()) return raw;
  std::string bdf = NormalizeBdf(raw);
  if (bdf.empty()) throw TopoError(std::string(where) + "." + key + ": not a PCI address: " + raw);
  return bdf;
}

TopoNvlink ParseNvlink(const Json& j, const std::string& where) {
  RequireObject(j, where, {"link", "nvswitch", "port", "peer_gpu", "peer_link", "cable"});
  TopoNvlink l;
  l.link = Int(j, "link", where, -1, 0, 4096);
  if (l.link < 0) throw TopoError(where + ".link: required");
  l.nvswitch = Str(j, "nvswitch", where);
  l.port = Int(j, "port", where, -1, 0, 65535);
  if (Field(j, "peer_gpu")) l.peer_gpu = Int(j, "peer_gpu", where, -1, 0, 4096);
  if (Field(j, "peer_link")) l.peer_link = Int(j, "peer_link", where, -1, 0, 4096);
  l.cable = Str(j, "cable", where);
  return l;
}

TopoGpu ParseGpu(const Json& j, const std::string& where) {
  RequireObject(j, where, {"index", "bdf", "serial", "nvlinks"});
  TopoGpu g;
  g.index = Int(j, "index", where, -1, 0, 4096);
  if (g.index < 0) throw TopoError(where + ".index: required");
  g.bdf = Bdf(j, "bdf", where);
  g.serial = Str(j, "serial", where);
  const Json& links = Array(j, "nvlinks", where);
  for (size_t i = 0; i < links.size(); ++i)
    g.nvlinks.push_back(ParseNvlink(links[i], where + ".nvlinks[" + std::to_string(i) + "]"));
  return g;
}

TopoIbPort ParseIb(const Json& j, const std::string& where) {
  RequireObject(j, where, {"device", "port", "switch", "switch_port", "cable", "expected_rate_gbps"});
  TopoIbPort p;
  p.device = Str(j, "device", where);
  if (p.device.empty()) throw TopoError(where + ".device: required");
  p.port = Int(j, "port", where, 1, 0, 255);
  p.switch_name = Str(j, "switch", where);
  p.switch_port = Str(j, "switch_port", where);
  p.cable = Str(j, "cable", where);
  p.expected_rate_gbps = Rate(j, "expected_rate_gbps", where);
  return p;
}

Topology ParseRoot(const Json& root) {
  RequireObject(root, "topology", {"node", "expected_ib_rate_gbps", "gpus", "nvswitches", "ib", "pcie_slots"});
  Topology t;
  t.node = Str(root, "node", "topology");
  t.expected_ib_rate_gbps = Rate(root, "expected_ib_rate_gbps", "topology");
  const Json& gpus = Array(root, "gpus", "topology");
  for (size_t i = 0; i < gpus.size(); ++i) t.gpus.push_back(ParseGpu(gpus[i], "gpus[" + std::to_string(i) + "]"));
  const Json& sws = Array(root, "nvswitches", "topology");
  for (size_t i = 0; i < sws.size(); ++i) {
    const std::string where = "nvswitches[" + std::to_string(i) + "]";
    RequireObject(sws[i], where, {"name", "bdf"});
    TopoNvswitch s{Str(sws[i], "name", where), Bdf(sws[i], "bdf", where)};
    if (s.name.empty()) throw TopoError(where + ".name: required");
    t.nvswitches.push_back(std::move(s));
  }
  const Json& ib = Array(root, "ib", "topology");
  for (size_t i = 0; i < ib.size(); ++i) t.ib_ports.push_back(ParseIb(ib[i], "ib[" + std::to_string(i) + "]"));
  const Json& slots = Array(root, "pcie_slots", "topology");
  for (size_t i = 0; i < slots.size(); ++i) {
    const std::string where = "pcie_slots[" + std::to_string(i) + "]";
    RequireObject(slots[i], where, {"slot", "bdf", "riser"});
    TopoPcieSlot s{Str(slots[i], "slot", where), Bdf(slots[i], "bdf", where), Str(slots[i], "riser", where)};
    if (s.slot.empty() && s.bdf.empty()) throw TopoError(where + ": needs slot or bdf");
    t.pcie_slots.push_back(std::move(s));
  }
  return t;
}

}  // namespace

Result<Topology> ParseTopology(std::string_view text) {
  if (text.size() > kMaxTopologyBytes) {
    return Status(StatusCode::kInvalidArgument,
                  "topology: file larger than " + std::to_string(kMaxTopologyBytes) + " bytes");
  }
  try {
    // Depth limit: the format is at most four levels deep; refuse pathological nesting
    // before the recursive parser sees it.
    int depth = 0, max_depth = 0;
    for (char c : text) {
      if (c == '{' || c == '[') max_depth = std::max(max_depth, ++depth);
      if (c == '}' || c == ']') --depth;
    }
    if (max_depth > 64) return Status(StatusCode::kCorrupt, "topology: nested too deeply");
    return ParseRoot(Json::parse(text));
  } catch (const TopoError& e) {
    return Status(StatusCode::kCorrupt, std::string("topology: ") + e.what());
  } catch (const std::exception& e) {
    return Status(StatusCode::kCorrupt, std::string("topology: ") + e.what());
  }
}

const TopoNvlink* Topology::FindNvlink(int gpu, int link) const {
  for (const TopoGpu& g : gpus) {
    if (g.index != gpu) continue;
    for (const TopoNvlink& l : g.nvlinks) {
      if (l.link == link) return &l;
    }
  }
  return nullptr;
}

std::vector<std::pair<int, int>> Topology::GpuLinksOnSwitchPort(std::string_view nvswitch, int port) const {
  std::vector<std::pair<int, int>> out;
  for (const TopoGpu& g : gpus) {
    for (const TopoNvlink& l : g.nvlinks) {
      if (l.nvswitch == nvswitch && l.port == port) out.emplace_back(g.index, l.link);
    }
  }
  return out;
}

void AddPlacementKeys(const TopoIbPort& port, std::map<std::string, std::string>& keys) {
  if (!port.switch_name.empty()) keys["switch"] = port.switch_name;
  if (!port.switch_port.empty()) keys["switch_port"] = port.switch_port;
  if (!port.cable.empty()) keys["cable"] = port.cable;
}

const TopoIbPort* Topology::FindIbPort(std::string_view device, int port) const {
  for (const TopoIbPort& p : ib_ports) {
    if (p.device == device && p.port == port) return &p;
  }
  return nullptr;
}

const TopoIbPort* Topology::FindIbBySwitchPort(std::string_view switch_name, std::string_view switch_port) const {
  for (const TopoIbPort& p : ib_ports) {
    if (!p.switch_name.empty() && p.switch_name == switch_name && p.switch_port == switch_port) return &p;
  }
  return nullptr;
}

double Topology::ExpectedIbRate(std::string_view device, int port) const {
  const TopoIbPort* p = FindIbPort(device, port);
  if (p != nullptr && p->expected_rate_gbps > 0) return p->expected_rate_gbps;
  return expected_ib_rate_gbps;
}

std::string Topology::RiserFor(std::string_view slot, std::string_view bdf) const {
  for (const TopoPcieSlot& s : pcie_slots) {
    if (!bdf.empty() && s.bdf == bdf) return s.riser;
  }
  for (const TopoPcieSlot& s : pcie_slots) {
    if (!slot.empty() && s.slot == slot) return s.riser;
  }
  return "";
}

std::string Topology::NvswitchName(std::string_view name_or_bdf) const {
  for (const TopoNvswitch& s : nvswitches) {
    if (s.name == name_or_bdf || (!s.bdf.empty() && s.bdf == NormalizeBdf(name_or_bdf))) return s.name;
  }
  return "";
}

}  // namespace faultline
