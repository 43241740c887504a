#include "engine/detect/fabric_ib.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "parse/text.h"

namespace faultline {
namespace {

using fabric::EndIssue;
using fabric::FormatRate;

// IB PortState values (ports/<n>/state "4: ACTIVE"): 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE,
// 5 ACTIVE_DEFER. PortPhysicalState 5 is LinkUp.
constexpr int kIbActive = 4;
constexpr int kIbActiveDefer = 5;
constexpr int kPhysLinkUp = 5;

std::string Attr(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

// "mlx5_0/1" -> {"mlx5_0", "1"}
std::pair<std::string, std::string> SplitEnd(std::string_view name) {
  const size_t slash = name.rfind('/');
  if (slash == std::string_view::npos) return {std::string(name), ""};
  return {std::string(name.substr(0, slash)), std::string(name.substr(slash + 1))};
}

// The counters that speak about the link's physical health (the rest are congestion or
// bookkeeping): a pegged one of these blinds the error-rate rules.
bool IsLinkHealthCounter(const std::string& counter) {
  return counter == "symbol_error" || counter == "link_error_recovery" || counter == "link_downed" ||
         counter == "port_rcv_errors" || counter == "local_link_integrity_errors" ||
         counter == "port_rcv_remote_physical_errors";
}

// The counter's sysfs name ("symbol_error"), or its kind when the source gave none.
std::string CounterName(const Observation& obs) {
  std::string counter = Attr(obs.attrs, "counter");
  return counter.empty() ? std::string(ToString(obs.kind)) : counter;
}

std::string StateText(const Observation& obs) {
  std::string s = Attr(obs.attrs, "state");
  if (s.empty() && obs.value) s = "state " + FormatRate(*obs.value);
  const std::string phys = Attr(obs.attrs, "phys_state");
  return phys.empty() ? s : s + "/" + phys;
}

}  // namespace

IbFabricDetector::IbFabricDetector(const FabricOptions& options, const Topology* topology)
    : opt_(options), topology_(topology) {}

void IbFabricDetector::Observe(const Observation& obs) {
  if (obs.component.type != ComponentType::kIb) return;
  ++revision_;
  const std::string end = obs.component.Id();
  switch (obs.kind) {
    case ObsKind::kIbPortState:
      observed_.insert(end);
      ObserveState(end, obs);
      break;
    case ObsKind::kIbRate:
      observed_.insert(end);
      ObserveRate(end, obs);
      break;
    case ObsKind::kIbSymbolError:
    case ObsKind::kIbLinkErrorRecovery:
    case ObsKind::kIbLinkDowned:
    case ObsKind::kIbRcvError:
    case ObsKind::kIbLinkIntegrity:
      observed_.insert(end);
      ObserveCounter(end, obs);
      break;
    case ObsKind::kIbXmitDiscards:
    case ObsKind::kOther:
      ObserveCounter(end, obs);  // congestion / bookkeeping: only "pegged" is noted
      break;
    default:
      break;
  }
}

void IbFabricDetector::Remember(const std::string& end, const Observation& obs) {
  PortState& st = ports_[end];
  const std::string link_layer = Attr(obs.component.keys, "link_layer");
  const std::string model = Attr(obs.component.keys, "model");
  st.ethernet = link_layer == "Ethernet";
  // Siblings: same link layer, same HCA model and board. Without a model nothing is compared.
  st.group = model.empty() ? "" : link_layer + "|" + model + "|" + Attr(obs.component.keys, "board_id");
}

bool IbFabricDetector::ListedInTopology(const ComponentRef& ref) const {
  if (topology_ == nullptr) return false;
  auto [dev, port] = SplitEnd(ref.name);
  return topology_->FindIbPort(dev, static_cast<int>(ParseInt(port).value_or(-1))) != nullptr ||
         topology_->FindIbBySwitchPort(dev, port) != nullptr;
}

int IbFabricDetector::ActiveSiblings(const std::string& end, const PortState& st) const {
  if (st.group.empty()) return 0;
  int n = 0;
  for (const auto& [id, other] : ports_) {
    n += id != end && other.group == st.group && other.state_known && other.active;
  }
  return n;
}

void IbFabricDetector::ObserveState(const std::string& end, const Observation& obs) {
  if (!obs.value) return;
  Remember(end, obs);
  PortState& st = ports_[end];
  const bool first = !st.state_known;
  st.state_known = true;
  st.last_state = obs;
  const int state = static_cast<int>(*obs.value);
  if (state == kIbActive || state == kIbActiveDefer) {
    st.active = true;
    st.seen_active = true;
    st.down_from_start = false;
    st.down_since_ns = 0;
    return;
  }
  st.active = false;
  if (first) st.down_from_start = true;
  if (st.down_since_ns == 0) st.down_since_ns = obs.time_ns;
  // A port that was never up, is not in the topology and has no ACTIVE sibling is
  // probably just not cabled: reported (at info) but never escalated.
  const bool expected = st.seen_active || ListedInTopology(obs.component) ||
                        (st.down_from_start && !st.ethernet && ActiveSiblings(end, st) > 0);
  const int64_t down_for = obs.time_ns - st.down_since_ns;
  if (!expected) return;
  if (down_for < opt_.ib_down_after_ns) {
    // A port seen ACTIVE that reads down now is a link down from this sample on, whichever
    // poll (or the driver's "link went down" counter) told first: named anything else
    // meanwhile, the port would get another fault's plan. Until it has stayed down it is a
    // note (info, watched): a blip pages nobody, yet it can explain slow steps.
    if (!st.seen_active) return;
    EndIssue& issue = issues_[end];
    issue.Mark(obs, FaultClass::kIbLinkDown, Severity::kInfo,
               "port " + StateText(obs) + " (was ACTIVE); a drop once down " +
                   FormatRate(static_cast<double>(opt_.ib_down_after_ns) / 60e9) + " min",
               opt_);
    issue.attrs["mode"] = "down";
    if (issue.severity <= Severity::kInfo) issue.monitor_only = true;
    return;
  }
  EndIssue& issue = issues_[end];
  issue.monitor_only = false;
  const std::string minutes = FormatRate(static_cast<double>(down_for) / 60e9);
  issue.Mark(obs, FaultClass::kIbLinkDown, Severity::kCritical,
             "port " + StateText(obs) +
                 (st.down_from_start ? " for at least " + minutes + " min (down since the first sample)"
                                     : " for " + minutes + " min"),
             opt_);
  issue.attrs["mode"] = "down";
}

void IbFabricDetector::ObserveRate(const std::string& end, const Observation& obs) {
  if (!obs.value || !std::isfinite(*obs.value)) return;
  Remember(end, obs);
  PortState& st = ports_[end];
  if (!st.rate_known || *obs.value != st.rate) st.rate_since_ns = obs.time_ns;
  st.rate_known = true;
  st.rate = *obs.value;
  st.last_rate = obs;
  // Node-wide defaults describe the InfiniBand compute ports, not Ethernet ones.
  double expected = st.ethernet ? 0 : opt_.expected_ib_rate_gbps;
  if (auto v = ParseDouble(Attr(obs.attrs, "expected")); v && *v > 0) expected = *v;
  if (topology_ != nullptr) {
    auto [dev, port] = SplitEnd(obs.component.name);
    const TopoIbPort* t = topology_->FindIbPort(dev, static_cast<int>(ParseInt(port).value_or(-1)));
    if (t != nullptr && t->expected_rate_gbps > 0) {
      expected = t->expected_rate_gbps;
    } else if (!st.ethernet && topology_->expected_ib_rate_gbps > 0) {
      expected = topology_->expected_ib_rate_gbps;
    }
  }
  st.rate_has_expected = expected > 0;
  if (!st.active) return;  // a down port reports a meaningless rate
  if (expected <= 0 || *obs.value >= expected * 0.99) return;
  EndIssue& issue = issues_[end];
  issue.Mark(obs, FaultClass::kIbLinkErrors, Severity::kWarning,
             "rate " + FormatRate(*obs.value) + " Gb/s below the expected " + FormatRate(expected) + " Gb/s", opt_);
  issue.attrs["rate_gbps"] = FormatRate(*obs.value);
  issue.attrs["expected_gbps"] = FormatRate(expected);
}

void IbFabricDetector::ObserveCounter(const std::string& end, const Observation& obs) {
  if (!obs.value || !std::isfinite(*obs.value)) return;
  const std::string counter = CounterName(obs);
  RememberBaseline(end, counter, obs);  // every counter: a node-wide pegged value is no port's fault
  // A counter at its maximum stopped counting: note it, and never read "no change" as a
  // rate of zero. A later lower value (counters cleared) is a new baseline.
  const bool saturated = Attr(obs.attrs, "saturated") == "true";
  if (saturated) {
    pegged_[end + "#" + counter] = Pegged{obs, true};
  } else if (auto it = pegged_.find(end + "#" + counter); it != pegged_.end()) {
    pegged_.erase(it);
  }
  if (obs.kind == ObsKind::kIbXmitDiscards || obs.kind == ObsKind::kOther) return;
  auto d = counters_.Update(end + "#" + std::string(ToString(obs.kind)), *obs.value, obs.time_ns);
  // Pegged on both samples: the delta is unknown. Pegged now but not before: the delta
  // is a lower bound, still worth judging.
  if (!d || d->delta <= 0) return;
  EndIssue* issue = nullptr;
  auto mark = [&](FaultClass cls, Severity sev, const std::string& reason) {
    issue = &issues_[end];
    issue->Mark(obs, cls, sev, reason + (saturated ? " (at least: the counter is now pegged)" : ""), opt_);
  };
  switch (obs.kind) {
    case ObsKind::kIbSymbolError:
      if (d->seconds > 0 && d->PerMinute() >= opt_.ib_symbol_errors_per_min) {
        mark(FaultClass::kIbLinkErrors, Severity::kWarning, "symbol errors " + FormatRate(d->PerMinute()) + "/min");
      }
      break;
    case ObsKind::kIbRcvError:
      if (d->seconds > 0 && d->PerMinute() >= opt_.ib_rcv_errors_per_min) {
        mark(FaultClass::kIbLinkErrors, Severity::kWarning, "receive errors " + FormatRate(d->PerMinute()) + "/min");
      }
      break;
    case ObsKind::kIbLinkErrorRecovery:
      mark(FaultClass::kIbLinkErrors, Severity::kWarning, "+" + FormatRate(d->delta) + " link error recoveries");
      break;
    case ObsKind::kIbLinkIntegrity:
      mark(FaultClass::kIbLinkErrors, Severity::kWarning, "+" + FormatRate(d->delta) + " local link integrity errors");
      break;
    case ObsKind::kIbLinkDowned: {
      PortState& st = ports_[end];
      for (int i = 0; i < static_cast<int>(std::min(d->delta, 1000.0)); ++i) st.downed_at.push_back(obs.time_ns);
      while (!st.downed_at.empty() && st.downed_at.front() < obs.time_ns - opt_.ib_flap_window_ns) {
        st.downed_at.pop_front();
      }
      const int cycles = static_cast<int>(st.downed_at.size());
      if (cycles >= opt_.ib_flap_cycles) {
        mark(FaultClass::kIbLinkDown, Severity::kCritical,
             "link flapping: " + std::to_string(cycles) + " down/up cycles in " +
                 FormatRate(static_cast<double>(opt_.ib_flap_window_ns) / 60e9) + " min");
        issue->attrs["mode"] = "flap";
      } else {
        mark(FaultClass::kIbLinkErrors, Severity::kWarning, "link went down " + std::to_string(cycles) + "x");
      }
      break;
    }
    default:
      break;
  }
}

void IbFabricDetector::RememberBaseline(const std::string& end, const std::string& counter, const Observation& obs) {
  CounterPorts& ports = baselines_[{Attr(obs.component.keys, "link_layer"), counter}];
  auto [it, fresh] = ports.try_emplace(end);
  BaseReading& r = it->second;
  if (fresh) {
    r.first = *obs.value;
    r.first_ns = obs.time_ns;
  } else if (*obs.value != r.first) {
    r.moved = true;  // a rise (or a clear): from now on this port speaks for itself
  }
}

// True when `end` still reads the value that every port of its link layer (2 or more)
// read first, and that value is not zero. The value is then a property of the node
// (driver, firmware), not of this port: judging it per port would accuse every port at
// once. Only the baseline is excused: a port that moved off it is judged as any other,
// and a port whose first reading differs leaves every port to be judged as before.
bool IbFabricDetector::OnStaticBaseline(const std::string& end, const std::string& counter,
                                        const Observation& obs) const {
  auto group = baselines_.find({Attr(obs.component.keys, "link_layer"), counter});
  if (group == baselines_.end() || group->second.size() < 2) return false;
  const double base = group->second.begin()->second.first;
  if (base == 0) return false;
  for (const auto& [id, r] : group->second) {
    if (r.first != base) return false;
  }
  auto it = group->second.find(end);
  return it != group->second.end() && !it->second.moved;
}

// Ports not ACTIVE since the first sample, which the 2-minute rule has not judged yet:
// reported now, "since unknown". How sure depends on what says the port should be up.
void IbFabricDetector::AddPresentDown(std::map<std::string, EndIssue>& issues) const {
  for (const auto& [end, st] : ports_) {
    if (!st.state_known || st.active || !st.down_from_start) continue;
    if (auto it = issues_.find(end); it != issues_.end() && it->second.fault_class == FaultClass::kIbLinkDown &&
                                     it->second.last_ns >= st.last_state.time_ns) {
      continue;  // the persistence rule already speaks for the latest sample
    }
    const bool listed = ListedInTopology(st.last_state.component);
    if (st.ethernet && !listed) continue;  // RoCE/management ports: only when the operator lists them
    const int active = ActiveSiblings(end, st);
    int siblings = 0;
    for (const auto& [id, other] : ports_) siblings += id != end && !st.group.empty() && other.group == st.group;
    std::string reason = "port " + StateText(st.last_state) + " now (since unknown: not ACTIVE in the first sample)";
    const int phys = static_cast<int>(ParseInt(Attr(st.last_state.attrs, "phys_state_num")).value_or(0));
    if (phys == kPhysLinkUp) reason += ", physically up but not configured: is a subnet manager reaching it?";
    Severity sev = Severity::kWarning;
    FaultClass cls = FaultClass::kIbLinkDown;
    double confidence = 0.6;
    bool guess = false;
    if (listed) {
      reason += "; the topology lists it";
    } else if (active > 0) {
      reason += "; " + std::to_string(active) + " of " + std::to_string(siblings) +
                " sibling ports (same HCA model) are ACTIVE";
      confidence = 0.5;
    } else {
      reason += "; no topology entry and no ACTIVE sibling port: it may simply be uncabled";
      // A note, not a link-down: as ib_link_errors at info it can never be taken for the
      // cause of a slowdown (a spare, uncabled port is the common case).
      sev = Severity::kInfo;
      cls = FaultClass::kIbLinkErrors;
      confidence = 0.3;
      guess = true;
    }
    EndIssue& issue = issues[end];
    const bool fresh = issue.count == 0;
    issue.Mark(st.last_state, cls, sev, reason, opt_);
    issue.attrs["mode"] = "down";
    issue.attrs["since"] = "unknown";
    if (fresh) {
      issue.max_confidence = confidence;
      issue.monitor_only = guess;
    }
  }
}

// A port slower than most of its siblings (same link layer, HCA model and board) is
// downtrained even when no expected rate is configured: 7 ports at 400 and one at 200.
// Needs a strict majority of at least ib_sibling_min_agree ports at the faster rate, so a
// dual-port card split across a 400 and a 200 Gb/s network is left alone.
void IbFabricDetector::AddSiblingRates(std::map<std::string, EndIssue>& issues) const {
  std::map<std::string, std::vector<std::pair<const std::string*, const PortState*>>> groups;
  for (const auto& [end, st] : ports_) {
    if (!st.group.empty() && st.rate_known && st.active) groups[st.group].emplace_back(&end, &st);
  }
  for (const auto& [group, members] : groups) {
    std::map<double, int> by_rate;
    std::map<std::string, int> fw_at_mode;
    for (const auto& m : members) ++by_rate[m.second->rate];
    double mode = 0;
    int agree = 0;
    for (const auto& [rate, n] : by_rate) {
      if (n >= agree) mode = rate, agree = n;  // ascending: ties go to the faster rate
    }
    const int total = static_cast<int>(members.size());
    if (agree < opt_.ib_sibling_min_agree || agree * 2 <= total) continue;
    for (const auto& m : members) {
      if (m.second->rate == mode) ++fw_at_mode[Attr(m.second->last_rate.component.keys, "fw_ver")];
    }
    std::string usual_fw;
    for (const auto& [fw, n] : fw_at_mode) {
      if (usual_fw.empty() || n > fw_at_mode[usual_fw]) usual_fw = fw;
    }
    for (const auto& [end, st] : members) {
      if (st->rate_has_expected || st->rate >= mode * 0.99) continue;
      const ComponentRef& ref = st->last_rate.component;
      std::string reason = "rate " + FormatRate(st->rate) + " Gb/s while " + std::to_string(agree) + " of " +
                           std::to_string(total) + " active ports of this model (" + Attr(ref.keys, "model") +
                           ") run " + FormatRate(mode) + " Gb/s";
      const std::string fw = Attr(ref.keys, "fw_ver");
      if (!fw.empty() && !usual_fw.empty() && fw != usual_fw)
        reason += " (firmware " + fw + ", theirs " + usual_fw + ")";
      EndIssue& issue = issues[*end];
      const bool fresh = issue.count == 0;
      issue.Mark(st->last_rate, FaultClass::kIbLinkErrors, Severity::kWarning, reason, opt_);
      if (fresh) issue.first_ns = std::min(issue.first_ns, st->rate_since_ns);
      issue.attrs["rate_gbps"] = FormatRate(st->rate);
      issue.attrs["expected_gbps"] = FormatRate(mode);
      issue.attrs["expected_from"] = "siblings";
    }
  }
}

// One note for a counter pegged at the same value on every port: what it reads, on how
// many ports, and why no port is accused. Fault class none: the isolator skips it, so it
// can neither be a diagnosis nor the cause of a slowdown.
Finding IbFabricDetector::StaticBaselineNote(const BaseKey& key, const std::vector<const Pegged*>& pegged) const {
  const auto& [link_layer, counter] = key;
  const CounterPorts& ports = baselines_.at(key);
  const Observation& sample = pegged.front()->obs;
  const std::string value = FormatRate(sample.value.value_or(0));
  const std::string n = std::to_string(pegged.size());
  const std::string total = std::to_string(ports.size());
  const std::string kind = link_layer.empty() ? "" : link_layer + " ";
  Finding f;
  f.layer = Layer::kFabric;
  f.component = ComponentRef{ComponentType::kIb, "", {}};
  if (!link_layer.empty()) f.component.keys["link_layer"] = link_layer;
  f.fault_class = FaultClass::kNone;
  f.severity = Severity::kInfo;
  f.action = Action::kNone;
  f.confidence = 0.8;
  f.first_ns = std::numeric_limits<int64_t>::max();
  f.last_ns = 0;
  f.count = 1;
  for (const Pegged* p : pegged) {
    f.first_ns = std::min(f.first_ns, ports.at(p->obs.component.Id()).first_ns);
    f.last_ns = std::max(f.last_ns, p->obs.time_ns);
    fabric::AddEvidence(f.evidence, EvidenceFrom(p->obs), opt_.max_evidence);
  }
  f.key = "ib_static_baseline|" + link_layer + "|" + counter;
  f.attrs = {{"mode", "static_baseline"},
             {"quirk", "true"},
             {"counter", counter},
             {"value", value},
             {"ports", n},
             {"ports_total", total},
             {"rate", "unknown"},
             {"placement", "node"},
             {"part", "none (a node-wide baseline, no port to touch)"}};
  if (!link_layer.empty()) f.attrs["link_layer"] = link_layer;
  if (auto max = Attr(sample.attrs, "counter_max"); !max.empty()) f.attrs["counter_max"] = max;
  const bool all = pegged.size() == ports.size();
  f.summary = counter + (all ? " reads " + value + " on all " + n + " " + kind + "ports and has not moved"
                             : " still reads " + value + " on " + n + " of " + total + " " + kind +
                                   "ports, the value all of them read first");
  f.summary +=
      ": one value on every port is a driver/firmware baseline (a quirk), not a fault of any port, so no "
      "port is judged on it";
  if (!all) f.summary += " (the ports that moved off it are judged on their own)";
  f.summary += ". " + value +
               " is also the counter's maximum: it cannot show new errors until the port counters "
               "are cleared (e.g. perfquery -R)";
  return f;
}

std::vector<Finding> IbFabricDetector::PeggedFindings() const {
  std::vector<Finding> out;
  std::map<BaseKey, std::vector<const Pegged*>> baseline;  // pegged readings a note replaces
  for (const auto& [key, p] : pegged_) {
    if (!p.saturated) continue;
    const std::string counter = CounterName(p.obs);
    const std::string max = p.obs.value ? FormatRate(*p.obs.value) : Attr(p.obs.attrs, "counter_max");
    const std::string id = p.obs.component.Id();
    if (OnStaticBaseline(id, counter, p.obs)) {
      baseline[{Attr(p.obs.component.keys, "link_layer"), counter}].push_back(&p);
      continue;
    }
    Finding f;
    f.layer = Layer::kFabric;
    f.component = p.obs.component;
    f.fault_class = FaultClass::kIbLinkErrors;
    f.severity = IsLinkHealthCounter(counter) ? Severity::kWarning : Severity::kInfo;
    f.action = Action::kMonitor;
    f.confidence = 0.5;
    f.first_ns = f.last_ns = p.obs.time_ns;
    f.count = 1;
    f.evidence.push_back(EvidenceFrom(p.obs));
    f.attrs = {{"mode", "counter_saturated"}, {"counter", counter},   {"counter_max", max},
               {"placement", "port"},         {"part", "port " + id}, {"rate", "unknown"}};
    f.summary = id + ": counter " + counter + " is pegged at its maximum (" + max +
                "): it no longer counts, so its error rate is unknown (not zero)";
    if (counter == "link_downed") f.summary += "; the link went down at least " + max + " times since the last clear";
    f.summary += ". Clear the port counters (e.g. perfquery -R) to measure again";
    out.push_back(std::move(f));
  }
  for (const auto& [key, pegged] : baseline) out.push_back(StaticBaselineNote(key, pegged));
  return out;
}

fabric::LinkEnd IbFabricDetector::Describe(const std::string& id, const EndIssue& issue) const {
  fabric::LinkEnd e;
  e.id = id;
  e.issue = &issue;
  e.switch_type = ComponentType::kIb;
  auto [dev, port] = SplitEnd(std::string_view(id).substr(3));
  const int port_num = static_cast<int>(ParseInt(port).value_or(-1));
  const TopoIbPort* hca = topology_ != nullptr ? topology_->FindIbPort(dev, port_num) : nullptr;
  const TopoIbPort* sw = hca == nullptr && topology_ != nullptr ? topology_->FindIbBySwitchPort(dev, port) : nullptr;
  if (sw != nullptr) {
    e.switch_name = dev;
    e.switch_port = port;
    e.cable = sw->cable;
    e.peer = "ib/" + sw->device + "/" + std::to_string(sw->port);
    e.port_part = "switch " + dev + " port " + port;
    return e;
  }
  e.device_end = true;
  e.port_part = "HCA " + dev + " port " + port + " transceiver";
  if (hca != nullptr) {
    e.cable = hca->cable;
    e.switch_name = hca->switch_name;
    e.switch_port = hca->switch_port;
    if (!hca->switch_name.empty() && !hca->switch_port.empty())
      e.peer = "ib/" + hca->switch_name + "/" + hca->switch_port;
  }
  return e;
}

std::vector<Finding> IbFabricDetector::Findings() const {
  std::map<std::string, EndIssue> issues = issues_;
  AddPresentDown(issues);
  AddSiblingRates(issues);
  std::vector<fabric::LinkEnd> ends;
  for (const auto& [id, issue] : issues) ends.push_back(Describe(id, issue));
  std::vector<Finding> out =
      fabric::PlaceLinkFaults(ends, observed_, FaultClass::kIbLinkErrors, Action::kFacilityTicket, opt_);
  for (Finding& f : PeggedFindings()) out.push_back(std::move(f));
  return out;
}

}  // namespace faultline
