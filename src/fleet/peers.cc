#include "fleet/peers.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace faultline::fleet {

namespace {

// The median of `values`, reordering them (no copy).
double MedianInPlace(std::vector<double>& values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double hi = values[mid];
  if (values.size() % 2 == 1) return hi;
  const double lo = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

}  // namespace

double Median(std::vector<double> values) { return MedianInPlace(values); }

namespace {

// How many of the job's samples a reference is the median of at most: the median of 63
// is as good a reference as that of thousands, at a bounded cost.
constexpr size_t kMaxReference = 63;
constexpr size_t kMaxWiden = 8;  // a bin's window grows to 8 bins each side at most
constexpr int64_t kMaxBins = 1 << 14;
constexpr size_t kJitterSamples = 4096;  // ratios a job's jitter is measured on, at least
constexpr double kMixedSpread = 0.25;    // middle third's span / median of a window straddling a pause

// Where a sample sits: its time, or the job's step it reports.
using KeyFn = int64_t (*)(const PeerSample&);
int64_t TimeKey(const PeerSample& p) { return p.time_ns; }
int64_t StepKey(const PeerSample& p) { return p.step; }

// The typical gap between a node's reports (in time or in steps): the median over the
// nodes of the median gap between their newest samples.
double ReportGap(const std::vector<PeerSeries>& group, size_t tail, KeyFn key) {
  std::vector<double> per_node, gaps;
  for (const PeerSeries& s : group) {
    const size_t n = s.samples.size();
    if (n < 2) continue;
    gaps.clear();
    for (size_t i = n > tail ? n - tail : 1; i < n; ++i) {
      gaps.push_back(static_cast<double>(key(s.samples[i]) - key(s.samples[i - 1])));
    }
    per_node.push_back(MedianInPlace(gaps));
  }
  return MedianInPlace(per_node);
}

// Whether the nodes report the job's steps and agree on them, as the ranks of synchronous
// training do (every rank runs step k at the same time): each node's newest step, carried
// forward at the job's step rate to the group's newest time, lands within a couple of
// reports' worth of steps of the others'. Then peers are compared by step, which no pause
// can misalign; otherwise (no steps, or ranks counting their own) by time.
bool StepsAligned(const std::vector<PeerSeries>& group, size_t tail, double steps_per_report) {
  std::vector<double> rates, at;
  int64_t newest = INT64_MIN;
  for (const PeerSeries& s : group) {
    if (s.samples.empty()) continue;
    const size_t first = s.samples.size() - std::min(tail, s.samples.size());
    for (size_t i = first; i < s.samples.size(); ++i) {
      if (s.samples[i].step < 0) return false;
    }
    const PeerSample &a = s.samples[first], &b = s.samples.back();
    if (b.time_ns > a.time_ns)
      rates.push_back(static_cast<double>(b.step - a.step) / static_cast<double>(b.time_ns - a.time_ns));
    newest = std::max(newest, b.time_ns);
  }
  const double rate = MedianInPlace(rates);
  if (!(rate > 0)) return false;
  for (const PeerSeries& s : group) {
    if (!s.samples.empty()) {
      at.push_back(static_cast<double>(s.samples.back().step) +
                   rate * static_cast<double>(newest - s.samples.back().time_ns));
    }
  }
  const double mid = Median(at);
  const double tolerance = 2 * steps_per_report + 2;
  return std::all_of(at.begin(), at.end(), [&](double x) { return std::abs(x - mid) <= tolerance; });
}

// The job's pace along its steps (or its time): its samples binned by step (bins of a
// quarter of the steps between a node's reports; by time, of half the time) and, per bin,
// the samples in it (by time: and its two neighbours, every node's one or two reports),
// widened while they are fewer than `need`, kept sorted (at most kMaxReference of them,
// evenly taken). A sample's reference is their median without the sample itself: the pace
// of its peers in the same steps. A pause every rank shares moves both alike.
class JobPace {
 public:
  JobPace(const std::vector<PeerSeries>& group, KeyFn key, int64_t since, int64_t width, size_t first_radius,
          size_t need)
      : key_(key), first_radius_(first_radius) {
    int64_t newest = since;
    for (const PeerSeries& s : group) {
      if (!s.samples.empty()) newest = std::max(newest, key_(s.samples.back()));
    }
    width_ = std::max<int64_t>({1, width, (newest - since) / kMaxBins + 1});
    origin_ = since - static_cast<int64_t>(kMaxWiden) * width_;
    const auto bins = static_cast<size_t>((newest - origin_) / width_ + 1);
    Bin(group, bins);
    window_start_.assign(bins + 1, 0);
    for (size_t b = 0; b < bins; ++b) {
      Window(b, need);
      window_start_[b + 1] = windows_.size();
    }
  }

