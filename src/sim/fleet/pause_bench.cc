#include "sim/fleet/pause_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/fleet/fleet_run.h"
#include "sim/fleet/fleet_sim.h"

namespace faultline::sim {
namespace {

constexpr int kRacks = 8;
constexpr int kPerRack = 16;
constexpr int kQuad = 4;  // a job takes this many nodes of each of its racks

struct Rng {  // splitmix64, as fleet_bench.cc: the same fleets everywhere
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
};

std::string Two(int v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%02d", v);
  return buf;
}

void BuildFleet(FleetScenario& sc) {
  fleet::FleetTopology& t = sc.topology;
  t.site = "pause";
  for (int r = 1; r <= kRacks; ++r) {
    const std::string rack = "r" + Two(r);
    for (int k = 1; k <= kPerRack; ++k) {
      fleet::FleetNode n;
      n.name = rack + "-n" + Two(k);
      n.rack = rack;
      const bool second = k > kPerRack / 2;
      n.pdu = rack + (second ? "-pdu-b" : "-pdu-a");
      n.feed = second ? "feed-b" : "feed-a";
      n.cooling_loop = "loop-" + Two((r + 1) / 2);
      n.leaf_switch = "leaf-" + Two(r);
      n.driver = "550.54.15";
      fleet::Cable c;
      c.id = "C-" + n.name + "-0";
      c.a = {n.name, "mlx5_0", 1, "", ""};
      c.b = {"", "", 0, n.leaf_switch, "p" + std::to_string(k)};
      t.cables.push_back(std::move(c));
      t.nodes.push_back(std::move(n));
      sc.initial_driver.push_back("550.54.15");
    }
  }
}

// A job's pauses, drawn as pause_bench.h says. The agents report every
// agent.step_report_s: a checkpoint lasts 1.5-3.5 of those.
void DrawPauses(Rng& rng, double report_s, FleetJob& j) {
  j.step_s = rng.Uniform(1.5, 3.0);
  j.noise = rng.Uniform(0.02, 0.06);
  j.node_spread = 0.01;
  const double checkpoint_s = rng.Uniform(1.5, 3.5) * report_s;
  j.checkpoint_every = static_cast<int>(40 + rng.Below(81));
  j.checkpoint_steps = 1 + static_cast<int>(rng.Below(2));
  j.checkpoint_factor = checkpoint_s / (j.checkpoint_steps * j.step_s);
  if (j.checkpoint_factor < 1.5) {
    j.checkpoint_steps = 1;
    j.checkpoint_factor = std::max(1.5, checkpoint_s / j.step_s);
  }
  j.eval_every = static_cast<int>(100 + rng.Below(151));
  j.eval_factor = rng.Uniform(1.5, 2.5);
  j.eval_steps = std::max(1, static_cast<int>(std::lround(rng.Uniform(10, 30) / (j.step_s * j.eval_factor))));
  j.stall_every_s = rng.Uniform(60, 300);
  j.stall_s = rng.Uniform(3, 10);
  j.stall_factor = rng.Uniform(2, 6);
}

// Jobs of 2-4 "quads" (4 nodes of one rack), each quad in another rack.
void BuildJobs(Rng& rng, FleetScenario& sc) {
  std::vector<std::vector<int>> free(kRacks);  // per rack, its quads not yet taken
  for (int r = 0; r < kRacks; ++r) {
    for (int q = 0; q < kPerRack / kQuad; ++q) free[static_cast<size_t>(r)].push_back(q);
  }
  for (int job_no = 1;; ++job_no) {
    std::vector<int> racks;
    for (int r = 0; r < kRacks; ++r) {
      if (!free[static_cast<size_t>(r)].empty()) racks.push_back(r);
    }
    if (racks.size() < 2) break;
    const size_t want = std::min(racks.size(), 2 + rng.Below(3));
    FleetJob j;
    j.name = "job-" + Two(job_no);
    for (size_t i = 0; i < want; ++i) {
      const size_t pick = i + rng.Below(racks.size() - i);
      std::swap(racks[i], racks[pick]);
      auto& quads = free[static_cast<size_t>(racks[i])];
      const size_t qi = rng.Below(quads.size());
      const int q = quads[qi];
      quads.erase(quads.begin() + static_cast<std::ptrdiff_t>(qi));
      if (rng.Below(10) == 0) continue;  // idle: draining, being repaired
      for (int k = 0; k < kQuad; ++k) {
        j.nodes.push_back(sc.topology.nodes[static_cast<size_t>(racks[i] * kPerRack + q * kQuad + k)].name);
      }
    }
    if (j.nodes.size() < 2 * kQuad) continue;  // too small to be a job: its nodes stay idle
    DrawPauses(rng, sc.agent.step_report_s, j);
    sc.jobs.push_back(std::move(j));
  }
}

void BuildStragglers(const PauseFleetSpec& spec, Rng& rng, FleetScenario& sc) {
  std::vector<size_t> jobs(sc.jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i] = i;
  for (size_t s = 0; s < spec.stragglers && s < jobs.size(); ++s) {
    std::swap(jobs[s], jobs[s + rng.Below(jobs.size() - s)]);
    const FleetJob& job = sc.jobs[jobs[s]];
    FleetFault f;
    f.node = job.nodes[rng.Below(job.nodes.size())];
    f.at = rng.Uniform(spec.faults_from_s, spec.duration_s - 240);
    if (rng.Below(10) < 6) {
      f.kind = FleetFaultKind::kStragglerGpu;
      f.gpu = static_cast<int>(rng.Below(static_cast<size_t>(sc.node.gpus)));
      f.value = rng.Uniform(20, 26);
      f.node_class = FaultClass::kGpuThermal;
    } else {
      f.kind = FleetFaultKind::kNodeSlow;
      f.value = rng.Uniform(1.2, 1.5);
      f.node_class = FaultClass::kNone;
    }
    sc.faults.push_back(std::move(f));
  }
  std::stable_sort(sc.faults.begin(), sc.faults.end(),
                   [](const FleetFault& a, const FleetFault& b) { return a.at < b.at; });
}

void Note(PauseBenchResult& r, uint64_t seed, const std::string& what) {
  if (r.false_named.size() < 20) r.false_named.push_back("seed " + std::to_string(seed) + ": " + what);
}

void ScoreHealthy(const FleetRunResult& run, uint64_t seed, PauseBenchResult& r) {
  ++r.healthy_fleets;
  r.healthy_clean += run.timeline.empty();
  r.healthy_false_stragglers += run.score.false_stragglers.size();
  r.healthy_false_causes += run.score.false_causes.size();
  for (const std::string& n : run.score.false_stragglers) Note(r, seed, "straggler " + n);
  for (const std::string& c : run.score.false_causes) Note(r, seed, c);
}

void ScoreStragglers(const FleetRunResult& run, uint64_t seed, PauseBenchResult& r) {
  const FleetScore& s = run.score;
  r.truth += s.stragglers.size();
  r.true_positives += s.straggler_tp;
  r.false_positives += s.straggler_fp;
  r.false_negatives += s.straggler_fn;
  r.false_causes += s.false_causes.size();
  for (const StragglerVerdict& v : s.stragglers) {
    if (!v.found) continue;
    const bool gpu = v.truth.gpu >= 0;
    r.gpu_truth += gpu;
    r.gpu_right += gpu && v.gpu_right;
    r.class_right += v.fault_class == (gpu ? FaultClass::kGpuThermal : FaultClass::kWorkloadImbalance);
    r.reopened += v.reports > 1;
  }
  for (const std::string& n : s.false_stragglers) Note(r, seed, "straggler " + n);
  for (const std::string& c : s.false_causes) Note(r, seed, c);
}

}  // namespace

FleetScenario GeneratePauseFleet(const PauseFleetSpec& spec) {
  FleetScenario sc;
  sc.name = "pause-fleet-" + std::to_string(spec.seed);
  sc.description = "generated: jobs with checkpoints, evaluation passes, data stalls and 2-6% jitter";
  sc.duration_s = spec.duration_s;
  sc.seed = spec.seed;
  // The seed hashed first: seeds a multiple of the generator's increment apart would
  // otherwise draw the same fleet a few draws apart.
  Rng rng{Rng{spec.seed ^ 0x70a05e5eedULL}.Next()};
  BuildFleet(sc);
  BuildJobs(rng, sc);
  BuildStragglers(spec, rng, sc);
  sc.truth = DeriveFleetTruth(sc);
  return sc;
}

PauseBenchResult RunPauseBench(size_t seeds, uint64_t first_seed, const fleet::AnalyzerOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  PauseBenchResult r;
  r.healthy_jitter_min = 1;
  FleetRunOptions ro;
  ro.analyzer = options;
  for (uint64_t seed = first_seed; seed < first_seed + seeds; ++seed) {
    for (const size_t stragglers : {size_t{0}, size_t{3}}) {
      // The fleets with stragglers are other fleets: other jobs, other pauses.
      const FleetScenario sc = GeneratePauseFleet({.seed = stragglers == 0 ? seed : seed + 1'000'000,
                                                   .stragglers = stragglers,
                                                   .duration_s = 900,
                                                   .faults_from_s = 300});
      auto run = RunFleetScenario(sc, ro);
      if (!run.ok()) continue;
      ++r.fleets;
      r.nodes_per_fleet = sc.topology.nodes.size();
      for (const FleetJob& j : sc.jobs) {
        r.healthy_jitter_min = std::min(r.healthy_jitter_min, j.noise);
        r.healthy_jitter_max = std::max(r.healthy_jitter_max, j.noise);
      }
      if (stragglers == 0) {
        ScoreHealthy(*run, seed, r);
      } else {
        ScoreStragglers(*run, seed, r);
      }
    }
  }
  const size_t named = r.true_positives + r.false_positives;
  r.precision = named == 0 ? 1 : static_cast<double>(r.true_positives) / static_cast<double>(named);
  r.recall = r.truth == 0 ? 1 : static_cast<double>(r.true_positives) / static_cast<double>(r.truth);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace faultline::sim
