// `faultline bench agent-days`: the agent's work hour after hour as its history grows,
// on the simulated clock (issue 16).
//
// `bench agent-rest` measures an idle agent's share of a core in real time; over hours
// that figure moves with the machine (other processes' load, an idle VM's clock) as much
// as with the agent, so it cannot tell a slow creep from the weather. This command asks
// the other question directly: does the agent's work per hour stay the same as its store,
// its detectors' windows and its series fill? It runs the production agent (the
// configured sources, the pipeline, the store with its hourly retention) in the
// simulator's lockstep at the production defaults' intervals, evaluating as the daemon's
// evaluator thread does (Agent::DueEvaluation::kAsTheDaemon), against a healthy node for
// --hours simulated hours, and prints at each point the CPU time the agent's work took
// per simulated hour (this thread's time inside Agent::RunDue: polls, store commits,
// evaluations, retention; not the node's publishing), the evaluations and isolator runs,
// the store's rows and bytes, and the heap in use.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/sim/bench_measure.h"
#include "cli/sim/sim_commands.h"
#include "daemon/agent.h"
#include "daemon/config.h"
#include "sim/harness/lockstep.h"
#include "sim/node/node_scenario.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

constexpr double kMaxHours = 168;  // a scenario states at most a week

struct DaysArgs {
  double hours = 24;
  int points = 12;
  std::string scenario;
  std::string workdir;
  std::string nvml_lib;
  bool keep = false;
};

// The schedule `faultline agent` runs with when its file says nothing (daemon/config.h),
// in place of the simulator's faster scoring schedule.
void UseProductionIntervals(daemon::AgentConfig& c) {
  const daemon::AgentConfig d;
  c.agent.evaluate_interval_ns = d.agent.evaluate_interval_ns;
  c.agent.retention_interval_ns = d.agent.retention_interval_ns;
  c.kmsg.interval_ns = d.kmsg.interval_ns;
  c.nvml.interval_ns = d.nvml.interval_ns;
  c.sysfs.interval_ns = d.sysfs.interval_ns;
  c.ethernet.interval_ns = d.ethernet.interval_ns;
  c.amd.interval_ns = d.amd.interval_ns;
  c.workload.interval_ns = d.workload.interval_ns;
  c.redfish.interval_ns = d.redfish.interval_ns;
  c.redfish.sweep_deadline_ns = d.redfish.sweep_deadline_ns;
}

// One point of the timeline: the agent's counters and the store at simulated hour at_h.
struct Point {
  double at_h = 0;
  double agent_cpu_s = 0;  // cumulative, this thread inside RunDue
  daemon::AgentStats agent;
  daemon::PipelineStats pipeline;
  StoreSnapshot store;
  Heap heap;
};

Point Take(double at_h, double agent_cpu_s, const daemon::Agent& agent) {
  return Point{.at_h = at_h,
               .agent_cpu_s = agent_cpu_s,
               .agent = agent.stats(),
               .pipeline = agent.pipeline_stats(),
               .store = SnapshotStore(agent.config().agent.store_path),
               .heap = ReadHeap()};
}

// The agent's CPU time per simulated hour from point a to point b, in ms.
double CpuMsPerHour(const Point& a, const Point& b) {
  return (b.agent_cpu_s - a.agent_cpu_s) * 1000 / (b.at_h - a.at_h);
}

void PrintTimeline(const std::vector<Point>& points) {
  std::printf(
      "timeline (simulated hour: agent CPU ms per simulated hour since the previous point, evaluations, "
      "isolator runs, store rows, store MiB in use, heap in use MiB):\n");
  for (size_t i = 1; i < points.size(); ++i) {
    const Point& a = points[i - 1];
    const Point& b = points[i];
    const uint64_t evaluations = b.agent.evaluations - a.agent.evaluations;
    const uint64_t reused = b.pipeline.isolations_skipped - a.pipeline.isolations_skipped;
    std::printf("  %.1f: %.0f ms, %llu evaluations, %llu isolator runs, %lld rows, %.2f MiB, %.1f MiB\n", b.at_h,
                CpuMsPerHour(a, b), static_cast<unsigned long long>(evaluations),
                static_cast<unsigned long long>(evaluations - std::min(evaluations, reused)),
                static_cast<long long>(b.store.Rows()), static_cast<double>(b.store.used_bytes) / 1048576.0,
                b.heap.in_use_mib);
  }
}