  // The median of the window of p's bin without p's own value (the sample judged); 0 when
  // too few samples were near.
  double PeersAt(const PeerSample& p) const {
    const int64_t k = key_(p);
    const double own = p.seconds;
    if (k < origin_) return 0;
    const auto b = static_cast<size_t>((k - origin_) / width_);
    if (b + 1 >= window_start_.size()) return 0;
    const double* w = windows_.data() + window_start_[b];
    const size_t n = window_start_[b + 1] - window_start_[b];
    const size_t at = static_cast<size_t>(std::lower_bound(w, w + n, own) - w);
    const bool found = at < n && w[at] == own;  // not there when the window was thinned past it
    const size_t m = n - (found ? 1 : 0);
    if (m == 0) return 0;
    auto get = [&](size_t i) { return w[found && i >= at ? i + 1 : i]; };
    return m % 2 == 1 ? get(m / 2) : (get(m / 2 - 1) + get(m / 2)) / 2;
  }

 private:
  // Counting sort of the samples into bins: start_[b] .. start_[b + 1] in values_.
  void Bin(const std::vector<PeerSeries>& group, size_t bins) {
    // Each series is oldest first: walk it back from the newest to the origin.
    auto each = [&](auto&& take) {
      for (const PeerSeries& s : group) {
        for (auto p = s.samples.rbegin(); p != s.samples.rend() && key_(*p) >= origin_; ++p) {
          take(static_cast<size_t>((key_(*p) - origin_) / width_), p->seconds);
        }
      }
    };
    start_.assign(bins + 1, 0);
    each([&](size_t b, double) { ++start_[b + 1]; });
    for (size_t b = 1; b <= bins; ++b) start_[b] += start_[b - 1];
    values_.assign(start_[bins], 0);
    std::vector<size_t> fill(start_.begin(), start_.end() - 1);
    each([&](size_t b, double v) { values_[fill[b]++] = v; });
  }

  // Bin b's window, appended to windows_ sorted; nothing when b is empty (no sample is
  // judged against it), too few samples are near, or they disagree (below).
  void Window(size_t b, size_t need) {
    if (start_[b + 1] == start_[b]) return;
    for (size_t r = first_radius_; r <= kMaxWiden; r = std::max<size_t>(1, 2 * r)) {
      const size_t lo = start_[b >= r ? b - r : 0];
      const size_t hi = start_[std::min(b + r + 1, start_.size() - 1)];
      if (hi - lo < need + 1) continue;  // the sample judged is among them
      const size_t stride = std::max<size_t>(1, (hi - lo) / kMaxReference);
      const size_t first = windows_.size();
      for (size_t i = lo; i < hi; i += stride) windows_.push_back(values_[i]);
      std::sort(windows_.begin() + static_cast<std::ptrdiff_t>(first), windows_.end());
      // By time, the middle third of the samples apart by more than a quarter of their
      // median: the window straddles a change of the job's pace (a pause beginning or
      // ending between the reports), and which pace a sample there had is unknown, so it is
      // not judged at all. (By step a pause is its own steps; a slow rack is a minority.)
      const double* w = windows_.data() + first;
      const size_t n = windows_.size() - first;
      if (first_radius_ > 0 && w[2 * n / 3] - w[n / 3] > kMixedSpread * w[n / 2]) windows_.resize(first);
      return;
    }
  }

