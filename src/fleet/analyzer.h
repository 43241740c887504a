// The fleet analyzer (DESIGN.md "Fleet"): what one node cannot see. It consumes the
// agents' envelopes (wire.h) and finds
//   - the slow node among its peers: per job, each node's step time / throughput against
//     the job's median and MAD over a sliding window, with persistence, so one noisy sample
//     is not a straggler and a phase the whole job goes through (a checkpoint) is not one
//     either; then the slow GPU (clocks, power, utilisation against the node's other GPUs
//     and the peers'), and the node isolator's answer for the window (the why-slow logic);
//   - shared causes: per-node diagnoses correlated through the fleet topology (several
//     nodes on one PDU/feed with power symptoms -> the PDU/feed; one cooling loop -> the
//     loop; both ends of one cable -> the cable; many ports on one switch -> the switch;
//     nodes on one driver version degrading after a roll-out -> the driver; a whole rack
//     slow -> its infrastructure, not N stragglers).
//
// Idempotent: an envelope whose msg_id (or an observation whose node/row id) was seen
// before changes nothing, so at-least-once delivery never double-counts. State is bounded
// by the window and the node count, and can be saved (Snapshot) to a JetStream KV bucket
// and restored after a restart.
//
// Thread-compatible: one analyzer per consumer thread; partition nodes by job or rack to
// scale out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "fleet/fleet_topology.h"
#include "fleet/wire.h"

namespace faultline::fleet {

struct AnalyzerOptions {
  int64_t window_ns = int64_t{600} * 1'000'000'000;  // sliding window of peer samples
  double mad_threshold = 4.0;        // robust z = (x - median) / (1.4826 * MAD) above this ...
  double min_slowdown = 0.08;        // ... and at least this much slower than the median
  int persistence = 3;               // consecutive evaluations before a straggler is named
  size_t min_peers = 4;              // nodes in a job before peers are compared
  size_t min_correlated_nodes = 2;   // nodes sharing a part before it is named
  size_t max_nodes = 100'000;        // state bound; envelopes from more nodes are refused
};

struct IngestStats {
  size_t envelopes = 0;
  size_t observations = 0;
  size_t duplicates = 0;  // envelopes or observations seen before
  size_t refused = 0;     // over a bound (counted, never fatal)
};

class FleetAnalyzer {
 public:
  FleetAnalyzer(FleetTopology topology, AnalyzerOptions options = {});
  ~FleetAnalyzer();
  FleetAnalyzer(const FleetAnalyzer&) = delete;
  FleetAnalyzer& operator=(const FleetAnalyzer&) = delete;

  // Takes one envelope. Never fails on content: what cannot be used is counted.
  void Ingest(const Envelope& envelope);
  const IngestStats& stats() const;

  // Judges peers and correlations as of now_ns. Returns fleet diagnoses that are new or
  // changed since the last call (same id, grown span/evidence); an unchanged one is not
  // returned again.
  std::vector<FleetDiagnosis> Evaluate(int64_t now_ns);

  // Every fleet diagnosis currently open.
  std::vector<FleetDiagnosis> Open() const;

  // The analyzer's state as bytes (for a KV bucket) and back. Restore on a fresh
  // analyzer; kCorrupt when the bytes are not a snapshot of this version.
  std::string Snapshot() const;
  Status Restore(std::string_view snapshot);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline::fleet
