#include "sim/fleet/fleet_bench.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "sim/fleet/fleet_sim.h"

namespace faultline::sim {
namespace {

struct Rng {  // splitmix64 (same reason as fleet_sim.cc: identical fleets everywhere)
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

std::string Pad(size_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*zu", width, v);
  return buf;
}

void BuildFleet(const FleetBenchSpec& spec, Rng& rng, FleetScenario& sc) {
  fleet::FleetTopology& t = sc.topology;
  t.site = "bench";
  size_t rack_no = 0;
  const int rd = spec.nodes >= 100000 ? 5 : 4;
  while (t.nodes.size() < spec.nodes) {
    const size_t left = spec.nodes - t.nodes.size();
    const size_t size = std::min(left, 16 + rng.Below(17));
    const std::string rack = "r" + Pad(++rack_no, rd);
    const std::string loop = "loop-" + Pad((rack_no + 1) / 2, rd);
    const std::string leaf = "leaf-" + Pad(rack_no, rd);
    for (size_t k = 0; k < size; ++k) {
      fleet::FleetNode n;
      n.name = rack + "-n" + Pad(k + 1, 2);
      n.rack = rack;
      const bool second = k >= (size + 1) / 2;
      n.pdu = rack + (second ? "-pdu-b" : "-pdu-a");
      // A power feed serves a row of ten racks (its a or b side).
      n.feed = "feed-" + Pad((rack_no - 1) / 10 + 1, 3) + (second ? "-b" : "-a");
      n.cooling_loop = loop;
      n.leaf_switch = leaf;
      n.driver = "550.54.15";
      fleet::Cable c;
      c.id = "C-" + n.name + "-0";
      c.a = {n.name, "mlx5_0", 1, "", ""};
      c.b = {"", "", 0, leaf, "p" + std::to_string(k + 1)};
      t.cables.push_back(std::move(c));
      t.nodes.push_back(std::move(n));
    }
  }
  for (const fleet::FleetNode& n : t.nodes) sc.initial_driver.push_back(n.driver);
}

void BuildJobs(Rng& rng, FleetScenario& sc) {
  static constexpr size_t kSizes[] = {16, 16, 32, 32, 64, 64, 128, 256, 512};
  const size_t total = sc.topology.nodes.size();
  size_t next = 0;
  int job_no = 0;
  while (next < total) {
    size_t size = kSizes[rng.Below(std::size(kSizes))];
    if (total - next < 16) break;  // the rest stay idle
    size = std::min(size, total - next);
    // About one node in ten stays out of any job (idle, draining, being repaired).
    if (rng.Below(10) == 0) {
      next += std::min<size_t>(1 + rng.Below(8), total - next);
      continue;
    }
    FleetJob j;
    j.name = "job-" + Pad(static_cast<size_t>(++job_no), 4);
    for (size_t i = next; i < next + size; ++i) j.nodes.push_back(sc.topology.nodes[i].name);
    next += size;
    j.step_s = rng.Uniform(1.5, 3.0);
    j.noise = 0.02;
    j.node_spread = 0.01;
    j.checkpoint_every = static_cast<int>(100 + rng.Below(200));
    j.checkpoint_steps = 3;
    j.checkpoint_factor = rng.Uniform(3, 5);
    j.samples_per_step = 512;
    sc.jobs.push_back(std::move(j));
  }
}

// Shared causes, about one of each kind per 1,000 nodes.
void BuildSharedFaults(const FleetBenchSpec& spec, Rng& rng, FleetScenario& sc, std::unordered_set<size_t>& touched) {
  const auto& nodes = sc.topology.nodes;
  const size_t per = std::max<size_t>(1, spec.nodes / 1000);
  const double from = spec.faults_from_s, to = spec.duration_s - 300;
  std::vector<std::string> pdus, loops, leaves, racks;
  for (const fleet::FleetNode& n : nodes) {
    if (pdus.empty() || pdus.back() != n.pdu) pdus.push_back(n.pdu);
    if (loops.empty() || loops.back() != n.cooling_loop) loops.push_back(n.cooling_loop);
    if (leaves.empty() || leaves.back() != n.leaf_switch) leaves.push_back(n.leaf_switch);
    if (racks.empty() || racks.back() != n.rack) racks.push_back(n.rack);
  }
  std::set<std::string> used;
  auto pick = [&](const std::vector<std::string>& from_list) -> std::string {
    for (int tries = 0; tries < 100; ++tries) {
      const std::string& c = from_list[rng.Below(from_list.size())];
      if (used.insert(c).second) return c;
    }
    return "";
  };
  // Two sagging PDUs on one feed would make the feed the right answer: one PDU per feed.
  std::unordered_map<std::string, std::string> feed_of;
  for (const fleet::FleetNode& n : nodes) feed_of.emplace(n.pdu, n.feed);
  auto pick_pdu = [&]() -> std::string {
    for (int tries = 0; tries < 100; ++tries) {
      const std::string pdu = pick(pdus);
      if (pdu.empty()) return "";
      if (used.insert("feed:" + feed_of.at(pdu)).second) return pdu;
    }
    return "";
  };
  auto mark = [&](const FleetFault& f) {
    if (f.kind != FleetFaultKind::kPduSag && f.kind != FleetFaultKind::kLoopDegrade) return;  // slows nodes
    for (size_t i : ReachOf(sc, f).nodes) touched.insert(i);
  };
  for (size_t k = 0; k < per; ++k) {
    FleetFault pdu{.kind = FleetFaultKind::kPduSag, .at = rng.Uniform(from, to), .ramp_s = 20, .value = 140};
    pdu.target = pick_pdu();
    FleetFault loop{.kind = FleetFaultKind::kLoopDegrade, .at = rng.Uniform(from, to), .ramp_s = 60, .value = 52};
    loop.target = pick(loops);
    FleetFault leaf{.kind = FleetFaultKind::kLeafDegrade, .at = rng.Uniform(from, to), .value = 40, .fraction = 0.5};
    leaf.target = pick(leaves);
    for (FleetFault* f : {&pdu, &loop, &leaf}) {
      if (f->target.empty()) continue;
      f->node_class = f->kind == FleetFaultKind::kPduSag        ? FaultClass::kVoltageOutOfRange
                      : f->kind == FleetFaultKind::kLoopDegrade ? FaultClass::kCoolingDegraded
                                                                : FaultClass::kIbLinkErrors;
      mark(*f);
      sc.faults.push_back(*f);
    }
    // A node-to-node cable (a second HCA, direct) with errors seen at both ends.
    const size_t a = rng.Below(nodes.size()), b = rng.Below(nodes.size());
    if (a != b) {
      fleet::Cable c;
      c.id = "X-" + Pad(k + 1, 4);
      c.a = {nodes[a].name, "mlx5_1", 1, "", ""};
      c.b = {nodes[b].name, "mlx5_1", 1, "", ""};
      sc.topology.cables.push_back(c);
      FleetFault cable{.kind = FleetFaultKind::kCableErrors, .at = rng.Uniform(from, to), .value = 60};
      cable.target = c.id;
      cable.node_class = FaultClass::kIbLinkErrors;
      sc.faults.push_back(cable);
    }
    const std::string rack = pick(racks);
    if (!rack.empty()) {
      FleetFault drv{.kind = FleetFaultKind::kDriverRollout, .at = rng.Uniform(from, to), .every_s = 5};
      drv.target = "560.35.03";
      drv.node_class = FaultClass::kDriverFault;
      for (const fleet::FleetNode& n : nodes) {
        if (n.rack == rack) drv.nodes.push_back(n.name);
      }
      sc.faults.push_back(drv);
    }
  }
}

void BuildStragglers(const FleetBenchSpec& spec, Rng& rng, FleetScenario& sc,
                     const std::unordered_set<size_t>& touched) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < sc.topology.nodes.size(); ++i) index.emplace(sc.topology.nodes[i].name, i);
  std::vector<size_t> candidates;
  std::unordered_map<size_t, size_t> job_of;
  for (size_t j = 0; j < sc.jobs.size(); ++j) {
    for (const std::string& n : sc.jobs[j].nodes) {
      const size_t i = index.at(n);
      job_of[i] = j;
      if (!touched.contains(i)) candidates.push_back(i);
    }
  }
  const size_t want = std::max<size_t>(5, spec.nodes / 100);
  std::unordered_map<size_t, size_t> per_job;
  std::unordered_set<size_t> chosen;
  for (size_t tries = 0; chosen.size() < want && tries < want * 50 && !candidates.empty(); ++tries) {
    const size_t i = candidates[rng.Below(candidates.size())];
    const size_t j = job_of.at(i);
    if (chosen.contains(i) || (per_job[j] + 1) * 10 > sc.jobs[j].nodes.size()) continue;
    chosen.insert(i);
    ++per_job[j];
    FleetFault f;
    f.at = rng.Uniform(spec.faults_from_s, spec.duration_s - 240);
    f.node = sc.topology.nodes[i].name;
    if (rng.Below(10) < 7) {
      f.kind = FleetFaultKind::kStragglerGpu;
      f.gpu = static_cast<int>(rng.Below(static_cast<size_t>(sc.node.gpus)));
      f.value = rng.Uniform(20, 26);
      f.node_class = FaultClass::kGpuThermal;
    } else {
      f.kind = FleetFaultKind::kNodeSlow;
      f.value = rng.Uniform(1.15, 1.5);
      f.node_class = FaultClass::kNone;
    }
    sc.faults.push_back(std::move(f));
  }
}

}  // namespace

FleetScenario GenerateBenchFleet(const FleetBenchSpec& spec) {
  FleetScenario sc;
  sc.name = "bench-fleet-" + std::to_string(spec.nodes);
  sc.description = "generated by bench fleet";
  sc.duration_s = spec.duration_s;
  sc.seed = spec.seed;
  Rng rng{spec.seed * 0x2545f4914f6cdd1dULL + spec.nodes};
  BuildFleet(spec, rng, sc);
  BuildJobs(rng, sc);
  std::unordered_set<size_t> touched;
  BuildSharedFaults(spec, rng, sc, touched);
  BuildStragglers(spec, rng, sc, touched);
  std::stable_sort(sc.faults.begin(), sc.faults.end(),
                   [](const FleetFault& a, const FleetFault& b) { return a.at < b.at; });
  for (const FleetFault& f : sc.faults) {
    if (f.kind != FleetFaultKind::kDriverRollout) continue;
    for (fleet::FleetNode& n : sc.topology.nodes) {
      if (std::find(f.nodes.begin(), f.nodes.end(), n.name) != f.nodes.end()) n.driver = f.target;
    }
  }
  sc.truth = DeriveFleetTruth(sc);
  return sc;
}

}  // namespace faultline::sim
