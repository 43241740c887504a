// RoCE / Ethernet fabric health (docs/ethernet.md): reads the ethernet source's
// `roce/<dev>/<port>` and `eth/<if>` observations and tells two things apart that both
// make a job slow:
//  - congestion (fabric_congestion, action monitor, never a hardware action): a PFC pause
//    storm (pause frames or paused time above a threshold) or an ECN/CNP surge, sustained
//    for `congestion_min_intervals` intervals, with no loss and no PHY errors on that port.
//    The traffic or the fabric's ECN/PFC setup is the cause; usually many ports (and many
//    nodes) at once. Background marking below the thresholds is normal and never reported.
//  - link faults (ib_link_errors / ib_link_down, the RDMA fabric's link classes: a RoCE port
//    is an InfiniBand transport over Ethernet and the part to touch is the same): CRC /
//    symbol errors, retransmissions, sequence errors and ACK timeouts, carrier flaps, a port
//    down for minutes, a speed below the expected one or below most sibling ports
//    (400G -> 200G). Findings name the port and, through the topology file (the same
//    `ib_ports` entries as InfiniBand: RDMA device + port, or an interface name with port
//    1), the cable and the switch port; the placement is fabric_common's (switch > cable >
//    port > device).
// An interface carrying a RoCE port is the same end as that port: its errors and the
// port's counters land on one finding (`roce/<dev>/<port>`, key `netdev`).
// Counters that go down are a new baseline (reset, driver reload), never a negative rate.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/detect/fabric_common.h"

namespace faultline {

struct RoceOptions {
  // Link faults (per port, per interval between two samples).
  double link_errors_per_min = 10;  // CRC / FCS / symbol / ICRC errors
  // Loss that only a broken path makes: sequence-error NAKs, ACK timeouts, retransmission
  // timeouts, transport retries exceeded.
  double loss_per_min = 10;
  // Reordering and retransmission that adaptive routing and congestion also cause in small
  // numbers: out_of_sequence, duplicate_request, roce_adp_retrans, roce_slow_restart.
  double reorder_per_min = 600;
  int flap_cycles = 3;  // link-down events in the window: a flapping link
  int64_t flap_window_ns = 10LL * 60 * 1'000'000'000;
  int64_t down_after_ns = 2LL * 60 * 1'000'000'000;  // operstate not up this long: down
  int sibling_min_agree = 2;  // speed siblings (same model): strict majority of at least this many
  // Congestion (per port): each signal's own rate.
  double ecn_cnp_per_s = 2000;        // np_ecn_marked_roce_packets, np_cnp_sent, rp_cnp_handled
  double pfc_pause_per_s = 1000;      // received PFC / global pause frames
  double pfc_paused_fraction = 0.05;  // share of the interval the port was paused (pause duration)
  int congestion_min_intervals = 2;   // consecutive intervals above: a storm, not a burst
  FabricOptions fabric;               // placement, evidence cap, episode gap, correlation window
};

class RoceFabricDetector final : public Detector {
 public:
  RoceFabricDetector(const RoceOptions& options, const Topology* topology);
  std::string_view name() const override { return "fabric_roce"; }
  void Observe(const Observation& obs) override;
  std::vector<Finding> Findings() const override;
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  struct EndState {
    ComponentRef ref;  // the end as findings name it
    std::string model;
    bool state_known = false;
    bool up = true;
    bool seen_up = false;
    int64_t down_since_ns = 0;
    bool speed_known = false;
    bool speed_has_expected = false;
    double speed_gbps = 0;
    Observation last_speed;
    std::map<int64_t, double> downs;    // sample time -> link-down events in that sample
    std::map<std::string, int> streak;  // congestion signal -> consecutive intervals above
  };
  std::string EndOf(const Observation& obs, ComponentRef& ref) const;
  void ObserveCounter(const std::string& end, const Observation& obs);
  void ObserveState(const std::string& end, const Observation& obs);
  void ObserveSpeed(const std::string& end, const Observation& obs);
  void MarkLink(const std::string& end, const Observation& obs, FaultClass cls, Severity sev,
                const std::string& reason);
  void MarkCongestion(const std::string& end, const Observation& obs, const std::string& mode,
                      const std::string& reason);
  void AddSiblingSpeeds(std::map<std::string, fabric::EndIssue>& issues) const;
  fabric::LinkEnd Describe(const std::string& id, const fabric::EndIssue& issue) const;
  std::vector<Finding> CongestionFindings(const std::map<std::string, fabric::EndIssue>& link_issues) const;

  RoceOptions opt_;
  fabric::CounterTracker counters_;
  std::map<std::string, EndState> ends_;
  std::map<std::string, fabric::EndIssue> issues_;     // link faults
  std::map<std::string, fabric::EndIssue> congested_;  // congestion
  std::set<std::string> observed_;
  uint64_t revision_ = 0;
};

}  // namespace faultline
