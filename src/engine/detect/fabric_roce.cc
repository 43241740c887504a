#include "engine/detect/fabric_roce.h"

#include <algorithm>
#include <cmath>

namespace faultline {
namespace {

using fabric::EndIssue;
using fabric::FormatRate;

std::string Attr(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

bool IsLinkDownCounter(const std::string& c) {
  return c == "carrier_changes" || c == "carrier_down_count" || c == "link_down_events_phy";
}

// Retransmission and reordering that adaptive routing and congestion control also produce
// in small numbers (SIGNALS-ethernet-amd A2 notes): judged against the higher threshold.
bool IsReorderCounter(const std::string& c) {
  return c == "out_of_sequence" || c == "duplicate_request" || c == "roce_adp_retrans" || c == "roce_slow_restart" ||
         c == "roce_slow_restart_trans";
}

enum class Signal { kNone, kPausePackets, kPauseTime, kEcnCnp };

Signal CongestionSignal(const std::string& c) {
  if (c == "rx_prio_pause" || c == "rx_pause_ctrl_phy") return Signal::kPausePackets;
  if (c == "rx_prio_pause_duration") return Signal::kPauseTime;
  if (c == "np_ecn_marked_roce_packets" || c == "np_cnp_sent" || c == "rp_cnp_handled" || c == "rx_prio_marked") {
    return Signal::kEcnCnp;
  }
  return Signal::kNone;  // rp_cnp_ignored, slow-restart CNPs: configuration hints, evidence only
}

void MergeMissingKeys(ComponentRef& into, const ComponentRef& from) {
  for (const auto& [k, v] : from.keys) into.keys.emplace(k, v);
}

}  // namespace

// The topology is not consulted here: the ethernet source already put the cable and switch
// port into each component's keys (as the sysfs source does for InfiniBand). The parameter
// keeps the fabric detectors' constructors alike.
RoceFabricDetector::RoceFabricDetector(const RoceOptions& options, const Topology* /*topology*/) : opt_(options) {}

std::string RoceFabricDetector::EndOf(const Observation& obs, ComponentRef& ref) const {
  const ComponentRef& c = obs.component;
  if (c.type == ComponentType::kRoce) {
    ref = c;
    return c.Id();
  }
  const std::string dev = Attr(c.keys, "rdma_device"), port = Attr(c.keys, "rdma_port");
  if (dev.empty() || port.empty()) {
    ref = c;
    return c.Id();
  }
  // The interface carries a RoCE port: one end, named as the port.
  ref = ComponentRef{ComponentType::kRoce, dev + "/" + port, {}};
  ref.keys = {{"device", dev}, {"port", port}, {"netdev", c.name}, {"link_layer", "Ethernet"}};
  for (const char* k : {"bdf", "model", "switch", "switch_port", "cable"}) {
    if (const std::string v = Attr(c.keys, k); !v.empty()) ref.keys[k] = v;
  }
  return ref.Id();
}

void RoceFabricDetector::Observe(const Observation& obs) {
  if (obs.component.type != ComponentType::kRoce && obs.component.type != ComponentType::kEth) return;
  if (!obs.value || !std::isfinite(*obs.value)) return;
  ComponentRef ref;
  const std::string end = EndOf(obs, ref);
  EndState& st = ends_[end];
  if (st.ref.name.empty() || obs.component.type == ComponentType::kRoce) {
    ComponentRef merged = ref;
    MergeMissingKeys(merged, st.ref);
    st.ref = std::move(merged);
  } else {
    MergeMissingKeys(st.ref, ref);
  }
  if (const std::string m = Attr(ref.keys, "model"); !m.empty()) st.model = m;
  ++revision_;
  observed_.insert(end);
  switch (obs.kind) {
    case ObsKind::kRoceCounter:
    case ObsKind::kEthCounter:
      ObserveCounter(end, obs);
      break;
    case ObsKind::kEthLinkState:
      ObserveState(end, obs);
      break;
    case ObsKind::kEthSpeed:
      ObserveSpeed(end, obs);
      break;
    default:
      break;
  }
}

void RoceFabricDetector::MarkLink(const std::string& end, const Observation& obs, FaultClass cls, Severity sev,
                                  const std::string& reason) {
  Observation named = obs;
  named.component = ends_[end].ref;
  issues_[end].Mark(named, cls, sev, reason, opt_.fabric);
}

void RoceFabricDetector::MarkCongestion(const std::string& end, const Observation& obs, const std::string& mode,
                                        const std::string& reason) {
  Observation named = obs;
  named.component = ends_[end].ref;
  EndIssue& issue = congested_[end];
  issue.Mark(named, FaultClass::kFabricCongestion, Severity::kWarning, reason, opt_.fabric);
  issue.attrs["mode"] = issue.attrs.count("mode") && issue.attrs["mode"] != mode ? "pfc_and_ecn" : mode;
}

void RoceFabricDetector::ObserveCounter(const std::string& end, const Observation& obs) {
  const std::string counter = Attr(obs.attrs, "counter");
  std::string canonical = Attr(obs.attrs, "canonical");
  if (canonical.empty()) canonical = counter;
  const std::string group = Attr(obs.attrs, "group");
  auto d = counters_.Update(obs.component.Id() + "#" + counter, *obs.value, obs.time_ns);
  if (!d || d->seconds <= 0) return;  // first reading, or a reset: a new baseline
  EndState& st = ends_[end];
  if (group == "congestion") {
    const Signal sig = CongestionSignal(canonical);
    if (sig == Signal::kNone) return;
    const std::string prio = Attr(obs.attrs, "priority");
    const std::string what = canonical + (prio.empty() ? "" : " (priority " + prio + ")");
    double level = 0, limit = 0;
    std::string reason;
    if (sig == Signal::kPauseTime) {
      level = d->delta / (d->seconds * 1e6);  // microseconds paused per second
      limit = opt_.pfc_paused_fraction;
      reason = "paused " + FormatRate(level * 100) + "% of the time: " + what;
    } else {
      level = d->PerSecond();
      limit = sig == Signal::kEcnCnp ? opt_.ecn_cnp_per_s : opt_.pfc_pause_per_s;
      reason = what + " " + FormatRate(level) + "/s";
    }
    int& streak = st.streak[obs.component.Id() + "#" + counter];
    streak = level >= limit ? streak + 1 : 0;
    if (streak >= opt_.congestion_min_intervals) {
      MarkCongestion(end, obs, sig == Signal::kEcnCnp ? "ecn_cnp_surge" : "pfc_storm",
                     reason + " for " + std::to_string(streak) + " intervals");
    }
    return;
  }
  if (d->delta <= 0) return;
  if (group == "link" && IsLinkDownCounter(canonical)) {
    // carrier_changes counts both transitions of a flap; the others count downs.
    const double downs = canonical == "carrier_changes" ? std::ceil(d->delta / 2) : d->delta;
    double& at = st.downs[obs.time_ns];
    at = std::max(at, std::min(downs, 1000.0));
    while (!st.downs.empty() && st.downs.begin()->first < obs.time_ns - opt_.flap_window_ns) {
      st.downs.erase(st.downs.begin());
    }
    double cycles = 0;
    for (const auto& [t, n] : st.downs) cycles += n;
    if (cycles >= opt_.flap_cycles) {
      MarkLink(end, obs, FaultClass::kIbLinkDown, Severity::kCritical,
               "link flapping: " + FormatRate(cycles) + " down/up cycles in " +
                   FormatRate(static_cast<double>(opt_.flap_window_ns) / 60e9) + " min (" + canonical + ")");
      issues_[end].attrs["mode"] = "flap";
    } else {
      MarkLink(end, obs, FaultClass::kIbLinkErrors, Severity::kWarning,
               "link went down " + FormatRate(cycles) + "x (" + canonical + ")");
    }
    return;
  }
  if (group == "link") {
    if (d->PerMinute() >= opt_.link_errors_per_min) {
      MarkLink(end, obs, FaultClass::kIbLinkErrors, Severity::kWarning,
               canonical + " " + FormatRate(d->PerMinute()) + "/min");
    }
    return;
  }
  if (group == "loss") {
    const double limit = IsReorderCounter(canonical) ? opt_.reorder_per_min : opt_.loss_per_min;
    if (d->PerMinute() >= limit) {
      MarkLink(end, obs, FaultClass::kIbLinkErrors, Severity::kWarning,
               canonical + " " + FormatRate(d->PerMinute()) + "/min (packets lost and retransmitted)");
      issues_[end].attrs["loss"] = "true";
    }
  }
}

void RoceFabricDetector::ObserveState(const std::string& end, const Observation& obs) {
  EndState& st = ends_[end];
  st.state_known = true;
  if (*obs.value >= 1) {
    st.up = st.seen_up = true;
    st.down_since_ns = 0;
    return;
  }
  st.up = false;
  if (st.down_since_ns == 0) st.down_since_ns = obs.time_ns;
  // A port never seen up and not in the topology may simply be uncabled: not judged.
  const bool expected = st.seen_up || !Attr(st.ref.keys, "switch").empty();
  const int64_t down_for = obs.time_ns - st.down_since_ns;
  if (!expected || down_for < opt_.down_after_ns) return;
  MarkLink(end, obs, FaultClass::kIbLinkDown, Severity::kCritical,
           "operstate " + Attr(obs.attrs, "operstate") + " for " + FormatRate(static_cast<double>(down_for) / 60e9) +
               " min");
  issues_[end].attrs["mode"] = "down";
}

void RoceFabricDetector::ObserveSpeed(const std::string& end, const Observation& obs) {
  EndState& st = ends_[end];
  st.speed_known = true;
  st.speed_gbps = *obs.value;
  st.last_speed = obs;
  st.last_speed.component = st.ref;
  double expected = 0;
  if (const std::string e = Attr(obs.attrs, "expected"); !e.empty()) expected = std::strtod(e.c_str(), nullptr);
  st.speed_has_expected = expected > 0;
  if (!st.speed_has_expected || *obs.value >= expected * 0.99) return;
  MarkLink(end, obs, FaultClass::kIbLinkErrors, Severity::kWarning,
           "speed " + FormatRate(*obs.value) + " Gb/s below the expected " + FormatRate(expected) +
               " Gb/s (link trained down)");
  issues_[end].attrs["rate_gbps"] = FormatRate(*obs.value);
  issues_[end].attrs["expected_gbps"] = FormatRate(expected);
}

// Ports slower than a strict majority (at least sibling_min_agree) of the up ports of the
// same model: 7 at 400 Gb/s and one at 200 is downtrained, even with no expected rate.
void RoceFabricDetector::AddSiblingSpeeds(std::map<std::string, EndIssue>& issues) const {
  std::map<std::string, std::vector<std::pair<const std::string*, const EndState*>>> groups;
  for (const auto& [end, st] : ends_) {
    if (!st.model.empty() && st.speed_known && st.up) groups[st.model].emplace_back(&end, &st);
  }
  for (const auto& [model, members] : groups) {
    std::map<double, int> by_speed;
    for (const auto& m : members) ++by_speed[m.second->speed_gbps];
    double mode = 0;
    int agree = 0;
    for (const auto& [speed, n] : by_speed) {
      if (n >= agree) mode = speed, agree = n;  // ties go to the faster speed
    }
    const int total = static_cast<int>(members.size());
    if (agree < opt_.sibling_min_agree || agree * 2 <= total) continue;
    for (const auto& [end, st] : members) {
      if (st->speed_has_expected || st->speed_gbps >= mode * 0.99) continue;
      EndIssue& issue = issues[*end];
      issue.Mark(st->last_speed, FaultClass::kIbLinkErrors, Severity::kWarning,
                 "speed " + FormatRate(st->speed_gbps) + " Gb/s while " + std::to_string(agree) + " of " +
                     std::to_string(total) + " ports of this model (" + model + ") run " + FormatRate(mode) +
                     " Gb/s (link trained down)",
                 opt_.fabric);
      issue.attrs["rate_gbps"] = FormatRate(st->speed_gbps);
      issue.attrs["expected_gbps"] = FormatRate(mode);
      issue.attrs["expected_from"] = "siblings";
    }
  }
}

fabric::LinkEnd RoceFabricDetector::Describe(const std::string& id, const EndIssue& issue) const {
  fabric::LinkEnd e;
  e.id = id;
  e.issue = &issue;
  e.switch_type = ComponentType::kEth;
  e.device_end = true;
  const ComponentRef& c = issue.component;
  e.switch_name = Attr(c.keys, "switch");
  e.switch_port = Attr(c.keys, "switch_port");
  e.cable = Attr(c.keys, "cable");
  if (!e.switch_name.empty() && !e.switch_port.empty()) {
    e.peer = "switch " + e.switch_name + " port " + e.switch_port;
  }
  const std::string netdev = Attr(c.keys, "netdev");
  e.port_part = c.type == ComponentType::kRoce ? "NIC " + Attr(c.keys, "device") + " port " + Attr(c.keys, "port") +
                                                     (netdev.empty() ? "" : " (" + netdev + ")") + " transceiver"
                                               : "NIC port " + c.name + " transceiver";
  return e;
}

std::vector<Finding> RoceFabricDetector::CongestionFindings(const std::map<std::string, EndIssue>& link) const {
  std::vector<Finding> out;
  size_t ports = 0;
  for (const auto& [end, st] : ends_) ports += st.ref.type == ComponentType::kRoce || st.speed_known;
  for (const auto& [end, issue] : congested_) {
    // Loss or PHY errors on the same port at about the same time: a link fault, which the
    // congestion only accompanies (pauses and CNPs follow retransmissions too).
    if (auto it = link.find(end); it != link.end() &&
                                  it->second.last_ns + opt_.fabric.correlation_window_ns >= issue.first_ns &&
                                  issue.last_ns + opt_.fabric.correlation_window_ns >= it->second.first_ns) {
      continue;
    }
    Finding f = fabric::FindingFrom(issue);
    f.fault_class = FaultClass::kFabricCongestion;
    f.action = Action::kMonitor;
    f.confidence = 0.7;
    f.attrs["placement"] = "fabric";
    f.attrs["congested_ports"] = std::to_string(congested_.size());
    const std::string sw = Attr(issue.component.keys, "switch");
    f.attrs["part"] = sw.empty() ? "none (fabric congestion)" : "none (congestion toward switch " + sw + ")";
    std::string reasons;
    for (const std::string& r : issue.reasons) reasons += (reasons.empty() ? "" : "; ") + r;
    f.summary = end + ": " + reasons + "; no loss or PHY errors on this port: congestion (" +
                std::to_string(congested_.size()) + " of " + std::to_string(std::max(ports, congested_.size())) +
                " ports at once), caused by the traffic or the fabric's ECN/PFC settings, not by a part of this "
                "node: do not replace hardware; check the switch (" +
                (sw.empty() ? std::string("leaf") : sw) + ") buffers/PFC watchdog and the jobs sharing it";
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> RoceFabricDetector::Findings() const {
  std::map<std::string, EndIssue> issues = issues_;
  AddSiblingSpeeds(issues);
  std::vector<fabric::LinkEnd> ends;
  for (const auto& [id, issue] : issues) ends.push_back(Describe(id, issue));
  std::vector<Finding> out =
      fabric::PlaceLinkFaults(ends, observed_, FaultClass::kIbLinkErrors, Action::kFacilityTicket, opt_.fabric);
  for (Finding& f : out) f.attrs["fabric"] = "roce";
  for (Finding& f : CongestionFindings(issues)) out.push_back(std::move(f));
  return out;
}

}  // namespace faultline
