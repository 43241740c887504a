#include "sim/fleet/fleet_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <unordered_map>

#include "sim/fleet/node_physics.h"

namespace faultline::sim {
namespace {

using fleet::Envelope;
using fleet::FleetNode;
using fleet::RecordKind;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kCoolingSymptomC = 8;  // supply this far above normal: the node's BMC complains

// splitmix64: a small, fully specified generator (std:: distributions differ between
// standard libraries; a scenario must give the same fleet everywhere).
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Normal() {  // Box-Muller
    const double u1 = std::max(Uniform(), 1e-300), u2 = Uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }
};

uint64_t Mix(uint64_t seed, uint64_t salt) {
  Rng r{seed ^ (salt * 0x9e3779b97f4a7c15ULL)};
  return r.Next();
}

bool Active(const FleetFault& f, double t) { return f.at <= t && (!f.until || t < *f.until); }
double Ramp(const FleetFault& f, double t) { return f.ramp_s <= 0 ? 1.0 : std::clamp((t - f.at) / f.ramp_s, 0.0, 1.0); }

std::string Fmt(double v, const char* fmt = "%.4f") {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// One fault's hold on one node.
struct Effect {
  size_t fault = 0;
  std::string device;  // fabric faults: "mlx5_0/1"
  double start = 0;    // driver roll-out: when this node was upgraded
  double symptom_since = -1;
  double last_diag = -kInf;
  double ib_acc = 0;
  uint64_t ib_errors = 0;
  uint64_t ib_published = 0;
};

// A job's steps over time as runs of equal steps (normal, a checkpoint's, an evaluation
// pass', a data stall's), computed once, so the step a report names and its pace depend
// only on the time, whatever the call pattern.
struct StepRun {
  double t0 = 0;
  uint64_t step0 = 0;
  double step_len = 0;
  double factor = 1;
};

// The job's data stalls, [from, to), drawn with exponential gaps.
std::vector<std::pair<double, double>> StallWindows(const FleetJob& j, uint64_t seed, double until) {
  std::vector<std::pair<double, double>> out;
  if (j.stall_every_s <= 0) return out;
  Rng r{seed};
  for (double t = j.start_s;;) {
    t += -std::log(std::max(r.Uniform(), 1e-12)) * j.stall_every_s;
    if (t >= until) break;
    out.emplace_back(t, t + j.stall_s);
    t += j.stall_s;
  }
  return out;
}

// Step k's factor by the phases counted in steps (a checkpoint step wins over an evaluation one).
double StepPhase(const FleetJob& j, uint64_t k) {
  const auto cycle = [k](int every, int steps) { return k % static_cast<uint64_t>(every + steps); };
  if (j.checkpoint_every > 0 && cycle(j.checkpoint_every, j.checkpoint_steps) >= uint64_t(j.checkpoint_every)) {
    return j.checkpoint_factor;
  }
  if (j.eval_every > 0 && cycle(j.eval_every, j.eval_steps) >= uint64_t(j.eval_every)) return j.eval_factor;
  return 1;
}

// Steps from k (included) until a step-counted phase begins or ends.
uint64_t StepsToNextPhase(const FleetJob& j, uint64_t k) {
  uint64_t n = uint64_t{1} << 40;
  for (const auto& [every, steps] :
       {std::pair{j.checkpoint_every, j.checkpoint_steps}, std::pair{j.eval_every, j.eval_steps}}) {
    if (every <= 0) continue;
    const uint64_t e = static_cast<uint64_t>(every), pos = k % (e + static_cast<uint64_t>(steps));
    n = std::min(n, pos < e ? e - pos : e + static_cast<uint64_t>(steps) - pos);
  }
  return n;
}

std::vector<StepRun> BuildJobClock(const FleetJob& j, uint64_t seed, double until) {
  const auto stalls = StallWindows(j, seed, until);
  std::vector<StepRun> runs;
  size_t si = 0;
  double t = j.start_s;
  for (uint64_t k = 0; t < until;) {
    while (si < stalls.size() && stalls[si].second <= t) ++si;
    const bool stalled = si < stalls.size() && stalls[si].first <= t;
    const double f = std::max(StepPhase(j, k), stalled ? j.stall_factor : 1.0);
    const double len = j.step_s * f;
    uint64_t n = StepsToNextPhase(j, k);
    // A stall beginning or ending cuts the run: the step under way at its edge keeps its pace.
    const double edge = stalled ? stalls[si].second : si < stalls.size() ? stalls[si].first : until;
    n = std::min(n, std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil((std::min(edge, until) - t) / len))));
    if (runs.empty() || runs.back().step_len != len) runs.push_back({t, k, len, f});
    t += static_cast<double>(n) * len;
    k += n;
  }
  return runs;
}