// Work per simulated hour at each point after the first (which holds the start: the
// boot log, every series' first row, the warm start).
void PrintCpuSummary(const std::vector<Point>& points) {
  std::vector<double> per_hour;
  for (size_t i = 2; i < points.size(); ++i) per_hour.push_back(CpuMsPerHour(points[i - 1], points[i]));
  if (per_hour.empty()) {
    std::printf("agent_cpu_ms_per_simulated_hour: too few points (--points 3 or more)\n");
    return;
  }
  const auto [lo, hi] = std::minmax_element(per_hour.begin(), per_hour.end());
  std::printf(
      "agent_cpu_ms_per_simulated_hour: after the first point: first %.0f, last %.0f, min %.0f, max %.0f "
      "(last/first %.2f; as a share of one core %.3f%% .. %.3f%%)\n",
      per_hour.front(), per_hour.back(), *lo, *hi, per_hour.front() > 0 ? per_hour.back() / per_hour.front() : 0.0,
      *lo / 36000.0, *hi / 36000.0);
}

// Growth per day, and how many days of history the store's defaults then keep: its age
// limit, unless the size cap comes first. A run of two days or more measures the last
// simulated day, when the steps of a day before are being thinned (the store's steady
// state); a shorter one extrapolates from its first point (full-resolution steps: more).
void PrintGrowth(const std::vector<Point>& points) {
  const Point& b = points.back();
  const Point* a = &points[std::min<size_t>(1, points.size() - 1)];
  const bool steady = b.at_h >= 48;
  if (steady) {
    for (const Point& p : points) {
      if (p.at_h + 1e-9 >= b.at_h - 24) {
        a = &p;
        break;
      }
    }
  }
  const double days = (b.at_h - a->at_h) / 24;
  if (days <= 0) return;
  const double rows_per_day = static_cast<double>(b.store.Rows() - a->store.Rows()) / days;
  const double bytes_per_day = static_cast<double>(b.store.used_bytes - a->store.used_bytes) / days;
  const StoreOptions defaults;
  const double age_days = static_cast<double>(defaults.max_age_ns) / 86400e9;
  const double cap_days = bytes_per_day > 0 ? static_cast<double>(defaults.max_bytes) / bytes_per_day : 0;
  char span[96];
  std::snprintf(span, sizeof span, "simulated hours %.1f .. %.1f%s", a->at_h, b.at_h,
                steady ? ", the last day: steps a day old thinned" : ", extrapolated: steps not thinned yet");
  std::printf("store_rows_per_day: %.0f (%s)\n", rows_per_day, span);
  std::printf("store_mb_per_day: %.2f (pages in use, %s)\n", bytes_per_day / 1e6, span);
  if (bytes_per_day > 0) {
    std::printf(
        "days_of_history: %.0f (retention by age %.0f days; the %.0f GiB cap would be reached after %.0f "
        "days)\n",
        std::min(age_days, cap_days), age_days, static_cast<double>(defaults.max_bytes) / 1073741824.0, cap_days);
  } else {
    std::printf("days_of_history: %.0f (retention by age; the store did not grow)\n", age_days);
  }
}

int RunDays(const DaysArgs& a) {
  if (!(a.hours > 0 && a.hours <= kMaxHours) || a.points < 1 || a.points > 1000) {
    std::cerr << "faultline bench agent-days: --hours must be in (0, 168] and --points in 1..1000\n";
    return kExitUsage;
  }
  auto sc = a.scenario.empty() ? sim::ParseNodeScenario(kBenchHealthyNode) : sim::LoadNodeScenario(a.scenario);
  if (!sc.ok()) {
    std::cerr << "faultline bench agent-days: " << sc.status().ToString() << "\n";
    return kExitUsage;
  }
  sc->duration_s = a.hours * 3600;
  sim::LockstepOptions o;
  o.nvml_library = a.nvml_lib.empty() ? sim::DefaultFakeNvmlPath() : a.nvml_lib;
  if (o.nvml_library.empty()) {
    std::cerr << "faultline bench agent-days: fake NVML library not found (--nvml-lib)\n";
    return kExitUsage;
  }
  o.workdir = BenchParentDir(a.workdir);
  o.keep_workdir = a.keep;
  o.tick_s = 1;  // the shortest production interval (kmsg); a scenario's agent: block may say otherwise
  o.configure = UseProductionIntervals;
  o.evaluate = daemon::Agent::DueEvaluation::kAsTheDaemon;
  std::vector<Point> points;
  double cpu_s = 0;
  const double step_h = a.hours / a.points;
  o.on_tick = [&](double t, int64_t cpu_ns, const daemon::Agent& agent) {
    cpu_s += static_cast<double>(cpu_ns) / 1e9;
    const double h = t / 3600;
    if (points.empty()) points.push_back(Take(0, 0, agent));
    if (h + 1e-9 >= points.back().at_h + step_h) points.push_back(Take(h, cpu_s, agent));
  };
  daemon::TuneAllocatorForLongRun();  // as `faultline agent` does
  auto run = sim::RunScenarioLockstep(*sc, o);
  if (!run.ok()) {
    std::cerr << "faultline bench agent-days: " << run.status().ToString() << "\n";
    return kExitFailure;
  }
  std::printf(
      "agent-days: %s, %.1f simulated hours in %.0f s wall (lockstep, %lld ticks visited), the production "
      "defaults' intervals (kmsg 1 s, workload and evaluation 5 s, NVML and sysfs 10 s, Redfish 60 s), "
      "evaluating as the daemon does, store retention hourly\n",
      a.scenario.empty() ? "simulated healthy 8-GPU node" : ("scenario " + run->name).c_str(), a.hours, run->wall_s,
      static_cast<long long>(run->ticks_visited));
  if (points.size() < 2) {
    std::printf("timeline: too short for a point (--hours / --points)\n");
    return kExitOk;
  }
  PrintTimeline(points);
  PrintCpuSummary(points);
  PrintGrowth(points);
  std::printf("agent_cpu_seconds: %.2f in all (%.0f evaluations, %.0f polls, %.0f retention runs)\n", cpu_s,
              static_cast<double>(run->agent.evaluations), static_cast<double>(run->agent.polls),
              static_cast<double>(run->agent.retention_runs));
  std::printf(
      "findings_stored: %llu, diagnoses_stored: %llu; final primary diagnosis: %s\n",
      static_cast<unsigned long long>(run->agent.findings_stored),
      static_cast<unsigned long long>(run->agent.diagnoses_stored),
      run->final_diagnoses.empty() ? "none" : std::string(ToString(run->final_diagnoses.front().fault_class)).c_str());
  if (a.keep) std::printf("files kept in %s\n", run->workdir.c_str());
  return kExitOk;
}

}  // namespace

