// NVLink health per link: CRC flit/data error rate (>= 100/s failure, lower but sustained
// a warning), any replay/recovery increase, links inactive that should be active; the
// NVSwitch side (per-port counters or SXid lines naming a link) is correlated with the GPU
// side through the topology to blame a cable/connector, one port, or a whole NVSwitch.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/detect/fabric_common.h"

namespace faultline {

class NvlinkFabricDetector final : public Detector {
 public:
  NvlinkFabricDetector(const FabricOptions& options, const Topology* topology);
  std::string_view name() const override { return "fabric_nvlink"; }
  void Observe(const Observation& obs) override;
  std::vector<Finding> Findings() const override;
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  // The link end an observation is about: "nvlink/<gpu>/<link>", "nvswitch/<sw>/<port>"
  // or "gpu/<idx>" for DCGM totals; "" when the observation is not about a link.
  std::string EndId(const Observation& obs) const;
  fabric::LinkEnd Describe(const std::string& id, const fabric::EndIssue& issue) const;
  void ObserveCounter(const std::string& end, const Observation& obs);
  void ObserveState(const std::string& end, const Observation& obs);

  FabricOptions opt_;
  const Topology* topology_;
  fabric::CounterTracker counters_;
  std::map<std::string, int> crc_streak_;   // consecutive intervals with CRC errors, by end + kind
  std::map<std::string, bool> was_active_;  // links seen active
  std::map<std::string, fabric::EndIssue> issues_;
  std::set<std::string> observed_;
  uint64_t revision_ = 0;  // Detector::Revision
};

}  // namespace faultline