struct NodeSim {
  size_t index = 0;
  fleet::NodePlace place;
  int job = -1;
  int rank = -1;
  double spread = 1;
  double wander_phase = 0;
  Rng rng{0};
  double next_step = kInf, next_gpu = kInf, next_oob = kInf, next_batch = kInf;
  double next_eval = kInf;  // the agent's evaluation; only nodes a fault reaches need one
  std::array<int64_t, kFleetMaxGpus> last_clock{}, last_power{}, last_temp{};
  std::array<uint64_t, kFleetMaxGpus> last_reasons{};
  int64_t last_input_v = -1, last_supply_dc = -1;
  bool sampled = false;
  int64_t next_row = 1, next_diag_row = 1;
  std::vector<Observation> pending;
  std::vector<int64_t> pending_ids;
  std::vector<Effect> effects;
};

}  // namespace

FaultReach ReachOf(const FleetScenario& sc, const FleetFault& f) {
  FaultReach r;
  const auto& nodes = sc.topology.nodes;
  auto index_of = [&](const std::string& name) -> std::optional<size_t> {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].name == name) return i;
    }
    return std::nullopt;
  };
  auto port_id = [](const fleet::CableEnd& e) { return e.device + "/" + std::to_string(e.port); };
  switch (f.kind) {
    case FleetFaultKind::kStragglerGpu:
    case FleetFaultKind::kNodeSlow:
      if (auto i = index_of(f.node)) r.nodes.push_back(*i);
      break;
    case FleetFaultKind::kPduSag:
    case FleetFaultKind::kFeedSag:
    case FleetFaultKind::kLoopDegrade:
      for (size_t i = 0; i < nodes.size(); ++i) {
        const std::string& part = f.kind == FleetFaultKind::kPduSag    ? nodes[i].pdu
                                  : f.kind == FleetFaultKind::kFeedSag ? nodes[i].feed
                                                                       : nodes[i].cooling_loop;
        if (part == f.target) r.nodes.push_back(i);
      }
      break;
    case FleetFaultKind::kCableErrors:
      for (const fleet::Cable& c : sc.topology.cables) {
        if (c.id != f.target) continue;
        for (const fleet::CableEnd* e : {&c.a, &c.b}) {
          if (e->node.empty()) continue;
          if (auto i = index_of(e->node)) {
            r.nodes.push_back(*i);
            r.devices.push_back(port_id(*e));
          }
        }
      }
      break;
    case FleetFaultKind::kLeafDegrade: {
      std::vector<size_t> on;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].leaf_switch == f.target) on.push_back(i);
      }
      const auto take = static_cast<size_t>(std::ceil(f.fraction * static_cast<double>(on.size()) - 1e-9));
      on.resize(std::min(on.size(), take));
      for (size_t i : on) {
        std::string dev = "mlx5_0/1";
        for (const fleet::Cable* c : sc.topology.CablesOf(nodes[i].name)) {
          const fleet::CableEnd& mine = c->a.node == nodes[i].name ? c->a : c->b;
          const fleet::CableEnd& other = c->a.node == nodes[i].name ? c->b : c->a;
          if (other.switch_name == f.target) {
            dev = port_id(mine);
            break;
          }
        }
        r.nodes.push_back(i);
        r.devices.push_back(dev);
      }
      break;
    }
    case FleetFaultKind::kDriverRollout:
      for (const std::string& n : f.nodes) {
        if (auto i = index_of(n)) r.nodes.push_back(*i);
      }
      break;
  }
  return r;
}

