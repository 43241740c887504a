#include "sim/fleet/fleet_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <unordered_map>

#include "sim/fleet/fleet_sim.h"

namespace faultline::sim {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double ThreadCpuS() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

Result<FleetRunResult> RunFleetScenario(const FleetScenario& scenario, const FleetRunOptions& options) {
  if (scenario.topology.nodes.empty()) return Status(StatusCode::kInvalidArgument, "the fleet has no nodes");
  const double duration = options.duration_s.value_or(scenario.duration_s);
  const double step = scenario.agent.evaluate_s;
  FleetRunResult res;
  FleetSim sim(scenario);
  std::unique_ptr<fleet::FleetAnalyzer> analyzer;
  if (options.in_process) analyzer = std::make_unique<fleet::FleetAnalyzer>(scenario.topology, options.analyzer);
  fleet::Envelope scratch;  // every payload is decoded into it

  // Evidence: the first envelope carrying a step report of a truth straggler from after
  // its start.
  std::unordered_map<std::string, size_t> watch;
  for (size_t i = 0; i < scenario.truth.stragglers.size(); ++i) watch.emplace(scenario.truth.stragglers[i].node, i);
  std::vector<double> evidence(scenario.truth.stragglers.size(), -1);
  std::vector<double> evidence_k(scenario.truth.stragglers.size(), -1);
  std::vector<int> slowed_reports(scenario.truth.stragglers.size(), 0);
  // The slowed reports before the analyzer can name a node (fleet/peers.h): its recent
  // median turns slow at the (recent / 2 + 1)-th, and must stay so `persistence` reports.
  const int k_needed = static_cast<int>(std::max<size_t>(options.analyzer.recent_samples, 1) + 1) / 2 +
                       std::max(1, options.analyzer.persistence) - 1;
  std::unordered_map<std::string, size_t> timeline_index;  // id -> position in res.timeline
  std::map<std::string, size_t> index_of_id;

  std::vector<fleet::Envelope> envs;
  std::vector<std::string> subjects, payloads;
  const int64_t steps = static_cast<int64_t>(std::ceil(duration / step - 1e-9));
  for (int64_t k = 1; k <= steps; ++k) {
    const double t = std::min(duration, static_cast<double>(k) * step);
    envs.clear();
    auto g0 = Clock::now();
    sim.AdvanceTo(t, envs);
    if (k == steps) sim.Flush(envs);
    res.timings.generate_s += Since(g0);

    auto e0 = Clock::now();
    subjects.clear();
    payloads.clear();
    for (const fleet::Envelope& e : envs) {
      payloads.push_back(fleet::Encode(e));
      if (options.on_batch) subjects.push_back(fleet::Subject(e.place, e.kind));
      res.timings.bytes += payloads.back().size();
      res.timings.observations += e.observations.size();
      auto w = watch.find(e.place.node);
      if (w != watch.end() && evidence_k[w->second] < 0) {
        const size_t i = w->second;
        const int64_t start_ns = sim.TimeNs(scenario.truth.stragglers[i].start_s);
        for (const Observation& o : e.observations) {
          if (o.kind != ObsKind::kStepTime || o.time_ns < start_ns) continue;
          if (++slowed_reports[i] == 1) evidence[i] = t;
          if (slowed_reports[i] == k_needed) evidence_k[i] = t;
        }
      }
    }
    res.timings.envelopes += envs.size();
    res.timings.encode_s += Since(e0);
    if (options.on_batch) options.on_batch(t, subjects, payloads);
    if (!analyzer) continue;

    const double cpu0 = ThreadCpuS();
    for (const std::string& p : payloads) {
      auto d0 = Clock::now();
      const Status decoded = fleet::DecodeInto(p, scratch);  // as a consumer does: storage reused
      res.timings.decode_s += Since(d0);
      if (!decoded.ok()) return Status(StatusCode::kInternal, "own envelope did not decode: " + decoded.message());
      auto i0 = Clock::now();
      analyzer->Ingest(scratch);
      res.timings.ingest_s += Since(i0);
    }
    auto v0 = Clock::now();
    std::vector<fleet::FleetDiagnosis> fresh = analyzer->Evaluate(sim.TimeNs(t));
    res.timings.evaluate_ms.push_back(Since(v0) * 1e3);
    res.timings.analyzer_cpu_s += ThreadCpuS() - cpu0;
    for (fleet::FleetDiagnosis& d : fresh) {
      TimedFleetDiagnosis light{t, {}};
      light.diagnosis.id = d.id;
      light.diagnosis.cause = d.cause;
      light.diagnosis.component = d.component;
      light.diagnosis.fault_class = d.fault_class;
      light.diagnosis.nodes = d.nodes;
      res.returns.push_back(std::move(light));
      auto [it, is_new] = timeline_index.emplace(d.id, res.timeline.size());
      if (is_new) {
        res.timeline.push_back({t, std::move(d)});
      } else {
        res.timeline[it->second].diagnosis = std::move(d);  // grown: keep when it was first named
      }
    }
  }
  if (analyzer) {
    res.open = analyzer->Open();
    res.ingest = analyzer->stats();
  }
  for (size_t i = 0; i < evidence.size(); ++i) {
    if (evidence[i] < 0) evidence[i] = scenario.truth.stragglers[i].start_s;
    if (evidence_k[i] < 0) evidence_k[i] = evidence[i];
  }
  res.score = ScoreFleet(scenario.truth, res.returns, evidence, evidence_k);
  return res;
}

}  // namespace faultline::sim
