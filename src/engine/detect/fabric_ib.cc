#include "engine/detect/fabric_ib.h"

#include <cmath>

#include "parse/text.h"

namespace faultline {
namespace {

using fabric::EndIssue;
using fabric::FormatRate;

constexpr int kIbActive = 4;
constexpr int kIbActiveDefer = 5;

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

}  // namespace

IbFabricDetector::IbFabricDetector(const FabricOptions& options, const Topology* topology)
    : opt_(options), topology_(topology) {}

void IbFabricDetector::Observe(const Observation& obs) {
  if (obs.component.type != ComponentType::kIb) return;
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
    default:
      break;  // xmit discards are congestion, not link health
  }
}

void IbFabricDetector::ObserveState(const std::string& end, const Observation& obs) {
  if (!obs.value) return;
  PortState& st = ports_[end];
  const int state = static_cast<int>(*obs.value);
  if (state == kIbActive || state == kIbActiveDefer) {
    st.active = true;
    st.seen_active = true;
    st.down_since_ns = 0;
    return;
  }
  st.active = false;
  if (st.down_since_ns == 0) st.down_since_ns = obs.time_ns;
  // A port that was never up and is not in the topology is probably just not cabled.
  auto [dev, port] = SplitEnd(obs.component.name);
  const bool expected =
      st.seen_active ||
      (topology_ != nullptr && (topology_->FindIbPort(dev, static_cast<int>(ParseInt(port).value_or(-1))) != nullptr ||
                                topology_->FindIbBySwitchPort(dev, port) != nullptr));
  const int64_t down_for = obs.time_ns - st.down_since_ns;
  if (!expected || down_for < opt_.ib_down_after_ns) return;
  EndIssue& issue = issues_[end];
  issue.Mark(obs, FaultClass::kIbLinkDown, Severity::kCritical,
             "port " + Attr(obs.attrs, "state") + "/" + Attr(obs.attrs, "phys_state") + " for " +
                 FormatRate(static_cast<double>(down_for) / 60e9) + " min",
             opt_);
  issue.attrs["mode"] = "down";
}

void IbFabricDetector::ObserveRate(const std::string& end, const Observation& obs) {
  if (!obs.value || !std::isfinite(*obs.value)) return;
  const PortState& st = ports_[end];
  if (!st.active) return;  // a down port reports a meaningless rate
  // Node-wide defaults describe the InfiniBand compute ports, not Ethernet ones.
  const bool ethernet = Attr(obs.component.keys, "link_layer") == "Ethernet";
  double expected = ethernet ? 0 : opt_.expected_ib_rate_gbps;
  if (auto v = ParseDouble(Attr(obs.attrs, "expected")); v && *v > 0) expected = *v;
  if (topology_ != nullptr) {
    auto [dev, port] = SplitEnd(obs.component.name);
    const TopoIbPort* t = topology_->FindIbPort(dev, static_cast<int>(ParseInt(port).value_or(-1)));
    if (t != nullptr && t->expected_rate_gbps > 0) {
      expected = t->expected_rate_gbps;
    } else if (!ethernet && topology_->expected_ib_rate_gbps > 0) {
      expected = topology_->expected_ib_rate_gbps;
    }
  }
  if (expected <= 0 || *obs.value >= expected * 0.99) return;
  EndIssue& issue = issues_[end];
  issue.Mark(obs, FaultClass::kIbLinkErrors, Severity::kWarning,
             "rate " + FormatRate(*obs.value) + " Gb/s below the expected " + FormatRate(expected) + " Gb/s", opt_);
  issue.attrs["rate_gbps"] = FormatRate(*obs.value);
  issue.attrs["expected_gbps"] = FormatRate(expected);
}

void IbFabricDetector::ObserveCounter(const std::string& end, const Observation& obs) {
  if (!obs.value || !std::isfinite(*obs.value)) return;
  auto d = counters_.Update(end + "#" + std::string(ToString(obs.kind)), *obs.value, obs.time_ns);
  if (!d || d->delta <= 0) return;
  EndIssue* issue = nullptr;
  auto mark = [&](FaultClass cls, Severity sev, const std::string& reason) {
    issue = &issues_[end];
    issue->Mark(obs, cls, sev, reason, opt_);
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
  std::vector<fabric::LinkEnd> ends;
  for (const auto& [id, issue] : issues_) ends.push_back(Describe(id, issue));
  return fabric::PlaceLinkFaults(ends, observed_, FaultClass::kIbLinkErrors, Action::kFacilityTicket, opt_);
}

}  // namespace faultline