struct FleetSim::Impl {
  const FleetScenario& sc;
  FleetSimStats stats;
  double now = 0;
  std::vector<NodeSim> nodes;
  std::vector<std::string> gpu_names;           // "0".."7"
  std::vector<std::vector<StepRun>> job_clock;  // per job

  explicit Impl(const FleetScenario& s) : sc(s) {
    for (int g = 0; g < kFleetMaxGpus; ++g) gpu_names.push_back(std::to_string(g));
    // Past the scenario's end (a longer run) the last pace goes on.
    const double until = 2 * sc.duration_s + 3600;
    for (size_t j = 0; j < sc.jobs.size(); ++j) {
      job_clock.push_back(BuildJobClock(sc.jobs[j], Mix(sc.seed, 0x5157a11ULL + j), until));
    }
    const FleetAgentSpec& a = sc.agent;
    nodes.resize(sc.topology.nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const FleetNode& fn = sc.topology.nodes[i];
      NodeSim& n = nodes[i];
      n.index = i;
      n.place = {fn.site.empty() ? sc.topology.site : fn.site, fn.rack.empty() ? "default" : fn.rack, fn.name};
      n.rng = Rng{Mix(sc.seed, i + 1)};
      n.wander_phase = n.rng.Uniform() * 2 * std::numbers::pi;
      n.next_gpu = n.rng.Uniform() * a.gpu_sample_s;
      n.next_oob = n.rng.Uniform() * a.oob_sample_s;
      n.next_batch = n.rng.Uniform() * a.batch_s;
      n.next_step = n.rng.Uniform() * a.step_report_s;
    }
    std::unordered_map<std::string, size_t> by_name;
    for (size_t i = 0; i < nodes.size(); ++i) by_name.emplace(sc.topology.nodes[i].name, i);
    for (size_t j = 0; j < sc.jobs.size(); ++j) {
      const FleetJob& job = sc.jobs[j];
      for (size_t r = 0; r < job.nodes.size(); ++r) {
        NodeSim& n = nodes[by_name.at(job.nodes[r])];
        n.job = static_cast<int>(j);
        n.rank = static_cast<int>(r);
        n.spread = std::max(0.5, 1 + job.node_spread * n.rng.Normal());
        n.next_step += job.start_s;
      }
    }
    for (size_t k = 0; k < sc.faults.size(); ++k) {
      const FleetFault& f = sc.faults[k];
      FaultReach reach = ReachOf(sc, f);
      for (size_t m = 0; m < reach.nodes.size(); ++m) {
        Effect e;
        e.fault = k;
        e.start = f.at + (f.kind == FleetFaultKind::kDriverRollout ? f.every_s * static_cast<double>(m) : 0);
        if (m < reach.devices.size()) e.device = reach.devices[m];
        nodes[reach.nodes[m]].effects.push_back(std::move(e));
      }
    }
    for (NodeSim& n : nodes) {
      if (!n.effects.empty()) n.next_eval = n.rng.Uniform() * a.node_eval_s;
    }
  }

  // --- conditions and physics -------------------------------------------------------

  struct Now {
    NodePhysics phys;
    NodeConditions cond;
    double extra_factor = 1;  // node_slow, driver regressions
  };

