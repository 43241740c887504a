#include "engine/detect/fabric_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace faultline::fabric {
namespace {

bool IsDown(FaultClass c) { return c == FaultClass::kNvlinkDown || c == FaultClass::kIbLinkDown; }

std::string Join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : "; ") + s;
  return out;
}

// Applies an issue's caps (EndIssue::max_confidence, monitor_only) to a finding built from it.
void ApplyCaps(Finding& f, const EndIssue& issue) {
  f.confidence = std::min(f.confidence, issue.max_confidence);
  if (issue.monitor_only) f.action = Action::kMonitor;
}

void Merge(Finding& into, const EndIssue& other, size_t max_evidence) {
  into.first_ns = std::min(into.first_ns, other.first_ns);
  into.last_ns = std::max(into.last_ns, other.last_ns);
  into.count += other.count;
  into.severity = std::max(into.severity, other.severity);
  if (IsDown(other.fault_class)) into.fault_class = other.fault_class;
  for (const Evidence& e : other.evidence) AddEvidence(into.evidence, e, max_evidence);
}

bool Recent(const EndIssue& a, const EndIssue& b, const FabricOptions& opt) {
  return a.last_ns + opt.correlation_window_ns >= b.first_ns && b.last_ns + opt.correlation_window_ns >= a.first_ns;
}

Finding SwitchFinding(const std::string& name, const std::vector<const LinkEnd*>& ends, FaultClass cls, Action action,
                      ComponentType type, const FabricOptions& opt) {
  Finding f = FindingFrom(*ends.front()->issue);
  f.fault_class = cls;
  f.component = ComponentRef{type, name, {}};
  f.component.keys["switch"] = name;
  f.count = 0;
  f.evidence.clear();
  std::set<std::string> ports;
  for (const LinkEnd* e : ends) {
    Merge(f, *e->issue, opt.max_evidence);
    ports.insert(e->switch_port);
  }
  f.fault_class = cls;
  f.severity = std::max(f.severity, Severity::kCritical);
  f.action = action;
  f.confidence = 0.8;
  // Every port judged from one sample only ("since unknown"): say so in the confidence.
  double cap = 0;
  for (const LinkEnd* e : ends) cap = std::max(cap, e->issue->max_confidence);
  f.confidence = std::min(f.confidence, cap);
  std::string list;
  for (const std::string& p : ports) list += (list.empty() ? "" : ",") + p;
  f.attrs = {{"placement", "switch"}, {"part", "switch " + name}, {"ports", list}};
  f.summary = std::to_string(ports.size()) + " ports of switch " + name + " (" + list +
              ") show errors at once: suspect the switch itself, not the individual links";
  return f;
}

Finding CableFinding(const LinkEnd& a, const LinkEnd& b, const FabricOptions& opt) {
  const LinkEnd& dev = b.device_end && !a.device_end ? b : a;  // name the node-side end
  const LinkEnd& far = &dev == &a ? b : a;
  Finding f = FindingFrom(*dev.issue);
  Merge(f, *far.issue, opt.max_evidence);
  const std::string part = !dev.cable.empty()   ? "cable " + dev.cable
                           : !far.cable.empty() ? "cable " + far.cable
                                                : "cable/connector between " + dev.id + " and " + far.id;
  f.action = Action::kReseatOrReplaceLink;
  f.confidence = 0.85;
  f.attrs["placement"] = "cable";
  f.attrs["part"] = part;
  f.attrs["peer"] = far.id;
  if (!dev.cable.empty() || !far.cable.empty()) f.attrs["cable"] = !dev.cable.empty() ? dev.cable : far.cable;
  if (!dev.switch_name.empty()) f.attrs["switch"] = dev.switch_name;
  if (!dev.switch_port.empty()) f.attrs["switch_port"] = dev.switch_port;
  // One solid end is enough to name the cable: the weaker end does not lower it.
  if (dev.issue->max_confidence < 1.0 && far.issue->max_confidence < 1.0) {
    f.confidence = std::min(f.confidence, std::max(dev.issue->max_confidence, far.issue->max_confidence));
  }
  f.summary = "errors on both ends of " + dev.id + " <-> " + far.id + " (" + Join(dev.issue->reasons) + " | " +
              Join(far.issue->reasons) + "): reseat or replace " + part;
  return f;
}