  KeyFn key_;
  size_t first_radius_ = 1;  // the window's bins each side at first
  int64_t origin_ = 0;
  int64_t width_ = 1;
  std::vector<size_t> start_;
  std::vector<double> values_;
  std::vector<size_t> window_start_;
  std::vector<double> windows_;
};

// One sample against its peers' pace.
struct Ratio {
  int64_t time_ns = 0;
  double ratio = 0;  // own / peer
  double own = 0;    // the sample as reported
  double peer = 0;   // the job's pace it was compared with
};

// Every node's samples against its peers' pace, oldest first, in one array: node i's
// are [start[i], start[i + 1]).
struct GroupRatios {
  std::vector<Ratio> all;
  std::vector<size_t> start;
  size_t size(size_t i) const { return start[i + 1] - start[i]; }
  const Ratio* begin(size_t i) const { return all.data() + start[i]; }
  const Ratio* end(size_t i) const { return all.data() + start[i + 1]; }
};

// The median of one field over node i's newest n ratios.
double TailMedian(const GroupRatios& r, size_t i, size_t n, double Ratio::*field, std::vector<double>& scratch) {
  scratch.clear();
  for (const Ratio* p = r.end(i) - std::min(n, r.size(i)); p < r.end(i); ++p) scratch.push_back(p->*field);
  return MedianInPlace(scratch);
}

// The robust spread of a set of values around their median (1.4826 MAD), relative to it.
double RelativeSpread(std::vector<double>& values) {
  const double med = MedianInPlace(values);
  if (!(med > 0)) return 0;
  for (double& v : values) v = std::abs(v - med);
  return 1.4826 * MedianInPlace(values) / med;
}

// The newest ratios above the threshold, counted back from the newest.
void SlowRun(const GroupRatios& r, size_t i, double threshold, PeerVerdict& v) {
  for (const Ratio* p = r.end(i); p-- > r.begin(i);) {
    if (!(p->ratio > threshold)) break;
    ++v.slow_run;
    v.slow_since_ns = p->time_ns;
  }
}

// Every node's newest samples against its peers' pace at their time: those judged, and
// more in a small job, where they are what its jitter is measured on (a dozen nodes'
// newest few would say too little about it); a few thousand in all are plenty.
GroupRatios CompareWithPeers(const std::vector<PeerSeries>& group, const PeerOptions& o, GroupVerdict& g) {
  const size_t recent = std::max<size_t>(o.recent_samples, 1);
  const size_t tail = std::max(recent, static_cast<size_t>(2 * std::max(o.persistence, 1) + 1));
  const double steps_per_report = ReportGap(group, tail, StepKey);
  g.by_step = StepsAligned(group, tail, steps_per_report);
  const KeyFn key = g.by_step ? StepKey : TimeKey;
  // By step: the very step first (a checkpoint of one long step is every node's one sample
  // of it), bins of a quarter of the steps between reports. By time: half a report period,
  // and a bin each side from the start (one bin holds half the nodes).
  g.bin = std::max<int64_t>(
      1, static_cast<int64_t>(g.by_step ? steps_per_report / 4 : ReportGap(group, tail, TimeKey) / 2));
  const size_t with_samples = static_cast<size_t>(
      std::count_if(group.begin(), group.end(), [](const PeerSeries& s) { return !s.samples.empty(); }));
  GroupRatios r;
  r.start.assign(group.size() + 1, 0);
  if (with_samples < 2) return r;
  const size_t each = std::max(tail, (kJitterSamples + with_samples - 1) / with_samples);
  int64_t since = INT64_MAX;
  for (const PeerSeries& s : group) {
    if (!s.samples.empty())
      since = std::min(since, key(s.samples[s.samples.size() - std::min(each, s.samples.size())]));
  }
  // Enough peers for a median that no one node moves: by time half the job (3 at least);
  // by step 3 (a step is reported by as many nodes as report each step: widening to the
  // steps next to it mixes in the job's pauses there).
  const size_t need =
      std::min({with_samples - 1, g.by_step ? size_t{3} : std::max<size_t>(3, with_samples / 2), kMaxReference / 2});
  const JobPace pace(group, key, since, g.bin, g.by_step ? 0 : 1, need);
  r.all.reserve(each * with_samples);
  for (size_t i = 0; i < group.size(); ++i) {
    const std::vector<PeerSample>& all = group[i].samples;
    for (size_t k = all.size() - std::min(each, all.size()); k < all.size(); ++k) {
      const PeerSample& p = all[k];
      const double ref = pace.PeersAt(p);
      if (ref > 0) r.all.push_back({p.time_ns, p.seconds / ref, p.seconds, ref});
    }
    r.start[i + 1] = r.all.size();
  }
  return r;
}

// Whether "slow" has held at each of the node's newest `persistence` samples: the sample
// above the threshold, and the recent median ending at it robustly and materially above
// the job's. A streak of unlucky reports (jitter has tails) is not a slow node.
bool PersistentlySlow(const GroupRatios& r, size_t i, const GroupVerdict& g, double scale, const PeerOptions& o,
                      std::vector<double>& scratch) {
  const size_t recent = std::max<size_t>(o.recent_samples, 1);
  const auto periods = static_cast<size_t>(std::max(o.persistence, 1));
  if (r.size(i) < periods || !(scale > 0)) return false;
  for (size_t back = 0; back < periods; ++back) {
    const Ratio* end = r.end(i) - back;
    if (!((end - 1)->ratio > g.threshold)) return false;
    scratch.clear();
    for (const Ratio* p = end - std::min(recent, r.size(i) - back); p < end; ++p) scratch.push_back(p->ratio);
    const double x = MedianInPlace(scratch);
    if (!((x - g.median) / scale > o.mad_threshold && x / g.median - 1 >= g.min_slowdown)) return false;
  }
  return true;
}

// A node's verdict fields against the group's median, threshold and scale.
void JudgeNode(const GroupRatios& r, size_t i, const GroupVerdict& g, double scale, const PeerOptions& o,
               std::vector<double>& scratch, PeerVerdict& v) {
  const size_t recent = std::max<size_t>(o.recent_samples, 1);
  v.z = scale > 0 ? (v.recent - g.median) / scale : 0;
  v.slowdown = v.recent / g.median - 1;
  SlowRun(r, i, g.threshold, v);
  const size_t span = v.slow_run > 0 ? static_cast<size_t>(v.slow_run) : recent;
  v.stated_slowdown = TailMedian(r, i, span, &Ratio::ratio, scratch) / g.median - 1;
  v.seconds = TailMedian(r, i, span, &Ratio::own, scratch);
  v.peer_seconds = TailMedian(r, i, span, &Ratio::peer, scratch);
  const size_t look = std::min(static_cast<size_t>(std::max(o.persistence, 0)), r.size(i));
  v.calm = v.recent <= g.median * (1 + g.min_slowdown / 2) &&
           std::none_of(r.end(i) - look, r.end(i), [&](const Ratio& x) { return x.ratio > g.threshold; });
}

}  // namespace

GroupVerdict JudgePeers(const std::vector<PeerSeries>& group, const PeerOptions& options) {
  GroupVerdict g;
  const size_t recent = std::max<size_t>(options.recent_samples, 1);
  const GroupRatios r = CompareWithPeers(group, options, g);
  std::vector<double> xs, pooled, scratch;
  for (size_t i = 0; i < group.size(); ++i) {
    PeerVerdict v;
    v.node = group[i].node;
    if (r.size(i) > 0) {
      v.judged = true;
      v.recent = TailMedian(r, i, recent, &Ratio::ratio, scratch);
      xs.push_back(v.recent);
    }
    g.nodes.push_back(v);
  }
  if (xs.size() < std::max<size_t>(options.min_peers, 2)) return g;
  g.judged = true;
  g.median = MedianInPlace(xs);
  for (double& x : xs) x = std::abs(x - g.median);
  g.mad = MedianInPlace(xs);
  if (!(g.median > 0)) return g;
  for (const Ratio& x : r.all) pooled.push_back(x.ratio);
  g.jitter = RelativeSpread(pooled);
  const double scale = std::max({1.4826 * g.mad, 1.2533 * g.jitter * g.median / std::sqrt(static_cast<double>(recent)),
                                 options.min_spread * g.median});
  g.min_slowdown = std::max(options.min_slowdown, options.jitter_factor * g.jitter);
  g.threshold = g.median * (1 + g.min_slowdown);
  size_t newest_above = 0, judged = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    PeerVerdict& v = g.nodes[i];
    if (!v.judged) continue;
    ++judged;
    if ((r.end(i) - 1)->ratio > g.threshold) ++newest_above;
    JudgeNode(r, i, g, scale, options, scratch, v);
  }
  // Most of the job slower at once is the job's own phase: nobody is a straggler in it.
  g.in_phase = static_cast<double>(newest_above) > options.phase_fraction * static_cast<double>(judged);
  if (g.in_phase) return g;
  for (size_t i = 0; i < group.size(); ++i) {
    g.nodes[i].slow = g.nodes[i].judged && PersistentlySlow(r, i, g, scale, options, scratch);
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