  Now Evaluate(const NodeSim& n, double t) const {
    Now s;
    s.cond.coolant_supply_c = sc.node.coolant_supply_c;
    s.cond.coolant_flow_lpm = sc.node.coolant_flow_lpm;
    s.cond.inlet_c = sc.node.inlet_c;
    s.cond.wander_c = sc.temp_wander_c * std::sin(t / 300.0 + n.wander_phase);
    s.cond.job_running = n.job >= 0 && JobRunning(sc.jobs[static_cast<size_t>(n.job)], t);
    for (const Effect& e : n.effects) {
      const FleetFault& f = sc.faults[e.fault];
      if (!Active(f, t) || t < e.start) continue;
      const double r = Ramp(f, t);
      switch (f.kind) {
        case FleetFaultKind::kStragglerGpu:
          s.cond.gpu_extra_c[static_cast<size_t>(f.gpu)] =
              std::max(s.cond.gpu_extra_c[static_cast<size_t>(f.gpu)], f.value * r);
          break;
        case FleetFaultKind::kNodeSlow:
          s.extra_factor *= 1 + (f.value - 1) * r;
          break;
        case FleetFaultKind::kPduSag:
        case FleetFaultKind::kFeedSag:
          s.cond.input_v = std::min(s.cond.input_v, 230 + (f.value - 230) * r);
          break;
        case FleetFaultKind::kLoopDegrade:
          s.cond.coolant_supply_c =
              std::max(s.cond.coolant_supply_c, sc.node.coolant_supply_c + (f.value - sc.node.coolant_supply_c) * r);
          break;
        case FleetFaultKind::kDriverRollout:
          s.extra_factor *= f.slowdown;
          break;
        case FleetFaultKind::kCableErrors:
        case FleetFaultKind::kLeafDegrade:
          break;  // link-level retry: errors, not a slower node
      }
    }
    s.phys = EvaluateNodePhysics(sc.node, s.cond);
    return s;
  }

  static bool JobRunning(const FleetJob& j, double t) { return t >= j.start_s && (!j.end_s || t < *j.end_s); }

  // The job's phase at t (the factor its steps take) and the step under way.
  double PhaseFactor(size_t job, double t, uint64_t& step) const {
    const std::vector<StepRun>& runs = job_clock[job];
    auto it = std::upper_bound(runs.begin(), runs.end(), t, [](double v, const StepRun& r) { return v < r.t0; });
    if (it == runs.begin()) {
      step = 0;
      return 1;
    }
    const StepRun& r = *std::prev(it);
    step = r.step0 + static_cast<uint64_t>((t - r.t0) / r.step_len);
    return r.factor;
  }

  // --- observations ---------------------------------------------------------------------

  int64_t Ns(double t) const { return sc.start_ns + static_cast<int64_t>(std::llround(t * 1e9)); }

  Observation& Add(NodeSim& n, double t, Layer layer, Source source, ComponentRef comp, ObsKind kind, double value) {
    Observation& o = n.pending.emplace_back();
    o.time_ns = Ns(t);
    o.node = n.place.node;
    o.layer = layer;
    o.source = source;
    o.component = std::move(comp);
    o.kind = kind;
    o.value = value;
    n.pending_ids.push_back(n.next_row++);
    ++stats.observations;
    return o;
  }

  void StepReport(NodeSim& n, double t) {
    const FleetJob& job = sc.jobs[static_cast<size_t>(n.job)];
    if (!JobRunning(job, t)) return;
    const Now s = Evaluate(n, t);
    uint64_t step = 0;
    const double phase = PhaseFactor(static_cast<size_t>(n.job), t, step);
    const double jitter = std::max(0.5, 1 + job.noise * n.rng.Normal());
    const double step_time = job.step_s * n.spread * s.phys.step_factor * s.extra_factor * phase * jitter;
    const std::string rank = std::to_string(n.rank), step_s = std::to_string(step);
    const std::string st = Fmt(step_time);
    for (ObsKind kind : {ObsKind::kStepTime, ObsKind::kThroughput}) {
      const bool is_step = kind == ObsKind::kStepTime;
      Observation& o = Add(n, t, Layer::kWorkload, Source::kWorkload, HostComponent(), kind,
                           is_step ? step_time : job.samples_per_step / step_time);
      o.seq = step;
      o.attrs = {{"job", job.name},
                 {"rank", rank},
                 {"step", step_s},
                 {"time_source", "reported"},
                 {"unit", is_step ? "s" : "samples/s"}};
      if (is_step) {
        o.text = job.name + " step " + step_s + " took " + st + " s";
        o.raw = "job=" + job.name + " rank=" + rank + " step=" + step_s + " step_time_s=" + st;
      } else {
        o.text = job.name + " step " + step_s + " at " + Fmt(*o.value, "%.1f") + " samples/s";
      }
    }
    ++stats.step_reports;
  }

