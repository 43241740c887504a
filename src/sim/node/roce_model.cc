#include "sim/node/roce_model.h"

#include <algorithm>

namespace faultline::sim {
namespace {

bool Active(const NodeFault& f, double t) { return f.at <= t && (!f.until || t < *f.until); }

bool OnPort(const NodeFault& f, size_t port) { return f.hca < 0 || static_cast<size_t>(f.hca) == port; }

// Adds rate * dt to a counter, carrying the fraction.
void Count(SimRocePort& p, std::map<std::string, uint64_t>& into, const std::string& name, double rate, double dt) {
  if (rate <= 0 || dt <= 0) return;
  double& acc = p.acc[name];
  acc += rate * dt;
  const auto n = static_cast<uint64_t>(acc);
  acc -= static_cast<double>(n);
  into[name] += n;
}

const std::string kPause = "rx_prio" + std::to_string(kRocePfcPriority) + "_pause";
const std::string kPauseDuration = "rx_prio" + std::to_string(kRocePfcPriority) + "_pause_duration";

}  // namespace

std::vector<SimRocePort> MakeRocePorts(size_t hcas) {
  std::vector<SimRocePort> ports(hcas);
  for (SimRocePort& p : ports) {
    for (const char* n : {"rx_crc_errors_phy", "rx_symbol_err_phy", "link_down_events_phy", "rx_discards_phy",
                          "tx_pause_storm_error_events"}) {
      p.ethtool[n] = 0;
    }
    p.ethtool[kPause] = 0;
    p.ethtool[kPauseDuration] = 0;
    p.ethtool["tx_prio" + std::to_string(kRocePfcPriority) + "_pause"] = 0;
    for (const char* n :
         {"np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "out_of_sequence", "packet_seq_err",
          "local_ack_timeout_err", "roce_adp_retrans", "roce_slow_restart", "out_of_buffer"}) {
      p.hw[n] = 0;
    }
  }
  return ports;
}

void StepRoce(const NodeScenario& scenario, double t, double dt, std::vector<SimRocePort>& ports) {
  const double ecn = scenario.noise.roce_ecn_per_s;
  for (size_t i = 0; i < ports.size(); ++i) {
    SimRocePort& p = ports[i];
    // Background: a busy RoCE fabric marks some packets and pauses now and then.
    double ecn_rate = ecn, pause_rate = ecn * 0.2, paused_fraction = ecn > 0 ? 0.001 : 0;
    double crc_per_min = 0;
    int64_t speed = 400000;
    for (const NodeFault& f : scenario.faults) {
      if (!Active(f, t) || !OnPort(f, i)) continue;
      switch (f.kind) {
        case NodeFaultKind::kRoceErrors:
          if (f.hca >= 0) crc_per_min += f.value;
          break;
        case NodeFaultKind::kPfcStorm:
          pause_rate += f.value;
          paused_fraction = std::min(0.9, paused_fraction + f.value / 20000.0);
          ecn_rate += f.value * 5;
          break;
        case NodeFaultKind::kLinkDowntrain:
          if (f.hca >= 0) speed = static_cast<int64_t>((f.value > 0 ? f.value : 200) * 1000);
          break;
        default:
          break;
      }
    }
    if (speed != p.speed_mbps) {
      p.carrier_changes += 2;  // the port retrains: down and up once
      p.ethtool["link_down_events_phy"] += 1;
      p.speed_mbps = speed;
    }
    Count(p, p.hw, "np_ecn_marked_roce_packets", ecn_rate, dt);
    Count(p, p.hw, "np_cnp_sent", ecn_rate * 0.9, dt);
    Count(p, p.hw, "rp_cnp_handled", ecn_rate * 0.9, dt);
    Count(p, p.ethtool, kPause, pause_rate, dt);
    Count(p, p.ethtool, kPauseDuration, paused_fraction * 1e6, dt);
    if (crc_per_min > 0) {
      Count(p, p.ethtool, "rx_crc_errors_phy", crc_per_min / 60, dt);
      Count(p, p.ethtool, "rx_symbol_err_phy", crc_per_min / 120, dt);
      // Every corrupted RoCE packet is dropped and retransmitted by the sender.
      Count(p, p.hw, "packet_seq_err", crc_per_min / 60, dt);
      Count(p, p.hw, "out_of_sequence", crc_per_min / 30, dt);
      Count(p, p.hw, "local_ack_timeout_err", crc_per_min / 120, dt);
      Count(p, p.hw, "roce_adp_retrans", crc_per_min / 60, dt);
    }
  }
}

double RoceSlowdown(const NodeScenario& scenario, double t) {
  double factor = 1.0;
  for (const NodeFault& f : scenario.faults) {
    if (!Active(f, t)) continue;
    if (f.kind == NodeFaultKind::kRoceErrors) factor = std::max(factor, f.value >= 60 ? 1.25 : 1.05);
    if (f.kind == NodeFaultKind::kPfcStorm) factor = std::max(factor, f.value >= 1000 ? 1.3 : 1.05);
    if (f.kind == NodeFaultKind::kLinkDowntrain) factor = std::max(factor, 1.25);
  }
  return factor;
}

std::string RoceNetdev(size_t i) { return "eth" + std::to_string(i); }

Status PublishRoce(FakeEthernet& eth, const std::vector<SimRocePort>& want, std::vector<SimRocePort>& have) {
  Status first;
  auto note = [&first](Status st) {
    if (first.ok() && !st.ok()) first = st;
  };
  have.resize(want.size());
  for (size_t i = 0; i < want.size() && i < eth.nics().size(); ++i) {
    const SimRocePort& w = want[i];
    SimRocePort& h = have[i];
    if (w.operstate != h.operstate) note(eth.SetOperstate(i, w.operstate));
    if (w.speed_mbps != h.speed_mbps) note(eth.SetSpeed(i, w.speed_mbps));
    if (w.carrier_changes != h.carrier_changes) note(eth.SetCarrierChanges(i, w.carrier_changes));
    if (w.ethtool != h.ethtool) note(eth.SetEthtool(i, w.ethtool));
    for (const auto& [name, value] : w.hw) {
      auto it = h.hw.find(name);
      if (it == h.hw.end() || it->second != value) note(eth.SetHwCounter(i, name, value));
    }
    h = w;
  }
  return first;
}

}  // namespace faultline::sim
