// PCIe link health: replay rate against the expected rate for the link's generation and
// width, links trained below their maximum width or speed, corrected-AER storms placed
// on the right part of the PCIe tree, and uncorrected/fatal AER. See fabric_detectors.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/detect/fabric_common.h"

namespace faultline {

class PcieFabricDetector final : public Detector {
 public:
  PcieFabricDetector(const FabricOptions& options, const Topology* topology);
  std::string_view name() const override { return "fabric_pcie"; }
  void Observe(const Observation& obs) override;
  std::vector<Finding> Findings() const override;

  // Expected replays per minute for a link (DCGM figure per lane times lanes).
  double ExpectedReplaysPerMinute(int gen, int width) const;

 private:
  struct LinkState {
    std::optional<int> gen, max_gen, width, max_width;
  };
  void ObserveLink(const Observation& obs);
  void ObserveReplay(const Observation& obs);
  void ObserveAer(const Observation& obs);
  std::vector<Finding> PlaceAerStorms() const;
  std::string PartFor(const ComponentRef& ref) const;

  FabricOptions opt_;
  fabric::CounterTracker counters_;
  std::map<std::string, LinkState> links_;               // by component id
  std::map<std::string, ComponentRef> pcie_by_bdf_;      // latest keys seen for each pcie/<bdf>
  std::map<std::string, fabric::EndIssue> downtrained_;  // by component id
  std::map<std::string, fabric::EndIssue> replays_;      // by component id
  std::map<std::string, fabric::EndIssue> storms_;       // corrected AER, by BDF
  std::map<std::string, fabric::EndIssue> uncorrected_;  // by BDF + severity
};

}  // namespace faultline