  void GpuSample(NodeSim& n, double t, const Now& s) {
    for (int g = 0; g < s.phys.gpu_count; ++g) {
      const auto i = static_cast<size_t>(g);
      const GpuPhysics& p = s.phys.gpus[i];
      const auto clock = static_cast<int64_t>(std::llround(p.clock_sm));
      const auto power =
          static_cast<int64_t>(std::llround(p.power_w + (p.power_w > 0 ? sc.power_noise_w * n.rng.Normal() : 0)));
      const auto temp = static_cast<int64_t>(std::floor(p.temp_gpu));
      const bool first = !n.sampled;
      if (first || clock != n.last_clock[i]) {
        Add(n, t, Layer::kGpu, Source::kNvml, GpuComponent(gpu_names[i]), ObsKind::kClock, static_cast<double>(clock))
            .attrs["clock"] = "sm";
        n.last_clock[i] = clock;
      }
      if (first || power != n.last_power[i]) {
        Add(n, t, Layer::kGpu, Source::kNvml, GpuComponent(gpu_names[i]), ObsKind::kPower, static_cast<double>(power));
        n.last_power[i] = power;
      }
      if (first || temp != n.last_temp[i]) {
        Add(n, t, Layer::kGpu, Source::kNvml, GpuComponent(gpu_names[i]), ObsKind::kTemperature,
            static_cast<double>(temp))
            .attrs["sensor"] = "gpu";
        n.last_temp[i] = temp;
      }
      if (first || p.reasons != n.last_reasons[i]) {
        char hex[32];
        std::snprintf(hex, sizeof(hex), "0x%016llx", static_cast<unsigned long long>(p.reasons));
        Add(n, t, Layer::kGpu, Source::kNvml, GpuComponent(gpu_names[i]), ObsKind::kClockThrottle,
            static_cast<double>(p.reasons))
            .attrs["mask"] = hex;
        n.last_reasons[i] = p.reasons;
      }
    }
    n.sampled = true;
  }

  void OobSample(NodeSim& n, double t, const Now& s) {
    const auto volts = static_cast<int64_t>(std::llround(s.cond.input_v));
    if (volts != n.last_input_v) {
      for (int p = 1; p <= sc.node.psus; ++p) {
        Observation& o =
            Add(n, t, Layer::kOob, Source::kRedfish, ComponentRef{ComponentType::kPsu, "PSU" + std::to_string(p), {}},
                ObsKind::kVoltage, static_cast<double>(volts));
        o.attrs["role"] = "input";
      }
      n.last_input_v = volts;
    }
    const auto supply = static_cast<int64_t>(std::llround(s.cond.coolant_supply_c * 10));
    if (supply != n.last_supply_dc) {
      Add(n, t, Layer::kOob, Source::kRedfish, ComponentRef{ComponentType::kCoolant, "supply", {}},
          ObsKind::kCoolantTemp, static_cast<double>(supply) / 10)
          .attrs["role"] = "supply";
      n.last_supply_dc = supply;
    }
    for (Effect& e : n.effects) {
      const FleetFault& f = sc.faults[e.fault];
      if (f.kind != FleetFaultKind::kCableErrors && f.kind != FleetFaultKind::kLeafDegrade) continue;
      if (Active(f, t)) {
        e.ib_acc += f.value * sc.agent.oob_sample_s / 60.0;
        const auto add = static_cast<uint64_t>(e.ib_acc);
        e.ib_acc -= static_cast<double>(add);
        e.ib_errors += add;
      }
      if (e.ib_errors != e.ib_published) {
        Add(n, t, Layer::kFabric, Source::kSysfs, ComponentRef{ComponentType::kIb, e.device, {}},
            ObsKind::kIbSymbolError, static_cast<double>(e.ib_errors))
            .attrs["counter"] = "symbol_error";
        e.ib_published = e.ib_errors;
      }
    }
  }

