// Straggler statistics (docs/fleet.md "Slow node among its peers"): pure functions over
// one job's per-node samples, no state. The analyzer (analyzer.cc) gathers the samples.
//
// Every sample is in "seconds per unit" (a step time as is, a throughput inverted, as
// the node's own workload detector does), so larger is always slower.
//
// For one (job, kind) group:
//   x_n   = median of node n's last recent_samples samples (one noisy sample cannot move it);
//   m     = median over the nodes of x_n; MAD over the nodes of |x_n - m|;
//   scale = max(1.4826 * MAD, min_spread * m)  (identical healthy nodes have MAD 0);
//   z_n   = (x_n - m) / scale, slowdown_n = x_n / m - 1;
//   slow  = z_n > mad_threshold and slowdown_n >= min_slowdown, and the node's newest
//           `persistence` samples are each above m * (1 + min_slowdown) (persistence is
//           counted in samples, so how often the caller evaluates does not matter).
// A job-wide phase (a checkpoint, an eval pass) moves m; while more than phase_fraction
// of the nodes' newest samples sit above the threshold the job is "in a phase" and no
// node of it is judged slow.
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
  int persistence = 3;
  size_t min_peers = 4;
  size_t recent_samples = 5;
  double min_spread = 0.01;
  double phase_fraction = 0.5;
};

struct PeerSample {
  int64_t time_ns = 0;
  double seconds = 0;  // per step or per sample: larger is slower
};

// One node's samples of the group, oldest first.
struct PeerSeries {
  size_t node = 0;  // caller's node index
  std::vector<PeerSample> samples;
};

struct PeerVerdict {
  size_t node = 0;
  double recent = 0;          // x_n
  double z = 0;               // robust z against the group
  double slowdown = 0;        // x_n / m - 1
  int slow_run = 0;           // newest consecutive samples above the threshold
  int64_t slow_since_ns = 0;  // time of the oldest sample of that run
  bool slow = false;
};

struct GroupVerdict {
  bool judged = false;  // enough peers with samples
  bool in_phase = false;
  double median = 0;  // m
  double mad = 0;
  double threshold = 0;            // m * (1 + min_slowdown)
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
