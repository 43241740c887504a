#include "fleet/correlate.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace faultline::fleet {

TopologyIndex::TopologyIndex(const FleetTopology& topology) : topology_(&topology) {
  for (const FleetNode& n : topology.nodes) nodes_.emplace(n.name, &n);
  for (const Cable& c : topology.cables) {
    for (const CableEnd* e : {&c.a, &c.b}) {
      if (!e->node.empty()) cable_ends_.emplace(std::make_tuple(e->node, e->device, e->port), &c);
    }
  }
  for (const FleetNode& n : topology.nodes) {
    if (!n.pdu.empty()) on_part_[{0, n.pdu}].push_back(&n);
    if (!n.feed.empty()) on_part_[{1, n.feed}].push_back(&n);
    if (!n.cooling_loop.empty()) on_part_[{2, n.cooling_loop}].push_back(&n);
  }
}

const std::vector<const FleetNode*>& TopologyIndex::NodesOn(std::string FleetNode::*field,
                                                            const std::string& part) const {
  static const std::vector<const FleetNode*> kNone;
  const int which = field == &FleetNode::pdu            ? 0
                    : field == &FleetNode::feed         ? 1
                    : field == &FleetNode::cooling_loop ? 2
                                                        : -1;
  auto it = on_part_.find({which, part});
  return it == on_part_.end() ? kNone : it->second;
}

const FleetNode* TopologyIndex::Node(std::string_view name) const {
  auto it = nodes_.find(std::string(name));
  return it == nodes_.end() ? nullptr : it->second;
}

const Cable* TopologyIndex::CableAt(std::string_view node, std::string_view device, int port) const {
  auto it = cable_ends_.find(std::make_tuple(std::string(node), std::string(device), port));
  return it == cable_ends_.end() ? nullptr : it->second;
}

std::string_view CorrelationFamily(FaultClass c) {
  switch (c) {
    case FaultClass::kPowerSupply:
    case FaultClass::kPowerInsufficient:
    case FaultClass::kVoltageOutOfRange:
    case FaultClass::kGpuPowerBrake:
      return "power";
    case FaultClass::kThermalInlet:
    case FaultClass::kCoolingDegraded:
    case FaultClass::kCoolantLeak:
    case FaultClass::kGpuThermal:
      return "cooling";
    case FaultClass::kIbLinkErrors:
    case FaultClass::kIbLinkDown:
    case FaultClass::kNvlinkErrors:
    case FaultClass::kNvlinkDown:
      return "link";
    case FaultClass::kDriverFault:
    case FaultClass::kGspFirmware:
      return "driver";
    case FaultClass::kFabricCongestion:
      return "congestion";
    default:
      return "";
  }
}

std::pair<std::string, int> LinkEnd(const ComponentRef& component) {
  int port = 0;
  auto dev = component.keys.find("device");
  auto p = component.keys.find("port");
  if (dev != component.keys.end()) {
    if (p != component.keys.end()) std::from_chars(p->second.data(), p->second.data() + p->second.size(), port);
    return {dev->second, port};
  }
  const std::string& name = component.name;
  const size_t slash = name.rfind('/');
  if (slash == std::string::npos) return {name, 0};
  auto [end, ec] = std::from_chars(name.data() + slash + 1, name.data() + name.size(), port);
  if (ec != std::errc() || end != name.data() + name.size()) return {name, 0};
  return {name.substr(0, slash), port};
}

Action ActionFor(std::string_view cause) {
  if (cause == "cable") return Action::kReseatOrReplaceLink;
  if (cause == "driver") return Action::kDriverUpgrade;
  if (cause == "straggler") return Action::kNotifyUser;
  return Action::kFacilityTicket;
}

std::string CauseComponent(std::string_view cause, std::string_view part) {
  return std::string(cause) + "/" + std::string(part);
}