  // --- the node's own diagnoses -------------------------------------------------------

  bool Symptom(const Effect& e, const FleetFault& f, const Now& s, double t) const {
    if (!Active(f, t) || t < e.start) return false;
    switch (f.kind) {
      case FleetFaultKind::kStragglerGpu:
        return s.phys.gpus[static_cast<size_t>(f.gpu)].reasons != 0;
      case FleetFaultKind::kPduSag:
      case FleetFaultKind::kFeedSag:
        return s.cond.input_v < kFleetPsuDerateBelowV;
      case FleetFaultKind::kLoopDegrade:
        return s.cond.coolant_supply_c >= sc.node.coolant_supply_c + kCoolingSymptomC;
      case FleetFaultKind::kCableErrors:
      case FleetFaultKind::kLeafDegrade:
      case FleetFaultKind::kDriverRollout:
        return true;
      case FleetFaultKind::kNodeSlow:
        return false;  // no hardware cause: the node's isolator has nothing to say
    }
    return false;
  }

  Diagnosis MakeDiagnosis(const Effect& e, const FleetFault& f, double t) const {
    Diagnosis d;
    d.fault_class = f.node_class.value_or(FaultClass::kNone);
    d.confidence = 0.8;
    d.severity = Severity::kWarning;
    d.first_ns = Ns(e.symptom_since);
    d.last_ns = Ns(t);
    Evidence ev;
    ev.time_ns = d.first_ns;
    switch (f.kind) {
      case FleetFaultKind::kStragglerGpu:
        d.layer = Layer::kGpu;
        d.component = GpuComponent(std::to_string(f.gpu));
        d.action = Action::kCordon;
        d.summary = "GPU " + std::to_string(f.gpu) + " throttles (HW thermal slowdown): its cold plate runs hot";
        ev.source = Source::kNvml;
        ev.text = "clocks_event_reasons HW_THERMAL|HW_SLOWDOWN|SW_THERMAL";
        break;
      case FleetFaultKind::kPduSag:
      case FleetFaultKind::kFeedSag:
        d.layer = Layer::kOob;
        d.component = ComponentRef{ComponentType::kPsu, "PSU1", {}};
        d.action = Action::kFacilityTicket;
        d.summary = "PSU input voltage below the high-line range on every PSU: the supply sags";
        ev.source = Source::kRedfish;
        ev.text = "PSU input voltage out of range";
        d.explains = {"power_brake", "slow_steps"};
        break;
      case FleetFaultKind::kLoopDegrade:
        d.layer = Layer::kOob;
        d.component = ComponentRef{ComponentType::kCoolant, "supply", {}};
        d.action = Action::kFacilityTicket;
        d.summary = "coolant supply temperature high: GPUs throttle";
        ev.source = Source::kRedfish;
        ev.text = "coolant supply temperature above normal";
        break;
      case FleetFaultKind::kCableErrors:
      case FleetFaultKind::kLeafDegrade:
        d.layer = Layer::kFabric;
        d.component = ComponentRef{ComponentType::kIb, e.device, {}};
        d.action = Action::kReseatOrReplaceLink;
        d.summary = "symbol errors rising on " + e.device;
        ev.source = Source::kSysfs;
        ev.text = "symbol_error rising";
        break;
      case FleetFaultKind::kDriverRollout:
        d.layer = Layer::kOs;
        d.component = HostComponent("nvidia-driver");
        d.action = Action::kDriverUpgrade;
        d.summary = "NVIDIA driver " + f.target + " errors since the upgrade";
        ev.source = Source::kKmsg;
        ev.text = "NVRM: driver " + f.target + " reported an error";
        break;
      case FleetFaultKind::kNodeSlow:
        break;
    }
    ev.component = d.component.Id();
    d.evidence.push_back(std::move(ev));
    return d;
  }

