// The fleet simulator: N lightweight node models in one process, each producing what its
// agent would publish to NATS (fleet/wire.h) for a fleet scenario:
//   - change-only observations as the agent stores them: a job's step report per node
//     every `agent.step_report_s` (kStepTime + kThroughput, attrs job/rank/step), per-GPU
//     SM clock, power, temperature and clock event reasons every `agent.gpu_sample_s`,
//     PSU input voltage, coolant supply temperature and InfiniBand error counters every
//     `agent.oob_sample_s`, each published only when it changed;
//   - the node's own diagnoses for the injected faults, as its isolator would make them
//     (a PDU sag -> voltage_out_of_range on each node of the PDU, a hot cold plate ->
//     gpu_thermal on that GPU, ...), `agent.detect_s` after the symptom shows, stored
//     again every `agent.diagnosis_refresh_s` while it lasts;
// batched per node every `agent.batch_s` into Envelopes with store row ids and message
// ids ("<node>/obs/<first>-<last>", "<node>/diagnosis/<row>").
//
// Each node reports its own compute time per step (the time before the collective) and the
// job's step under way (seq), so a slow node stands out among its peers; a job's pauses
// (checkpoints, evaluation passes, data stalls: fleet_scenario.h FleetJob) slow every node
// of the job alike, in the same steps.
// Fabric errors (a bad cable, a degraded leaf) are recovered by link-level retry and do
// not change a node's own step time. Node physics: node_physics.h.
//
// Deterministic: a node's output depends only on the scenario, its seed and the node's
// position, whatever the order or granularity of AdvanceTo calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fleet/wire.h"
#include "sim/fleet/fleet_scenario.h"

namespace faultline::sim {

struct FleetSimStats {
  uint64_t observations = 0;
  uint64_t step_reports = 0;
  uint64_t diagnoses = 0;
  uint64_t envelopes = 0;
};

class FleetSim {
 public:
  explicit FleetSim(const FleetScenario& scenario);
  ~FleetSim();
  FleetSim(const FleetSim&) = delete;
  FleetSim& operator=(const FleetSim&) = delete;

  // Moves every node to scenario time t and appends what the agents published in
  // (previous t, t], node by node, each node's envelopes in publishing order.
  void AdvanceTo(double t, std::vector<fleet::Envelope>& out);
  // Publishes what every node still holds (the end of a run).
  void Flush(std::vector<fleet::Envelope>& out);

  double now() const;
  int64_t TimeNs(double t) const;  // scenario seconds -> UTC nanoseconds
  const FleetSimStats& stats() const;
  const FleetScenario& scenario() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The truth the faults imply, derived from the fleet and the node physics: a shared
// cause per infrastructure fault that touches at least two nodes, one straggler per
// node-local slowdown that makes a node in a job slower than its peers (a hot cold plate
// that actually throttles, a node_slow of at least `min_slowdown`), with the time the
// symptom begins. Scenario files state their truth by hand; tests check it agrees.
FleetTruth DeriveFleetTruth(const FleetScenario& scenario, double min_slowdown = 0.08);

// The nodes each fault touches (in fleet order; a leaf fault: the first `fraction` of the
// switch's nodes), and for fabric faults the node's port ("mlx5_0/1").
struct FaultReach {
  std::vector<size_t> nodes;         // topology indices
  std::vector<std::string> devices;  // per node, fabric faults only
};
FaultReach ReachOf(const FleetScenario& scenario, const FleetFault& fault);

}  // namespace faultline::sim
