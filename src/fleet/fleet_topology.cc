#include "fleet/fleet_topology.h"

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "core/json.h"
#include "fleet/names.h"

namespace faultline::fleet {
namespace {

// Thrown inside this file only; ParseFleetTopology turns it into a Status.
struct TopoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct TopoLimit : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr int kMaxDepth = 16;
// The analyzer keeps names of at most this many bytes (names.h): a longer one here could
// never match the node's cut name on the wire.
constexpr size_t kMaxName = kMaxNameBytes;

void RequireObject(const Json& j, const std::string& where, std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) throw TopoError(where + ": expected an object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) throw TopoError(where + ": unknown key \"" + key + "\"");
  }
}

const Json* FieldOf(const Json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string Str(const Json& j, const char* key, const std::string& where) {
  const Json* f = FieldOf(j, key);
  if (f == nullptr) return "";
  std::string s;
  if (f->is_string()) {
    s = f->get<std::string>();
  } else if (f->is_number_integer()) {
    // Switch ports and rack numbers are often written as numbers; accept both.
    s = std::to_string(f->get<int64_t>());
  } else {
    throw TopoError(where + "." + key + ": expected a string");
  }
  if (s.size() > kMaxName) throw TopoError(where + "." + key + ": longer than " + std::to_string(kMaxName));
  return s;
}

int Port(const Json& j, const char* key, const std::string& where, int fallback) {
  const Json* f = FieldOf(j, key);
  if (f == nullptr) return fallback;
  if (!f->is_number_integer()) throw TopoError(where + "." + key + ": expected an integer");
  const int64_t v = f->get<int64_t>();
  if (v < 0 || v > 65535) throw TopoError(where + "." + key + ": out of range");
  return static_cast<int>(v);
}

const Json& Array(const Json& j, const char* key, const std::string& where) {
  static const Json kEmpty = Json::array();
  const Json* f = FieldOf(j, key);
  if (f == nullptr) return kEmpty;
  if (!f->is_array()) throw TopoError(where + "." + key + ": expected an array");
  if (f->size() > kMaxFleetTopologyEntries) throw TopoLimit(where + "." + key + ": too many entries");
  return *f;
}

FleetNode ParseNode(const Json& j, const std::string& where) {
  RequireObject(j, where, {"name", "site", "rack", "pdu", "feed", "cooling_loop", "leaf_switch", "driver"});
  FleetNode n;
  n.name = Str(j, "name", where);
  if (n.name.empty()) throw TopoError(where + ".name: required");
  n.site = Str(j, "site", where);
  n.rack = Str(j, "rack", where);
  n.pdu = Str(j, "pdu", where);
  n.feed = Str(j, "feed", where);
  n.cooling_loop = Str(j, "cooling_loop", where);
  n.leaf_switch = Str(j, "leaf_switch", where);
  n.driver = Str(j, "driver", where);
  return n;
}

CableEnd ParseEnd(const Json& j, const std::string& where) {
  RequireObject(j, where, {"node", "device", "port", "switch", "switch_port"});
  CableEnd e;
  e.node = Str(j, "node", where);
  e.device = Str(j, "device", where);
  e.port = Port(j, "port", where, 1);
  e.switch_name = Str(j, "switch", where);
  e.switch_port = Str(j, "switch_port", where);
  if (e.node.empty() == e.switch_name.empty()) throw TopoError(where + ": needs exactly one of node or switch");
  if (!e.node.empty() && e.device.empty()) throw TopoError(where + ".device: required for a node end");
  return e;
}

Cable ParseCable(const Json& j, const std::string& where) {
  RequireObject(j, where, {"id", "a", "b"});
  Cable c;
  c.id = Str(j, "id", where);
  if (c.id.empty()) throw TopoError(where + ".id: required");
  const Json* a = FieldOf(j, "a");
  const Json* b = FieldOf(j, "b");
  if (a == nullptr || b == nullptr) throw TopoError(where + ": needs both ends a and b");
  c.a = ParseEnd(*a, where + ".a");
  c.b = ParseEnd(*b, where + ".b");
  return c;
}

FleetTopology ParseRoot(const Json& root) {
  RequireObject(root, "fleet topology", {"site", "nodes", "cables"});
  FleetTopology t;
  if (std::string site = Str(root, "site", "fleet topology"); !site.empty()) t.site = site;
  const Json& nodes = Array(root, "nodes", "fleet topology");
  const Json& cables = Array(root, "cables", "fleet topology");
  if (nodes.size() + cables.size() > kMaxFleetTopologyEntries) throw TopoLimit("fleet topology: too many entries");
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = "nodes[" + std::to_string(i) + "]";
    FleetNode n = ParseNode(nodes[i], where);
    if (!names.insert(n.name).second) throw TopoError(where + ".name: duplicate node \"" + n.name + "\"");
    t.nodes.push_back(std::move(n));
  }
  std::set<std::string, std::less<>> ids;
  for (size_t i = 0; i < cables.size(); ++i) {
    const std::string where = "cables[" + std::to_string(i) + "]";
    Cable c = ParseCable(cables[i], where);
    if (!ids.insert(c.id).second) throw TopoError(where + ".id: duplicate cable \"" + c.id + "\"");
    t.cables.push_back(std::move(c));
  }
  return t;
}

bool EndMatches(const CableEnd& e, std::string_view node, std::string_view device, int port) {
  if (e.node.empty() || e.node != node) return false;
  if (!device.empty() && e.device != device) return false;
  return port == 0 || e.port == port;
}

}  // namespace

const FleetNode* FleetTopology::FindNode(std::string_view name) const {
  for (const FleetNode& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::vector<const Cable*> FleetTopology::CablesOf(std::string_view node, std::string_view device, int port) const {
  std::vector<const Cable*> out;
  for (const Cable& c : cables) {
    if (EndMatches(c.a, node, device, port) || EndMatches(c.b, node, device, port)) out.push_back(&c);
  }
  return out;
}

Result<FleetTopology> ParseFleetTopology(std::string_view text) {
  if (text.size() > kMaxFleetTopologyBytes) {
    return Status(StatusCode::kInvalidArgument,
                  "fleet topology: larger than " + std::to_string(kMaxFleetTopologyBytes) + " bytes");
  }
  if (JsonNestingDepth(text) > kMaxDepth) return Status(StatusCode::kCorrupt, "fleet topology: nested too deeply");
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Status(StatusCode::kCorrupt, "fleet topology: not valid JSON");
  try {
    return ParseRoot(root);
  } catch (const TopoLimit& e) {
    return Status(StatusCode::kInvalidArgument, e.what());
  } catch (const std::exception& e) {
    return Status(StatusCode::kCorrupt, std::string("fleet topology: ") + e.what());
  }
}

}  // namespace faultline::fleet
