// PCIe link health: replay rate against the expected rate for the link's generation and
// width, links trained below their maximum width or speed, links slower than most of
// their siblings (functions with the same PCI id, e.g. 7 GPUs at x16 and one at x8, even
// when its own max attributes say nothing), corrected-AER storms placed on the right
// part of the PCIe tree, and uncorrected/fatal AER. See fabric_detectors.h.
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
  std::optional<uint64_t> Revision() const override { return revision_; }

  // Expected replays per minute for a link (DCGM figure per lane times lanes).
  double ExpectedReplaysPerMinute(int gen, int width) const;

 private:
  struct LinkState {
    std::optional<int> gen, max_gen, width, max_width;
  };
  // The latest sysfs link reading of one function (sibling comparison).
  struct LinkReading {
    Observation obs;
    bool below_max = false;  // already judged by the below-max rule
    int64_t since_ns = 0;    // since when it has read this value
  };
  void ObserveLink(const Observation& obs);
  void RememberReading(const Observation& obs, bool below_max);
  void AddSiblingDowntrained(std::map<std::string, fabric::EndIssue>& issues) const;
  Finding DowntrainedFinding(const std::string& id, const fabric::EndIssue& issue) const;
  void ObserveReplay(const Observation& obs);
  void ObserveAer(const Observation& obs);
  std::vector<Finding> PlaceAerStorms() const;
  std::string PartFor(const ComponentRef& ref) const;

  FabricOptions opt_;
  fabric::CounterTracker counters_;
  std::map<std::string, LinkState> links_;               // by component id
  std::map<std::string, ComponentRef> pcie_by_bdf_;      // latest keys seen for each pcie/<bdf>
  std::map<std::string, fabric::EndIssue> downtrained_;  // by component id
  std::map<std::string, LinkReading> readings_;          // by component id + "#" + kind
  std::map<std::string, fabric::EndIssue> replays_;      // by component id
  std::map<std::string, fabric::EndIssue> storms_;       // corrected AER, by BDF
  std::map<std::string, fabric::EndIssue> uncorrected_;  // by BDF + severity
  uint64_t revision_ = 0;                                // Detector::Revision
};

}  // namespace faultline