namespace {

// The classes a single GPU can have on its own (its fan, paste, cold plate, power stage).
bool PerGpuClass(FaultClass c) { return c == FaultClass::kGpuThermal || c == FaultClass::kGpuPowerBrake; }

// Per family, the nodes with node-wide evidence: a diagnosis of a class that is not per
// GPU, one on a non-GPU component, or per-GPU diagnoses of the family on 2+ distinct GPUs.
std::map<std::string, std::set<std::string>, std::less<>> NodeWide(const std::vector<HeldRef>& refs) {
  std::map<std::string, std::set<std::string>, std::less<>> wide;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> gpus;  // (family, node) -> GPUs
  for (const HeldRef& r : refs) {
    if (r.diagnosis == nullptr) continue;
    const std::string family(CorrelationFamily(r.diagnosis->fault_class));
    if (family.empty()) continue;
    if (!PerGpuClass(r.diagnosis->fault_class) || r.diagnosis->component.type != ComponentType::kGpu) {
      wide[family].insert(r.node);
      continue;
    }
    auto& seen = gpus[{family, r.node}];
    seen.insert(r.diagnosis->component.name);
    if (seen.size() >= 2) wide[family].insert(r.node);
  }
  return wide;
}

// Working state of one Correlate call.
struct Pass {
  const std::vector<HeldRef>& refs;
  const TopologyIndex& topology;
  const CorrelateOptions& options;
  const ReportingFn& reporting;
  std::vector<bool> taken;
  std::vector<SharedCause> out;
  std::map<std::string, std::set<std::string>, std::less<>> wide = NodeWide(refs);
  std::set<std::string_view> with_refs = [this] {
    std::set<std::string_view> s;
    for (const HeldRef& r : refs) s.insert(r.node);
    return s;
  }();

  const FleetNode* NodeOf(size_t i) const { return topology.Node(refs[i].node); }
  bool Eligible(size_t i, std::string_view family) const {
    if (taken[i] || refs[i].diagnosis == nullptr || CorrelationFamily(refs[i].diagnosis->fault_class) != family ||
        NodeOf(i) == nullptr)
      return false;
    if (family != "power" && family != "cooling") return true;
    auto w = wide.find(family);
    return w != wide.end() && w->second.count(refs[i].node) != 0;
  }
  // The nodes on a part that are reporting (at least those with a diagnosis held).
  size_t ReportingOn(std::string FleetNode::*field, const std::string& part) const {
    size_t n = 0;
    for (const FleetNode* node : topology.NodesOn(field, part)) {
      if (with_refs.count(node->name) != 0 || (reporting && reporting(node->name))) ++n;
    }
    return n;
  }
  // Enough nodes, and a real share of the part's reporting nodes.
  bool RealShare(const std::vector<size_t>& members, std::string FleetNode::*field, const std::string& part) const {
    const size_t affected = DistinctNodes(members);
    const double of = static_cast<double>(std::max(ReportingOn(field, part), affected));
    return affected >= std::max<size_t>(options.min_nodes, 1) &&
           static_cast<double>(affected) >= options.min_share * of;
  }
  // Members grouped by a part name; "" parts are skipped.
  template <typename PartOf>
  std::map<std::string, std::vector<size_t>> Group(std::string_view family, PartOf part_of) const {
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t i = 0; i < refs.size(); ++i) {
      if (!Eligible(i, family)) continue;
      std::string part = part_of(i);
      if (!part.empty()) groups[part].push_back(i);
    }
    return groups;
  }
  size_t DistinctNodes(const std::vector<size_t>& members) const {
    std::set<std::string_view> nodes;
    for (size_t i : members) nodes.insert(refs[i].node);
    return nodes.size();
  }
  void Emit(std::string cause, std::string part, const std::vector<size_t>& members) {
    for (size_t i : members) taken[i] = true;
    out.push_back({std::move(cause), std::move(part), members});
  }
  // Every group of at least `min` distinct nodes becomes a cause.
  void EmitGroups(const std::string& cause, const std::map<std::string, std::vector<size_t>>& groups, size_t min) {
    for (const auto& [part, members] : groups) {
      if (DistinctNodes(members) >= std::max<size_t>(min, 1)) Emit(cause, part, members);
    }
  }
};

