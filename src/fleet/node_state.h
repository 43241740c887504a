// What the fleet analyzer holds about one node (docs/fleet.md "Memory"): a bounded recent
// history of its stream, enough to compare it with its peers, name its slow GPU, ask its
// isolator why (node_isolate.h) and correlate its diagnoses, and nothing more.
//   - workload series: per (job, kind) the newest max_samples samples in the window;
//   - readings: the latest value of each (component, kind) series, up to max_readings
//     (the agent stores a flat series once per change, so the latest is current however
//     old it is);
//   - findings and diagnoses: the newest max_findings / max_diagnoses, evidence cut to
//     max_evidence lines;
//   - which store rows it has already taken (RowRanges).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/types.h"
#include "fleet/dedup.h"
#include "fleet/fleet_topology.h"
#include "fleet/peers.h"
#include "fleet/wire.h"

namespace faultline::fleet {

struct NodeLimits {
  size_t max_series = 8;
  size_t max_samples = 32;
  size_t max_readings = 64;
  size_t max_findings = 16;
  size_t max_diagnoses = 16;
  size_t max_evidence = 4;
};

// One reading series' latest value, without the text and raw line it came with.
struct Reading {
  int64_t time_ns = 0;
  double value = 0;
  ObsKind kind = ObsKind::kOther;
  Layer layer = Layer::kOs;
  Source source = Source::kSim;
  ComponentType type = ComponentType::kHost;
  std::string name;  // component name
  std::string sub;   // what tells series of one kind apart: attrs "clock" (sm/mem) or "metric"
};

struct WorkSeries {
  std::string job;
  ObsKind kind = ObsKind::kStepTime;
  std::deque<PeerSample> samples;     // oldest first
  std::optional<uint64_t> last_step;  // ranks of one step fold into one sample
};

struct HeldDiagnosis {
  int64_t row_id = 0;
  Diagnosis diagnosis;
};

struct NodeState {
  std::string name;
  NodePlace place;
  const FleetNode* topo = nullptr;  // nullptr: not in the topology file
  std::vector<WorkSeries> series;
  std::vector<Reading> readings;
  std::vector<Finding> findings;         // oldest first
  std::vector<HeldDiagnosis> diagnoses;  // oldest first
  RowRanges observation_rows;
  RowRanges finding_rows;
  RowRanges diagnosis_rows;
  RowRanges action_rows;
  int64_t newest_ns = 0;  // the newest observation time taken from this node's batches

  std::string Rack() const;  // the topology's, else the subject's
};

// Whether an observation is a utilisation reading: kOther with attrs metric
// "utilization" / "gpu_util" (there is no ObsKind for it).
bool IsUtilization(const Observation& obs);

// Files one observation where it belongs (workload sample, reading, or nothing for
// events: the node's own detectors turn those into findings).
void HoldObservation(NodeState& node, const Observation& obs, const NodeLimits& limits);
void HoldFinding(NodeState& node, Finding finding, const NodeLimits& limits);
void HoldDiagnosis(NodeState& node, int64_t row_id, Diagnosis diagnosis, const NodeLimits& limits);

// Drops samples, findings and diagnoses that ended before `before_ns`, and series left empty.
void Forget(NodeState& node, int64_t before_ns);

// The node's GPUs: SM clock, power and utilisation per GPU component.
std::vector<GpuReading> GpuReadingsOf(const NodeState& node);

// Approximate heap + inline bytes the node's state takes (docs/fleet.md "Memory").
size_t ApproxBytes(const NodeState& node);

Json ToJson(const NodeState& node);
// kCorrupt-worthy input returns false; `node.topo` is left for the caller.
bool FromJson(const Json& j, NodeState& node);

}  // namespace faultline::fleet