  void Diagnose(NodeSim& n, double t, const Now& s, std::vector<Envelope>& out) {
    for (Effect& e : n.effects) {
      const FleetFault& f = sc.faults[e.fault];
      if (!f.node_class || *f.node_class == FaultClass::kNone) continue;
      if (!Symptom(e, f, s, t)) {
        e.symptom_since = -1;
        e.last_diag = -kInf;
        continue;
      }
      if (e.symptom_since < 0) e.symptom_since = t;
      if (t < e.symptom_since + sc.agent.detect_s) continue;
      if (t < e.last_diag + sc.agent.diagnosis_refresh_s) continue;
      e.last_diag = t;
      Envelope env;
      env.kind = RecordKind::kDiagnosis;
      env.place = n.place;
      env.row_id = n.next_diag_row++;
      env.msg_id = n.place.node + "/diagnosis/" + std::to_string(env.row_id);
      env.sent_ns = Ns(t);
      env.diagnosis = MakeDiagnosis(e, f, t);
      out.push_back(std::move(env));
      ++stats.diagnoses;
      ++stats.envelopes;
    }
  }

  void Publish(NodeSim& n, double t, std::vector<Envelope>& out) {
    if (n.pending.empty()) return;
    Envelope env;
    env.kind = RecordKind::kObservations;
    env.place = n.place;
    env.msg_id =
        n.place.node + "/obs/" + std::to_string(n.pending_ids.front()) + "-" + std::to_string(n.pending_ids.back());
    env.sent_ns = Ns(t);
    env.observations = std::move(n.pending);
    env.observation_ids = std::move(n.pending_ids);
    n.pending.clear();
    n.pending_ids.clear();
    out.push_back(std::move(env));
    ++stats.envelopes;
  }

  // Runs one node's events up to t in time order.
  void Advance(NodeSim& n, double t, std::vector<Envelope>& out) {
    const FleetAgentSpec& a = sc.agent;
    for (;;) {
      const double next =
          std::min({n.job >= 0 ? n.next_step : kInf, n.next_gpu, n.next_oob, n.next_batch, n.next_eval});
      if (next > t) return;
      if (n.job >= 0 && n.next_step == next) {
        StepReport(n, next);
        n.next_step += a.step_report_s;
      } else if (n.next_eval == next) {
        Diagnose(n, next, Evaluate(n, next), out);
        n.next_eval += a.node_eval_s;
      } else if (n.next_gpu == next) {
        GpuSample(n, next, Evaluate(n, next));
        n.next_gpu += a.gpu_sample_s;
      } else if (n.next_oob == next) {
        OobSample(n, next, Evaluate(n, next));
        n.next_oob += a.oob_sample_s;
      } else {
        Publish(n, next, out);
        n.next_batch += a.batch_s;
      }
    }
  }
};

FleetSim::FleetSim(const FleetScenario& scenario) : impl_(std::make_unique<Impl>(scenario)) {}
FleetSim::~FleetSim() = default;

void FleetSim::AdvanceTo(double t, std::vector<Envelope>& out) {
  if (t <= impl_->now) return;
  for (NodeSim& n : impl_->nodes) impl_->Advance(n, t, out);
  impl_->now = t;
}

void FleetSim::Flush(std::vector<Envelope>& out) {
  for (NodeSim& n : impl_->nodes) impl_->Publish(n, impl_->now, out);
}

double FleetSim::now() const { return impl_->now; }
int64_t FleetSim::TimeNs(double t) const { return impl_->Ns(t); }
const FleetSimStats& FleetSim::stats() const { return impl_->stats; }
const FleetScenario& FleetSim::scenario() const { return impl_->sc; }

// --- truth ------------------------------------------------------------------------------

