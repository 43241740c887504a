// Straggler statistics (docs/fleet.md "Slow node among its peers"): pure functions over
// one job's per-node samples, no state. The analyzer (analyzer.cc) gathers the samples.
//
// Every sample is in "seconds per unit" (a step time as is, a throughput inverted, as
// the node's own workload detector does), so larger is always slower.
//
// A node is slow relative to its peers in the same steps. Each of a node's samples is
// divided by its peers' pace in the same steps: the median of the job's other samples of
// that step (bins of a quarter of the steps between a node's reports, one step at least),
// widened a bin each side at a time (up to 8) while they are fewer than 3. Steps are the job's step numbers (the
// observations' seq) when every node reports them and the nodes agree on them, as the ranks of synchronous training do
// (StepsAligned); otherwise time stands for them: bins of half the report period, the
// sample's and the two next to it (every node's one or two reports) at first, widened
// while they hold fewer than half the job's nodes. A pause the whole job shares (a checkpoint, an evaluation pass, a
// data stall) raises both alike, so it is nobody's slowness however the nodes' reports
// fall around it. Compared by time, a window whose middle third of samples spans more
// than a quarter of their median straddles a change of the job's pace (a pause's edge):
// its samples are not judged. Over those ratios r, for one (job, kind) group:
//   x_n    = median of node n's newest recent_samples ratios (one noisy sample cannot move it);
//   m      = median over the nodes of x_n; MAD over the nodes of |x_n - m|;
//   jitter = 1.4826 * MAD of all the nodes' ratios in the window (one report's noise,
//            measured on every sample held: a small job's newest few say too little);
//   scale  = max(1.4826 * MAD, 1.2533 * jitter / sqrt(recent_samples), min_spread * m)
//            (identical healthy nodes have MAD 0; a small job's MAD can be small by luck);
//   need   = max(min_slowdown, jitter_factor * jitter): the least slowdown that is not jitter;
//   z_n    = (x_n - m) / scale, slowdown_n = x_n / m - 1;
//   slow   = at each of the node's newest `persistence` samples (report periods, so how
//            often the caller evaluates does not matter): the ratio above m * (1 + need),
//            and the recent median ending there robustly (z > mad_threshold) and materially
//            (slowdown >= need) above the job's. The verdict must persist, not only the
//            reports: with recent_samples 5 and persistence 3, a node is named at its 5th
//            slow report, and three unlucky reports in a row name nobody.
// A report states the slowdown over the node's slow run (peers.h PeerVerdict).
// A node is calm (a straggler may close) when x_n <= m * (1 + need / 2) and none of its
// newest `persistence` ratios is above m * (1 + need): entering and leaving at different
// levels, and both persistently, so a node hovering at the threshold does not flap.
// While more than phase_fraction of the nodes' newest ratios sit above the threshold the
// job is "in a phase" and no node of it is judged slow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace faultline::fleet {

struct PeerOptions {
  double mad_threshold = 4.0;
  double min_slowdown = 0.08;
  double jitter_factor = 3.0;
  int persistence = 3;
  size_t min_peers = 4;
  size_t recent_samples = 5;
  double min_spread = 0.01;
  double phase_fraction = 0.5;
};

struct PeerSample {
  int64_t time_ns = 0;
  double seconds = 0;  // per step or per sample: larger is slower
  int64_t step = -1;   // the job's step it reports (the observation's seq); -1 when unknown
};

// One node's samples of the group, oldest first.
struct PeerSeries {
  size_t node = 0;  // caller's node index
  std::vector<PeerSample> samples;
};

struct PeerVerdict {
  size_t node = 0;
  double recent = 0;    // x_n: the median ratio to the peers in the same steps
  double z = 0;         // robust z against the group
  double slowdown = 0;  // x_n / m - 1
  // What a report states: over the node's slow run (its newest samples above the
  // threshold; its recent ones when none), the median ratio / m - 1, and the medians of
  // its samples and of the peers' they were compared with. x_n mixes in the samples from
  // before the slowdown began until `recent` slow ones have come.
  double stated_slowdown = 0;
  double seconds = 0;
  double peer_seconds = 0;
  int slow_run = 0;           // newest consecutive ratios above the threshold
  int64_t slow_since_ns = 0;  // time of the oldest sample of that run
  bool judged = false;        // it had samples with peers to compare with
  bool slow = false;
  bool calm = false;  // back at the peers' pace: a straggler may close
};

struct GroupVerdict {
  bool judged = false;  // enough peers with samples
  bool in_phase = false;
  double median = 0;  // m (a ratio: about 1)
  double mad = 0;
  double jitter = 0;               // one report's relative noise
  double min_slowdown = 0;         // need: max(min_slowdown, jitter_factor * jitter)
  double threshold = 0;            // m * (1 + need)
  bool by_step = false;            // compared by step number (StepsAligned), else by time
  int64_t bin = 0;                 // the pace's bins, in steps (or ns)
  std::vector<PeerVerdict> nodes;  // one per series given (same order)
};

double Median(std::vector<double> values);  // 0 for none

GroupVerdict JudgePeers(const std::vector<PeerSeries>& group, const PeerOptions& options);

// One GPU of a straggler node and how it compares (docs/fleet.md "Naming the GPU").
struct GpuReading {
  std::string gpu;   // component name ("3")
  double clock = 0;  // SM clock MHz, 0 = unknown
  double power = 0;  // W, 0 = unknown
  double util = -1;  // %, -1 = unknown
};

struct SlowGpu {
  std::string gpu;     // "" when no GPU stands out (the whole node is slow)
  std::string metric;  // "clock", "power" or "utilization"
  double value = 0;
  double node_median = 0;  // the node's other GPUs
  double peer_median = 0;  // the peers' GPUs
  double drop = 0;         // 1 - value / min(node_median, peer_median) (or peer only)
};

// The GPU whose clock (else power, else utilisation) is lowest relative to both the
// node's other GPUs and the peers' GPUs (`peers`: the median of each metric over the
// peers' GPUs, 0 / -1 = unknown), when it is at least min_drop below the lower of the two
// references; else none (a node-wide cause, or no per-GPU data).
SlowGpu NameSlowGpu(const std::vector<GpuReading>& node, const GpuReading& peers, double min_drop = 0.05);

}  // namespace faultline::fleet
