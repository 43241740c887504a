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
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "fleet/fleet_topology.h"
#include "fleet/wire.h"

namespace faultline::fleet {

struct AnalyzerOptions {
  int64_t window_ns = int64_t{600} * 1'000'000'000;  // sliding window of peer samples and diagnoses
  double mad_threshold = 4.0;                        // robust z = (x - median) / (1.4826 * MAD) above this ...
  double min_slowdown = 0.08;                        // ... and at least this much slower than the median
  // ... and than jitter_factor times the job's report-to-report jitter (a job whose steps
  // jitter by 6% names no node less than 18% slower: less is the jitter's).
  double jitter_factor = 3.0;
  // The node's newest samples that must each be min_slowdown slower than the job's median
  // before it is named (counted in samples, not evaluations: how often Evaluate runs does
  // not change the answer). One noisy sample is never a straggler.
  int persistence = 3;
  size_t min_peers = 4;             // nodes in a job before peers are compared
  size_t min_correlated_nodes = 2;  // nodes sharing a part before it is named
  size_t max_nodes = 100'000;       // state bound; envelopes from more nodes are refused
  // State bound in bytes (ApproxStateBytes, measured at each Evaluate): past it envelopes
  // from nodes not yet held are refused. Each node's own state is bounded by the limits
  // below and every name and text it holds is cut (fleet/names.h).
  size_t max_state_bytes = size_t{1} << 30;
  // Peer statistics (peers.h): samples per node in its "recent" median; the smallest
  // spread assumed (identical healthy nodes have MAD 0); the share of a job's nodes slow
  // at once that makes it the job's own phase (a checkpoint), not stragglers.
  size_t recent_samples = 5;
  double min_spread = 0.01;
  double phase_fraction = 0.5;
  // A rack is named instead of its nodes when at least min_rack_nodes of a job's nodes in
  // it, and at least rack_fraction of them, are slow, and the job has nodes in other racks.
  size_t min_rack_nodes = 3;
  double rack_fraction = 0.5;
  double min_gpu_drop = 0.05;    // a GPU this much below its references is the slow one
  size_t min_switch_ports = 3;   // nodes with link faults on one switch before it is named
  size_t max_msg_ids = 1 << 18;  // message ids remembered for dedup (8 + ~40 bytes each)
  // Per-node history bounds (node_state.h; docs/fleet.md "Memory").
  size_t max_series_per_node = 8;
  size_t max_samples_per_series = 32;
  size_t max_readings_per_node = 64;
  size_t max_findings_per_node = 16;
  size_t max_diagnoses_per_node = 16;
  size_t max_evidence = 4;
};

struct IngestStats {
  size_t envelopes = 0;
  size_t observations = 0;
  size_t duplicates = 0;  // envelopes or observations seen before
  size_t refused = 0;     // over a bound or unreadable (counted, never fatal)
  size_t records = 0;     // findings, diagnoses and actions taken
  size_t names_cut = 0;   // envelopes whose node, rack or site name was over kMaxNameBytes (cut, names.h)
  bool operator==(const IngestStats&) const = default;
};

class FleetAnalyzer {
 public:
  FleetAnalyzer(FleetTopology topology, AnalyzerOptions options = {});
  ~FleetAnalyzer();
  FleetAnalyzer(const FleetAnalyzer&) = delete;
  FleetAnalyzer& operator=(const FleetAnalyzer&) = delete;

  // Takes one envelope. Never fails on content: what cannot be used is counted.
  void Ingest(const Envelope& envelope);
  // Decodes a message (wire.h) and takes it; one that does not decode is counted as
  // refused and its Status returned (the consumer acks it and keeps going).
  Status IngestMessage(std::string_view bytes, const WireLimits& limits = {});
  const IngestStats& stats() const;

  // Judges peers and correlations as of now_ns (samples and diagnoses older than
  // now_ns - window_ns are forgotten). Returns, sorted by id, the fleet diagnoses that opened
  // or changed since the last call: same id, with a changed cause, component, class,
  // action, severity, nodes or links (docs/fleet.md "Fleet diagnoses"). A span that only
  // grew is not a change; an unchanged one is not returned again.
  std::vector<FleetDiagnosis> Evaluate(int64_t now_ns);

  // Every fleet diagnosis currently open, by id. A straggler or rack closes once its nodes
  // are calm (peers.h: back under half the slowdown that names them, persistently); one that
  // opens again within window_ns of closing takes back its id and what was last reported,
  // so a node that throttles on and off is one report, not one per bout.
  std::vector<FleetDiagnosis> Open() const;

  size_t nodes() const;             // nodes with state
  size_t ApproxStateBytes() const;  // what the per-node state takes (docs/fleet.md "Memory")

  // The analyzer's state as bytes (for a KV bucket) and back. Restore on a fresh
  // analyzer (kInvalidArgument once it has taken anything); kCorrupt when the bytes are not
  // a snapshot of this version. About 4 KB per node (docs/fleet.md "Memory"): a store
  // with a smaller value limit splits the bytes over several keys.
  std::string Snapshot() const;
  Status Restore(std::string_view snapshot);
  // The same bytes as Snapshot(), handed to write in pieces (a node, a diagnosis, a few
  // bytes of syntax) as they are made: nothing the size of the whole is held here, so a
  // writer that sends them on in chunks keeps the peak near one chunk (issue 25).
  using SnapshotSink = std::function<void(std::string_view piece)>;
  void WriteSnapshot(const SnapshotSink& write) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline::fleet