void AddBenchAgentDaysCommand(CliApp& app) {
  auto args = std::make_shared<DaysArgs>();
  CLI::App* b = app.bench->add_subcommand(
      "agent-days", "The agent's work per simulated hour as its history grows (hours to days, simulated clock)");
  b->footer(
      "What it runs: the production agent (the configured sources, the pipeline, the store and its hourly\n"
      "retention) in the simulator's lockstep on a simulated clock, at the production defaults' intervals\n"
      "(kmsg 1 s, workload and evaluation 5 s, NVML and sysfs 10 s, Redfish 60 s), evaluating as the daemon's\n"
      "evaluator thread does (its interval; a critical observation at once), against a healthy 8-GPU node\n"
      "(fake NVML library, fake sysfs tree, mock BMC over HTTPS on loopback, a training job's step reports).\n"
      "No sleeping: a simulated day takes minutes. Real-time idle cost: `faultline bench agent-rest`.\n"
      "\n"
      "Why: over hours a real-time CPU share moves with the machine as much as with the agent; the work\n"
      "per simulated hour does not. Flat means the agent's cost does not grow with its history.\n"
      "\n"
      "Prints: a timeline, one line per point (--points over --hours): the agent's CPU time per simulated\n"
      "hour since the previous point (this thread's time inside Agent::RunDue: polls, store commits,\n"
      "evaluations, retention; not the node's publishing), evaluations, isolator runs (evaluations whose\n"
      "answer was computed, not reused), store rows and MiB in use, the process's heap in use (the node's\n"
      "included); then agent_cpu_ms_per_simulated_hour (after the first point, which holds the start:\n"
      "first, last, min, max), store_rows_per_day and store_mb_per_day (over the last simulated day when\n"
      "the run is 48 hours or more: the store's steady state, per-step samples a day old thinned to one a\n"
      "minute; else extrapolated from the first point) and days_of_history (the store's retention by age,\n"
      "unless its size cap comes first).\n"
      "\n"
      "Differences from the daemon: the kmsg source is polled every second instead of waiting on the\n"
      "file, Redfish events (SSE) are off (the SEL is read by the sweeps), and the store commits without\n"
      "an fsync each. So the CPU figures are the lockstep's, for comparing points, not the daemon's share.\n"
      "\n"
      "Examples:\n"
      "  faultline bench agent-days                          # a simulated day, 12 points\n"
      "  faultline bench agent-days --hours 72 --points 36   # three days: the last shows the store's steady state\n"
      "\n"
      "Exit codes: 0 ran; 1 the agent or node failed; 2 bad arguments.");
  b->add_option("--hours", args->hours, "Simulated hours (default 24, at most 168)");
  b->add_option("--points", args->points, "Timeline points over the run (default 12)");
  b->add_option("--scenario", args->scenario, "Node scenario file (default: a built-in healthy 8-GPU node)")
      ->check(CLI::ExistingFile);
  b->add_option("--workdir", args->workdir,
                "Existing parent directory for the run's files (default: $TMPDIR, else /tmp); the run makes "
                "its own directory inside and removes only that");
  b->add_option("--nvml-lib", args->nvml_lib, "The fake libnvidia-ml.so.1 (default: the one built with faultline)");
  b->add_flag("--keep", args->keep, "Keep the run's files (store, node) and print where");
  b->callback([args, &app] { app.exit_code = RunDays(*args); });
}

}  // namespace faultline::cli
