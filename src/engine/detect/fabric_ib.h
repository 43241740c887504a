// InfiniBand port health: symbol error / receive error rates, link error recovery and
// link integrity increments, link_downed flaps (N down/up cycles in a window), ports
// down for minutes, and ports running below their expected rate (e.g. 400 -> 200 Gb/s).
// HCA ports are joined to their switch ports (and cables) through the topology, so data
// from the switch side (observations on ib/<switch>/<port>) is correlated too.
//
// History is not required to say something: from a single sample (`collect sysfs`, or
// the agent's first one) a port that is not ACTIVE is reported at once with "since
// unknown" (ib_link_down at warning, lower confidence; the 2-minute persistence rule
// upgrades it to critical later), a port slower than most of its sibling ports (same
// link layer, HCA model and board) is reported as downtrained without a topology file,
// and a counter read at its maximum (pegged: PMA error counters stop there) is reported
// as "rate unknown" instead of feeding a rate of zero.
//
// Ethernet (RoCE) ports are never held to the InfiniBand defaults: no node-wide expected
// rate, no "down now" guess unless the topology lists them, siblings only of their own kind.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/detect/fabric_common.h"

namespace faultline {

class IbFabricDetector final : public Detector {
 public:
  IbFabricDetector(const FabricOptions& options, const Topology* topology);
  std::string_view name() const override { return "fabric_ib"; }
  void Observe(const Observation& obs) override;
  std::vector<Finding> Findings() const override;
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  struct PortState {
    bool seen_active = false;
    bool active = true;  // until a state observation says otherwise
    bool state_known = false;
    bool down_from_start = false;   // not ACTIVE since the first state observation: since unknown
    int64_t down_since_ns = 0;      // 0 while up
    std::deque<int64_t> downed_at;  // link_downed increments inside the flap window
    std::string group;              // siblings: link_layer|model|board_id ("" = no model known)
    bool ethernet = false;
    Observation last_state;  // the latest state observation (present-state rule)
    bool rate_known = false;
    bool rate_has_expected = false;  // judged against an explicit expected rate instead
    double rate = 0;
    int64_t rate_since_ns = 0;  // since when the port has run at `rate`
    Observation last_rate;
  };
  // The latest reading of one counter that sat at its maximum.
  struct Pegged {
    Observation obs;
    bool saturated = false;
  };
  // One port's readings of one counter, for the node-wide baseline rule.
  struct BaseReading {
    double first = 0;
    int64_t first_ns = 0;
    bool moved = false;  // read a value other than `first` since
  };
  // Every port's readings of one counter, by end; keyed by {link_layer, counter}.
  using BaseKey = std::pair<std::string, std::string>;
  using CounterPorts = std::map<std::string, BaseReading>;
  void Remember(const std::string& end, const Observation& obs);
  void ObserveState(const std::string& end, const Observation& obs);
  void ObserveRate(const std::string& end, const Observation& obs);
  void ObserveCounter(const std::string& end, const Observation& obs);
  bool ListedInTopology(const ComponentRef& ref) const;
  int ActiveSiblings(const std::string& end, const PortState& st) const;
  void AddPresentDown(std::map<std::string, fabric::EndIssue>& issues) const;
  void AddSiblingRates(std::map<std::string, fabric::EndIssue>& issues) const;
  void RememberBaseline(const std::string& end, const std::string& counter, const Observation& obs);
  bool OnStaticBaseline(const std::string& end, const std::string& counter, const Observation& obs) const;
  Finding StaticBaselineNote(const BaseKey& key, const std::vector<const Pegged*>& pegged) const;
  std::vector<Finding> PeggedFindings() const;
  fabric::LinkEnd Describe(const std::string& id, const fabric::EndIssue& issue) const;

  FabricOptions opt_;
  const Topology* topology_;
  fabric::CounterTracker counters_;
  std::map<std::string, PortState> ports_;
  std::map<std::string, fabric::EndIssue> issues_;
  std::map<std::string, Pegged> pegged_;  // by "<end>#<counter>"
  std::map<BaseKey, CounterPorts> baselines_;
  std::set<std::string> observed_;
  uint64_t revision_ = 0;  // Detector::Revision
};

}  // namespace faultline
