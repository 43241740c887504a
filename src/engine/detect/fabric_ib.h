// InfiniBand port health: symbol error / receive error rates, link error recovery and
// link integrity increments, link_downed flaps (N down/up cycles in a window), ports
// down for minutes, and ports running below their expected rate (e.g. 400 -> 200 Gb/s).
// HCA ports are joined to their switch ports (and cables) through the topology, so data
// from the switch side (observations on ib/<switch>/<port>) is correlated too.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/detect/fabric_common.h"

namespace faultline {

class IbFabricDetector final : public Detector {
 public:
  IbFabricDetector(const FabricOptions& options, const Topology* topology);
  std::string_view name() const override { return "fabric_ib"; }
  void Observe(const Observation& obs) override;
  std::vector<Finding> Findings() const override;

 private:
  struct PortState {
    bool seen_active = false;
    bool active = true;
    int64_t down_since_ns = 0;      // 0 while up
    std::deque<int64_t> downed_at;  // link_downed increments inside the flap window
  };
  void ObserveState(const std::string& end, const Observation& obs);
  void ObserveRate(const std::string& end, const Observation& obs);
  void ObserveCounter(const std::string& end, const Observation& obs);
  fabric::LinkEnd Describe(const std::string& id, const fabric::EndIssue& issue) const;

  FabricOptions opt_;
  const Topology* topology_;
  fabric::CounterTracker counters_;
  std::map<std::string, PortState> ports_;
  std::map<std::string, fabric::EndIssue> issues_;
  std::set<std::string> observed_;
};

}  // namespace faultline