Finding PortFinding(const LinkEnd& e, bool peer_seen, const FabricOptions& opt) {
  Finding f = FindingFrom(*e.issue);
  const bool rma = e.device_end && e.issue->episodes >= opt.rma_after_episodes;
  f.action = rma ? Action::kRma : Action::kReseatOrReplaceLink;
  f.confidence = peer_seen ? 0.8 : 0.6;
  f.attrs["placement"] = rma ? "device" : "port";
  f.attrs["part"] = e.port_part;
  f.attrs["peer_data"] = e.peer.empty() ? "unknown" : peer_seen ? "clean" : "absent";
  if (!e.peer.empty()) f.attrs["peer"] = e.peer;
  if (!e.cable.empty()) f.attrs["cable"] = e.cable;
  if (!e.switch_name.empty()) f.attrs["switch"] = e.switch_name;
  if (!e.switch_port.empty()) f.attrs["switch_port"] = e.switch_port;
  std::string why = peer_seen        ? "the other end (" + e.peer + ") is clean"
                    : e.peer.empty() ? "far end unknown"
                                     : "no data from the other end (" + e.peer + ")";
  f.summary = e.id + ": " + Join(e.issue->reasons) + "; " + why + ": ";
  ApplyCaps(f, *e.issue);
  if (e.issue->monitor_only) {
    f.summary += "check whether " + e.port_part + " is meant to be cabled";
  } else if (rma) {
    f.summary +=
        "single failing end in " + std::to_string(e.issue->episodes) + " separate episodes, RMA " + e.port_part;
  } else {
    f.summary +=
        "reseat or replace " + e.port_part + (peer_seen || e.cable.empty() ? "" : " (or cable " + e.cable + ")");
  }
  return f;
}

}  // namespace

std::optional<CounterDelta> CounterTracker::Update(const std::string& key, double value, int64_t time_ns) {
  auto it = last_.find(key);
  if (it == last_.end()) {
    last_.emplace(key, Last{value, time_ns});
    return std::nullopt;
  }
  Last prev = it->second;
  if (time_ns < prev.time_ns) return std::nullopt;  // out of order: keep the newer baseline
  it->second = Last{value, time_ns};
  if (value < prev.value) return std::nullopt;  // counter reset: new baseline
  return CounterDelta{value - prev.value, static_cast<double>(time_ns - prev.time_ns) / 1e9};
}

void AddEvidence(std::vector<Evidence>& list, Evidence e, size_t max) {
  if (max == 0) return;
  if (list.size() < max) {
    list.push_back(std::move(e));
  } else {
    list.back() = std::move(e);
  }
}

void EndIssue::Mark(const Observation& obs, FaultClass cls, Severity sev, const std::string& reason,
                    const FabricOptions& opt) {
  const int64_t t = obs.time_ns;
  if (count == 0 || t - last_ns > opt.episode_gap_ns) ++episodes;
  if (count == 0) {
    component = obs.component;
    first_ns = t;
  }
  last_ns = std::max(last_ns, t);
  ++count;
  if (fault_class == FaultClass::kNone || IsDown(cls)) fault_class = cls;
  severity = std::max(severity, sev);
  if (reasons.size() < 8) reasons.insert(reason);
  Evidence e = EvidenceFrom(obs);
  if (e.text.empty()) e.text = reason;
  AddEvidence(evidence, std::move(e), opt.max_evidence);
}

Finding FindingFrom(const EndIssue& issue, Layer layer) {
  Finding f;
  f.layer = layer;
  f.component = issue.component;
  f.fault_class = issue.fault_class;
  f.severity = issue.severity;
  f.first_ns = issue.first_ns;
  f.last_ns = issue.last_ns;
  f.count = issue.count;
  f.evidence = issue.evidence;
  f.attrs = issue.attrs;
  f.attrs["episodes"] = std::to_string(issue.episodes);
  return f;
}

std::vector<Finding> PlaceLinkFaults(const std::vector<LinkEnd>& ends, const std::set<std::string>& observed,
                                     FaultClass switch_class, Action switch_action, const FabricOptions& opt) {
  std::vector<Finding> out;
  std::set<std::string> used;
  // 1. Many ports of one switch at once: the switch.
  std::map<std::string, std::vector<const LinkEnd*>> by_switch;
  for (const LinkEnd& e : ends) {
    if (!e.switch_name.empty() && !e.switch_port.empty()) by_switch[e.switch_name].push_back(&e);
  }
  for (const auto& [name, list] : by_switch) {
    std::set<std::string> ports;
    for (const LinkEnd* e : list) ports.insert(e->switch_port);
    if (static_cast<int>(ports.size()) < opt.switch_ports_for_switch_fault) continue;
    out.push_back(SwitchFinding(name, list, switch_class, switch_action, list.front()->switch_type, opt));
    for (const LinkEnd* e : list) used.insert(e->id);
  }
  std::map<std::string, const LinkEnd*> by_id;
  for (const LinkEnd& e : ends) by_id[e.id] = &e;
  // 2. Both ends of one link at about the same time: the cable/connector.
  for (const LinkEnd& e : ends) {
    if (used.count(e.id) || e.peer.empty()) continue;
    auto peer = by_id.find(e.peer);
    if (peer == by_id.end() || used.count(e.peer) || !Recent(*e.issue, *peer->second->issue, opt)) continue;
    out.push_back(CableFinding(e, *peer->second, opt));
    used.insert(e.id);
    used.insert(e.peer);
  }
  // 3. One end only: that end's port/transceiver (or the device, when it keeps failing).
  for (const LinkEnd& e : ends) {
    if (used.count(e.id)) continue;
    out.push_back(PortFinding(e, !e.peer.empty() && observed.count(e.peer) > 0, opt));
  }
  return out;
}

std::string FormatRate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), v >= 100 || std::fabs(v - std::round(v)) < 1e-9 ? "%.0f" : "%.2f", v);
  return buf;
}

}  // namespace faultline::fabric