namespace {

// The first time in [from, to) the predicate holds, probed every `dt` (then refined).
template <typename Pred>
std::optional<double> FirstTime(double from, double to, double dt, Pred holds) {
  for (double t = from; t < to; t += dt) {
    if (!holds(t)) continue;
    double lo = std::max(from, t - dt), hi = t;  // holds(hi), maybe not holds(lo)
    if (holds(lo)) return lo;
    for (int i = 0; i < 30; ++i) {
      const double mid = (lo + hi) / 2;
      (holds(mid) ? hi : lo) = mid;
    }
    return hi;
  }
  return std::nullopt;
}

const char* CauseOf(FleetFaultKind k) {
  switch (k) {
    case FleetFaultKind::kPduSag:
      return "pdu";
    case FleetFaultKind::kFeedSag:
      return "feed";
    case FleetFaultKind::kLoopDegrade:
      return "cooling_loop";
    case FleetFaultKind::kCableErrors:
      return "cable";
    case FleetFaultKind::kLeafDegrade:
      return "switch";
    case FleetFaultKind::kDriverRollout:
      return "driver";
    default:
      return "";
  }
}

}  // namespace

FleetTruth DeriveFleetTruth(const FleetScenario& sc, double min_slowdown) {
  FleetTruth truth;
  std::unordered_map<std::string, int> job_of;
  for (size_t j = 0; j < sc.jobs.size(); ++j) {
    for (const std::string& n : sc.jobs[j].nodes) job_of[n] = static_cast<int>(j);
  }
  const double end = sc.duration_s;
  for (const FleetFault& f : sc.faults) {
    const double stop = std::min(end, f.until.value_or(end));
    const FaultReach reach = ReachOf(sc, f);
    if (f.kind == FleetFaultKind::kStragglerGpu || f.kind == FleetFaultKind::kNodeSlow) {
      auto job = job_of.find(f.node);
      if (job == job_of.end()) continue;  // no peers to be slower than
      std::optional<double> start;
      if (f.kind == FleetFaultKind::kNodeSlow) {
        start =
            FirstTime(f.at, stop, 1.0, [&](double t) { return 1 + (f.value - 1) * Ramp(f, t) >= 1 + min_slowdown; });
      } else {
        start = FirstTime(f.at, stop, 1.0, [&](double t) {
          NodeConditions c;
          c.coolant_supply_c = sc.node.coolant_supply_c;
          c.coolant_flow_lpm = sc.node.coolant_flow_lpm;
          c.inlet_c = sc.node.inlet_c;
          c.wander_c = -sc.temp_wander_c;  // the coolest moment of the drift: throttling for sure
          c.gpu_extra_c[static_cast<size_t>(f.gpu)] = f.value * Ramp(f, t);
          return EvaluateNodePhysics(sc.node, c).step_factor >= 1 + min_slowdown;
        });
      }
      if (!start) continue;
      truth.stragglers.push_back({f.node, f.kind == FleetFaultKind::kStragglerGpu ? f.gpu : -1,
                                  sc.jobs[static_cast<size_t>(job->second)].name, *start});
      continue;
    }
    std::vector<std::string> nodes;
    for (size_t i : reach.nodes) nodes.push_back(sc.topology.nodes[i].name);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    if (nodes.size() < 2) continue;
    std::optional<double> start = f.at;
    if (f.kind == FleetFaultKind::kPduSag || f.kind == FleetFaultKind::kFeedSag) {
      start = FirstTime(f.at, stop, 1.0,
                        [&](double t) { return 230 + (f.value - 230) * Ramp(f, t) < kFleetPsuDerateBelowV; });
    } else if (f.kind == FleetFaultKind::kLoopDegrade) {
      const double base = sc.node.coolant_supply_c;
      start = FirstTime(f.at, stop, 1.0,
                        [&](double t) { return base + (f.value - base) * Ramp(f, t) >= base + kCoolingSymptomC; });
    }
    if (!start) continue;
    FleetTruthCause c;
    c.cause = CauseOf(f.kind);
    c.components = {c.cause + "/" + f.target};
    c.nodes = std::move(nodes);
    c.start_s = *start;
    truth.causes.push_back(std::move(c));
  }
  return truth;
}

}  // namespace faultline::sim
