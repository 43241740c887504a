#include "fleet/peers.h"

#include <algorithm>
#include <cmath>

namespace faultline::fleet {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double hi = values[mid];
  if (values.size() % 2 == 1) return hi;
  const double lo = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

namespace {

double RecentMedian(const std::vector<PeerSample>& samples, size_t recent) {
  const size_t n = std::min(recent, samples.size());
  std::vector<double> last;
  last.reserve(n);
  for (size_t i = samples.size() - n; i < samples.size(); ++i) last.push_back(samples[i].seconds);
  return Median(std::move(last));
}

// The newest samples above the threshold, counted back from the newest.
void SlowRun(const std::vector<PeerSample>& samples, double threshold, PeerVerdict& v) {
  for (size_t i = samples.size(); i-- > 0;) {
    if (!(samples[i].seconds > threshold)) break;
    ++v.slow_run;
    v.slow_since_ns = samples[i].time_ns;
  }
}

}  // namespace

GroupVerdict JudgePeers(const std::vector<PeerSeries>& group, const PeerOptions& options) {
  GroupVerdict g;
  std::vector<double> recents;
  for (const PeerSeries& s : group) {
    PeerVerdict v;
    v.node = s.node;
    if (!s.samples.empty()) {
      v.recent = RecentMedian(s.samples, std::max<size_t>(options.recent_samples, 1));
      recents.push_back(v.recent);
    }
    g.nodes.push_back(v);
  }
  if (recents.size() < std::max<size_t>(options.min_peers, 2)) return g;
  g.judged = true;
  g.median = Median(recents);
  for (double& r : recents) r = std::abs(r - g.median);
  g.mad = Median(std::move(recents));
  if (!(g.median > 0)) return g;
  const double scale = std::max(1.4826 * g.mad, options.min_spread * g.median);
  g.threshold = g.median * (1 + options.min_slowdown);
  size_t newest_above = 0, with_samples = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    const auto& samples = group[i].samples;
    if (samples.empty()) continue;
    ++with_samples;
    if (samples.back().seconds > g.threshold) ++newest_above;
    PeerVerdict& v = g.nodes[i];
    v.z = scale > 0 ? (v.recent - g.median) / scale : 0;
    v.slowdown = v.recent / g.median - 1;
    SlowRun(samples, g.threshold, v);
  }
  // Most of the job slower at once is the job's own phase: nobody is a straggler in it.
  g.in_phase = static_cast<double>(newest_above) > options.phase_fraction * static_cast<double>(with_samples);
  if (g.in_phase) return g;
  for (PeerVerdict& v : g.nodes) {
    v.slow = v.z > options.mad_threshold && v.slowdown >= options.min_slowdown && v.slow_run >= options.persistence;
  }
  return g;
}

namespace {

double Metric(const GpuReading& r, int metric) {
  switch (metric) {
    case 0:
      return r.clock;
    case 1:
      return r.power;
    default:
      return r.util;
  }
}

constexpr const char* kMetricNames[] = {"clock", "power", "utilization"};

bool Known(double v, int metric) { return metric == 2 ? v >= 0 : v > 0; }

// The lowest GPU of one metric against the node's other GPUs and the peers.
SlowGpu LowestOf(const std::vector<GpuReading>& node, const GpuReading& peers, int metric) {
  SlowGpu best;
  const double peer = Metric(peers, metric);
  for (size_t i = 0; i < node.size(); ++i) {
    const double v = Metric(node[i], metric);
    if (!Known(v, metric)) continue;
    std::vector<double> others;
    for (size_t j = 0; j < node.size(); ++j) {
      if (j != i && Known(Metric(node[j], metric), metric)) others.push_back(Metric(node[j], metric));
    }
    const double own = Median(others);
    // A lone GPU is judged against the peers only; otherwise against the lower reference,
    // so a node-wide drop (every GPU low) names no single GPU.
    double ref = 0;
    if (!others.empty() && Known(peer, metric)) {
      ref = std::min(own, peer);
    } else if (!others.empty()) {
      ref = own;
    } else if (Known(peer, metric)) {
      ref = peer;
    }
    if (!(ref > 0)) continue;
    const double drop = 1 - v / ref;
    if (drop > best.drop) {
      best = {node[i].gpu, kMetricNames[metric], v, own, Known(peer, metric) ? peer : 0, drop};
    }
  }
  return best;
}

}  // namespace

SlowGpu NameSlowGpu(const std::vector<GpuReading>& node, const GpuReading& peers, double min_drop) {
  // Clock first: it is what the slowdown is made of; power and utilisation speak when
  // clocks are not reported.
  for (int metric = 0; metric < 3; ++metric) {
    SlowGpu s = LowestOf(node, peers, metric);
    if (!s.gpu.empty() && s.drop >= min_drop) return s;
  }
  return {};
}

}  // namespace faultline::fleet
