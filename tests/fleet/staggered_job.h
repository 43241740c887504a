// A job whose nodes report as real agents do: each every `report_s`, at its own offset
// within the period, so at any moment some nodes have reported a whole-job pause and
// others not yet. Per-report jitter is Gaussian (sd `jitter`), deterministic in (seed,
// node, report). The job's pauses (a checkpoint, an evaluation pass, a data stall) slow
// every node alike; `slowdown` slows one node for its own reasons. Reports name the
// job's step (seq) as synchronous training does, every rank in the same step at the same
// time and steps lasting longer in a pause; `report_steps` false leaves it out (time then
// stands for steps in the analyzer).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "fleet/analyzer.h"
#include "fleet/fleet_topology.h"
#include "fleet/wire.h"
#include "fleet_test_util.h"

namespace faultline::fleet::testing {

inline uint64_t Hash64(const std::string& s, uint64_t a, uint64_t b) {
  uint64_t h = 1469598103934665603ULL ^ (a * 0x9e3779b97f4a7c15ULL);
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ b) * 1099511628211ULL;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

inline double Unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// A window of the job's time in which every node's steps take `factor` times as long.
struct JobPause {
  double from_s = 0;
  double to_s = 0;
  double factor = 1;
};

struct StaggeredJob {
  std::vector<FleetNode> nodes;
  std::string job = "train-1";
  double step_s = 2.0;
  double report_s = 5.0;
  double jitter = 0.02;
  uint64_t seed = 1;
  bool report_steps = true;
  std::vector<JobPause> pauses;
  // A node's own factor at time t (1 = healthy).
  std::function<double(const std::string& node, double t)> slowdown = [](const std::string&, double) { return 1.0; };
  // A GPU's SM clock (0 = not reported).
  std::function<double(const std::string& node, int gpu, double t)> clock = [](const std::string&, int, double) {
    return 0.0;
  };
  std::map<std::string, int64_t> rows;
  std::map<std::string, int64_t> reports;

  double Offset(const std::string& node) const { return Unit(Hash64(node, seed, 7)) * report_s; }

  double Pause(double t) const {
    double f = 1;
    for (const JobPause& p : pauses) {
      if (t >= p.from_s && t < p.to_s) f = std::max(f, p.factor);
    }
    return f;
  }

  // The job's step at t: every step takes step_s times the pause factor at the time.
  uint64_t Step(double t) const {
    std::vector<double> edges = {0, t};
    for (const JobPause& p : pauses) {
      for (double e : {p.from_s, p.to_s}) {
        if (e > 0 && e < t) edges.push_back(e);
      }
    }
    std::sort(edges.begin(), edges.end());
    double steps = 0;
    for (size_t i = 1; i < edges.size(); ++i) {
      steps += (edges[i] - edges[i - 1]) / (step_s * Pause((edges[i] + edges[i - 1]) / 2));
    }
    return static_cast<uint64_t>(steps);
  }

  double Noise(const std::string& node, int64_t k) const {
    const double u1 = std::max(Unit(Hash64(node, seed, 2 * static_cast<uint64_t>(k))), 1e-300);
    const double u2 = Unit(Hash64(node, seed, 2 * static_cast<uint64_t>(k) + 1));
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }

  Envelope Report(const FleetNode& n, double t) {
    const int64_t k = reports[n.name]++;
    Envelope e;
    e.kind = RecordKind::kObservations;
    e.place = {.site = "dc1", .rack = n.rack, .node = n.name};
    const int64_t ns = kStart + static_cast<int64_t>(std::llround(t * 1e9));
    e.sent_ns = ns;
    Observation o;
    o.time_ns = ns;
    o.node = n.name;
    o.layer = Layer::kWorkload;
    o.kind = ObsKind::kStepTime;
    o.source = Source::kWorkload;
    o.component = HostComponent();
    if (report_steps) o.seq = Step(t);
    o.value = step_s * Pause(t) * slowdown(n.name, t) * std::max(0.5, 1 + jitter * Noise(n.name, k));
    o.attrs = {{"job", job}, {"rank", n.name}};
    e.observations.push_back(o);
    for (int g = 0; g < 8; ++g) {
      const double mhz = clock(n.name, g, t);
      if (mhz <= 0) continue;
      Observation c;
      c.time_ns = ns;
      c.node = n.name;
      c.layer = Layer::kGpu;
      c.kind = ObsKind::kClock;
      c.source = Source::kNvml;
      c.component = GpuComponent(std::to_string(g));
      c.value = mhz;
      c.attrs = {{"clock", "sm"}};
      e.observations.push_back(c);
    }
    int64_t& row = rows[n.name];
    const int64_t first = row + 1;
    for (size_t i = 0; i < e.observations.size(); ++i) e.observation_ids.push_back(++row);
    e.msg_id = MakeMsgId(n.name, RecordKind::kObservations, first, row);
    return e;
  }

  // Every node's reports in (from_s, to_s], evaluating once a second as the fleet command
  // does; every fleet diagnosis returned.
  std::vector<FleetDiagnosis> Run(FleetAnalyzer& a, double from_s, double to_s) {
    std::vector<FleetDiagnosis> out;
    for (double tick = std::floor(from_s) + 1; tick <= to_s; tick += 1) {
      for (const FleetNode& n : nodes) {
        // The node's reports whose time falls in (tick - 1, tick].
        const double off = Offset(n.name);
        const double first = std::ceil((tick - 1 - off) / report_s) * report_s + off;
        for (double t = first; t <= tick; t += report_s) {
          if (t > tick - 1 && t > from_s) a.Ingest(Report(n, t));
        }
      }
      for (auto& d : a.Evaluate(kStart + static_cast<int64_t>(tick) * kSecond)) out.push_back(std::move(d));
    }
    return out;
  }
};

}  // namespace faultline::fleet::testing