void CableRule(Pass& p) {
  auto groups = p.Group("link", [&](size_t i) {
    auto [device, port] = LinkEnd(p.refs[i].diagnosis->component);
    const Cable* c = p.topology.CableAt(p.refs[i].node, device, port);
    // Only a node-to-node cable has two ends that can both report.
    return c != nullptr && !c->a.node.empty() && !c->b.node.empty() ? c->id : std::string();
  });
  p.EmitGroups("cable", groups, 2);
}

// The switch a diagnosed port lands on: its cable's switch end, else the node's leaf.
std::string SwitchOf(const Pass& p, size_t i) {
  auto [device, port] = LinkEnd(p.refs[i].diagnosis->component);
  if (const Cable* c = p.topology.CableAt(p.refs[i].node, device, port)) {
    if (!c->a.switch_name.empty()) return c->a.switch_name;
    if (!c->b.switch_name.empty()) return c->b.switch_name;
  }
  return p.NodeOf(i)->leaf_switch;
}

void SwitchRule(Pass& p) {
  auto groups = p.Group("link", [&](size_t i) { return SwitchOf(p, i); });
  p.EmitGroups("switch", groups, std::max(p.options.min_switch_ports, p.options.min_nodes));
}

// Congestion (PFC storms, ECN/CNP surges without loss) on the ports of several nodes under
// one switch is that switch's traffic, one cause for the fabric's owners; on one node it
// stays that node's (its job's traffic).
void CongestionRule(Pass& p) {
  auto groups = p.Group("congestion", [&](size_t i) { return SwitchOf(p, i); });
  p.EmitGroups("congestion", groups, p.options.min_nodes);
}

void PowerRules(Pass& p) {
  // A feed first: nodes on several of its PDUs suffering at once is upstream of any one PDU.
  auto feeds = p.Group("power", [&](size_t i) { return p.NodeOf(i)->feed; });
  for (const auto& [feed, members] : feeds) {
    std::set<std::string> pdus;
    for (size_t i : members) pdus.insert(p.NodeOf(i)->pdu);
    if (pdus.size() >= 2 && p.RealShare(members, &FleetNode::feed, feed)) p.Emit("feed", feed, members);
  }
  for (const auto& [pdu, members] : p.Group("power", [&](size_t i) { return p.NodeOf(i)->pdu; })) {
    if (p.RealShare(members, &FleetNode::pdu, pdu)) p.Emit("pdu", pdu, members);
  }
}

void CoolingRule(Pass& p) {
  for (const auto& [loop, members] : p.Group("cooling", [&](size_t i) { return p.NodeOf(i)->cooling_loop; })) {
    if (p.RealShare(members, &FleetNode::cooling_loop, loop)) p.Emit("cooling_loop", loop, members);
  }
}

void DriverRule(Pass& p) {
  auto groups = p.Group("driver", [&](size_t i) { return p.NodeOf(i)->driver; });
  // One version alone: the same fault on several versions is not the version's doing.
  if (groups.size() != 1) return;
  p.EmitGroups("driver", groups, p.options.min_nodes);
}

}  // namespace

std::vector<SharedCause> Correlate(const std::vector<HeldRef>& refs, const TopologyIndex& topology,
                                   const CorrelateOptions& options, const ReportingFn& reporting) {
  Pass p{refs, topology, options, reporting, std::vector<bool>(refs.size(), false), {}};
  CableRule(p);
  SwitchRule(p);
  CongestionRule(p);
  PowerRules(p);
  CoolingRule(p);
  DriverRule(p);
  return std::move(p.out);
}

}  // namespace faultline::fleet
