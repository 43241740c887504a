// Shared machinery of the fabric detectors: counter deltas with reset handling, the
// per-end issue record, and link placement (cable vs port vs switch vs device).
// Internal to faultline_detect; see fabric_detectors.h for the contract.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/types.h"
#include "engine/detect/fabric_detectors.h"

namespace faultline::fabric {

// Increase of a cumulative counter between two samples.
struct CounterDelta {
  double delta = 0;
  double seconds = 0;
  double PerSecond() const { return seconds > 0 ? delta / seconds : 0; }
  double PerMinute() const { return PerSecond() * 60; }
};

// Remembers the last value of each counter. The first sample of a key and any sample
// where the value went down (reset, reboot, driver reload) only set the baseline.
class CounterTracker {
 public:
  std::optional<CounterDelta> Update(const std::string& key, double value, int64_t time_ns);

 private:
  struct Last {
    double value;
    int64_t time_ns;
  };
  std::map<std::string, Last> last_;
};

// Appends, keeping the first max-1 items and the latest one.
void AddEvidence(std::vector<Evidence>& list, Evidence e, size_t max);

// What went wrong on one end of a link (or on one device), accumulated over samples.
struct EndIssue {
  ComponentRef component;
  FaultClass fault_class = FaultClass::kNone;
  Severity severity = Severity::kInfo;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  uint64_t count = 0;             // bad samples
  int episodes = 0;               // separate bursts (gap > episode_gap_ns)
  std::set<std::string> reasons;  // "CRC flit 150/s", "rate 200 < 400 Gb/s"
  std::vector<Evidence> evidence;
  std::map<std::string, std::string> attrs;
  // Caps for a finding judged from the present state alone (a port down in the first
  // sample, "since unknown"): placement never reports more certainty than this, and
  // `monitor_only` keeps a guess (maybe just uncabled) from asking anyone to touch hardware.
  double max_confidence = 1.0;
  bool monitor_only = false;

  // Records one bad sample.
  void Mark(const Observation& obs, FaultClass cls, Severity sev, const std::string& reason, const FabricOptions& opt);
};

// One erroring end, as the placement logic sees it.
struct LinkEnd {
  std::string id;  // "nvlink/3/11", "nvswitch/2/37", "ib/mlx5_0/1", "ib/leaf-07/17"
  const EndIssue* issue = nullptr;
  std::string peer;         // the other end's id per topology, "" when unknown
  std::string switch_name;  // the switch the link lands on ("" when unknown / no switch)
  std::string switch_port;
  ComponentType switch_type = ComponentType::kNvswitch;
  std::string cable;        // cable id per topology
  std::string port_part;    // this end's port/transceiver, human readable
  bool device_end = false;  // a GPU or HCA (an RMA candidate), not a switch port
};

// Turns erroring ends into findings: switch (many ports) > cable (both ends) > port
// (one end; rma when the device end failed repeatedly). `observed` holds every end id
// that produced data, to tell "the peer is clean" from "nothing known about the peer".
// `switch_class` is the fault class of a whole-switch finding.
std::vector<Finding> PlaceLinkFaults(const std::vector<LinkEnd>& ends, const std::set<std::string>& observed,
                                     FaultClass switch_class, Action switch_action, const FabricOptions& opt);

// A Finding carrying the issue's facts (class, severity, span, evidence, attrs).
Finding FindingFrom(const EndIssue& issue, Layer layer = Layer::kFabric);

std::string FormatRate(double v);

}  // namespace faultline::fabric
