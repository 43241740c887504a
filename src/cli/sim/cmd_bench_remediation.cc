// `faultline bench remediation`: the automated part of the MTTR claim, measured in the
// simulator (docs/remediation.md "Measured"). Every scenario runs in lockstep with the real
// agent, [policy] enable = every class, and the platform double (sim/harness/sim_platform.h)
// as every actuator and the breaker's fleet view; then a storm replays a drain-warranting
// scenario's stored diagnoses on a fraction of a simulated fleet sharing one double. The
// scoring lives in sim/harness/remediation_bench.h; this file runs and prints.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/sim/sim_commands.h"
#include "core/json.h"
#include "sim/harness/lockstep.h"
#include "sim/harness/remediation_bench.h"
#include "sim/harness/workdir.h"

namespace faultline::cli {
namespace {

namespace fs = std::filesystem;
using sim::ScenarioRemediation;

struct RemediationArgs {
  std::string dir;
  std::string filter;
  std::string nvml_lib;
  std::string workdir;
  std::string storm_scenario;
  size_t fleet = 100;
  double storm_fraction = 0.3;
  double storm_hours = 2;
  double storm_spread_s = 30;
  double skip_longer_than_s = 3600;
  bool no_storm = false;
  bool json = false;
  bool keep = false;
};

std::string Secs(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(s < 100 ? 1 : 0) << s << "s";
  return os.str();
}

std::string Classes(const std::set<actions::ActionClass>& cs) {
  std::string out;
  for (actions::ActionClass c : cs) out += (out.empty() ? "" : "+") + std::string(actions::ToString(c));
  return out.empty() ? "nothing" : out;
}

// "drain reset_gpu webhook x2": what the platform was asked, in order of first request.
std::string Requests(const ScenarioRemediation& r) {
  std::vector<std::pair<std::string, int>> counts;
  for (const sim::JudgedApply& a : r.applies) {
    const std::string c(actions::ToString(a.apply.action_class));
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& p) { return p.first == c; });
    if (it == counts.end()) {
      counts.emplace_back(c, 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [c, n] : counts) out += (out.empty() ? "" : " ") + c + (n > 1 ? " x" + std::to_string(n) : "");
  return out.empty() ? "-" : out;
}

std::string Verdict(const ScenarioRemediation& r) {
  if (!r.wrong_disruptive.empty()) return "WRONG";
  if (!r.duplicates.empty()) return "DUPLICATE";
  if (!r.expect.scored) return "n/a";
  if (r.expect.correct.empty()) return r.applies.empty() ? "quiet" : "ok (extra)";
  return r.first_correct_s ? "ok" : "MISS";
}

std::string Delay(const std::optional<double>& at, double start) { return at ? Secs(std::max(0.0, *at - start)) : "-"; }

void PrintTable(const std::vector<ScenarioRemediation>& runs) {
  std::cout << "per scenario (times: fault onset -> request, simulated clock):\n"
            << "  " << std::left << std::setw(38) << "scenario" << std::setw(44) << "truth" << std::setw(24)
            << "expected" << std::setw(9) << "first" << std::setw(9) << "complete" << std::setw(11) << "verdict"
            << "requested\n";
  for (const ScenarioRemediation& r : runs) {
    const std::string truth =
        std::string(ToString(r.truth.fault_class)) + " (" + std::string(ToString(r.truth.action)) + ")";
    std::cout << "  " << std::setw(38) << r.name << std::setw(44) << truth << std::setw(24)
              << (r.expect.scored ? Classes(r.expect.correct) : "not scored") << std::setw(9)
              << Delay(r.first_correct_s, r.truth.start_s) << std::setw(9) << Delay(r.complete_s, r.truth.start_s)
              << std::setw(11) << Verdict(r) << Requests(r) << "\n";
  }
  std::cout << std::right;
}

void PrintDetails(const std::vector<ScenarioRemediation>& runs) {
  for (const ScenarioRemediation& r : runs) {
    for (const std::string& w : r.wrong_disruptive) std::cout << "  WRONG DISRUPTIVE " << r.name << ": " << w << "\n";
    for (const std::string& d : r.duplicates) std::cout << "  DUPLICATE " << r.name << ": " << d << "\n";
    for (const std::string& e : r.extra) std::cout << "  extra " << r.name << ": " << e << "\n";
    for (const std::string& n : r.notes) std::cout << "  note " << r.name << ": " << n << "\n";
  }
}

void PrintSummary(const sim::RemediationSummary& s, const std::vector<std::string>& skipped, const RemediationArgs& a) {
  std::cout << "\nscenarios run: " << s.scenarios << " (fleet of " << a.fleet
            << " known nodes; [policy] enable = every class; breaker defaults)\n";
  if (!skipped.empty()) {
    std::cout << "skipped (longer than " << Secs(a.skip_longer_than_s) << ", --skip-longer-than):";
    for (const std::string& k : skipped) std::cout << " " << k;
    std::cout << "\n";
  }
  std::cout << "scored (the truth asks for an action): " << s.scored << "; a correct action requested: " << s.correct
            << "\n"
            << "fault onset -> first correct action requested: median " << Secs(s.first_correct_median_s) << ", max "
            << Secs(s.first_correct_max_s) << " (" << s.correct << " scenarios)\n"
            << "fault onset -> every expected class requested: median " << Secs(s.complete_median_s) << ", max "
            << Secs(s.complete_max_s) << " (" << s.complete << " scenarios)\n"
            << "first correct diagnosis -> first correct action (the policy's own delay): at most "
            << Secs(s.policy_lag_max_s) << "\n"
            << "nothing to do (healthy, monitor): " << s.expect_nothing
            << ", of which nothing requested: " << s.expect_nothing_quiet << "\n"
            << "wrong disruptive actions: " << s.wrong_disruptive << " (must be 0)\n"
            << "duplicate actions: " << s.duplicates << " (must be 0)\n";
  for (const std::string& m : s.misses) std::cout << "  miss: " << m << "\n";
  for (const std::string& n : s.not_scored) std::cout << "  not scored: " << n << "\n";
}

void PrintStorm(const sim::StormReport& st) {
  std::cout << "\nstorm: " << st.faulting << " of " << st.fleet << " nodes faulting within " << Secs(st.spread_s)
            << ", replaying " << st.source << "'s stored diagnoses (" << st.replayed_rows
            << " rows in all), one shared platform double\n"
            << "  breaker limit: " << st.limit << " node(s) per " << Secs(st.window_s) << " (min(3, max(1, 2% of "
            << st.fleet << ")))\n"
            << "  nodes taken out: " << st.taken_out << " (within the first window: " << st.taken_out_first_window
            << "; most in any window: " << st.max_in_window << ")\n"
            << "  cordon/drain requests of the platform: " << st.drain_requests << "\n"
            << "  faulting nodes not taken out, their drain stored held_by_breaker: " << st.held_by_breaker
            << "; not out for another reason: " << st.not_out_other << "\n"
            << "  latest state of the faulting nodes' cordon/drain decisions:";
  for (const auto& [state, n] : st.states) std::cout << " " << state << "=" << n;
  std::cout << "\n  other requests (not held by the breaker):";
  for (const auto& [c, n] : st.other_requests) std::cout << " " << c << "=" << n;
  std::cout << "\n  taken out at (s after the onset):";
  for (double t : st.take_out_s) std::cout << " " << Secs(t);
  std::cout << "\n";
  if (!st.sample_hold.empty()) std::cout << "  a stored hold: " << st.sample_hold << "\n";
  if (st.hours * 3600 > st.window_s) {
    std::cout << "  after the first window (" << Secs(st.window_s) << " to " << Secs(st.hours * 3600) << "): taken out "
              << st.taken_out - st.taken_out_first_window << ", still held " << st.held_by_breaker << "\n";
  }
  std::cout << "  verdict: " << (st.max_in_window <= st.limit ? "within the breaker's limit" : "LIMIT EXCEEDED") << " ("
            << Secs(st.wall_s) << " wall)\n";
  if (!st.workdir.empty()) std::cout << "  stores kept in " << st.workdir << "\n";
}

nlohmann::json RunJson(const ScenarioRemediation& r) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json requests = nlohmann::json::array();
  for (const sim::JudgedApply& a : r.applies) {
    requests.push_back({{"t", a.t},
                        {"class", actions::ToString(a.apply.action_class)},
                        {"node", a.apply.node},
                        {"fault_class", ToString(a.apply.fault_class)},
                        {"component", a.apply.component.Id()},
                        {"recommended", ToString(a.apply.recommended)},
                        {"diagnosis_id", a.apply.diagnosis_id},
                        {"right_fault", a.right_fault},
                        {"error", a.apply.error}});
  }
  nlohmann::json expected = nlohmann::json::array();
  for (actions::ActionClass c : r.expect.correct) expected.push_back(actions::ToString(c));
  return {{"scenario", r.name},
          {"truth",
           {{"fault_class", ToString(r.truth.fault_class)},
            {"action", ToString(r.truth.action)},
            {"components", r.truth.components},
            {"start_s", r.truth.start_s}}},
          {"expected", expected},
          {"scored", r.expect.scored},
          {"basis", r.expect.basis},
          {"verdict", Verdict(r)},
          {"first_diagnosis_s", opt(r.first_diagnosis_s)},
          {"first_correct_action_s", opt(r.first_correct_s)},
          {"complete_s", opt(r.complete_s)},
          {"requests", requests},
          {"decision_states", r.states},
          {"refused", r.refused},
          {"wrong_disruptive", r.wrong_disruptive},
          {"duplicates", r.duplicates},
          {"extra", r.extra},
          {"notes", r.notes},
          {"wall_s", r.wall_s}};
}

nlohmann::json SummaryJson(const sim::RemediationSummary& s, const std::vector<std::string>& skipped) {
  return {{"scenarios", s.scenarios},
          {"skipped", skipped},
          {"scored", s.scored},
          {"correct", s.correct},
          {"first_correct_action_s", {{"median", s.first_correct_median_s}, {"max", s.first_correct_max_s}}},
          {"complete_s", {{"median", s.complete_median_s}, {"max", s.complete_max_s}, {"scenarios", s.complete}}},
          {"policy_lag_max_s", s.policy_lag_max_s},
          {"expect_nothing", s.expect_nothing},
          {"expect_nothing_quiet", s.expect_nothing_quiet},
          {"wrong_disruptive", s.wrong_disruptive},
          {"duplicates", s.duplicates},
          {"misses", s.misses},
          {"not_scored", s.not_scored}};
}

nlohmann::json StormJson(const sim::StormReport& st) {
  return {{"source", st.source},
          {"fleet", st.fleet},
          {"faulting", st.faulting},
          {"limit", st.limit},
          {"window_s", st.window_s},
          {"replayed_rows", st.replayed_rows},
          {"taken_out", st.taken_out},
          {"taken_out_first_window", st.taken_out_first_window},
          {"max_in_window", st.max_in_window},
          {"drain_requests", st.drain_requests},
          {"held_by_breaker", st.held_by_breaker},
          {"not_out_other", st.not_out_other},
          {"states", st.states},
          {"other_requests", st.other_requests},
          {"take_out_s", st.take_out_s},
          {"sample_hold", st.sample_hold},
          {"hours", st.hours},
          {"wall_s", st.wall_s}};
}

// The storm's source: --storm-scenario, else the first scenario (by name) whose truth
// warrants a drain and whose run requested a correct one.
const ScenarioRemediation* PickStormSource(const std::vector<ScenarioRemediation>& runs, const std::string& name) {
  for (const ScenarioRemediation& r : runs) {
    if (!name.empty() ? r.name == name : (sim::WarrantsDrain(r.expect) && r.first_correct_s && !r.stored.empty())) {
      return &r;
    }
  }
  return nullptr;
}

int RunRemediation(const RemediationArgs& a) {
  const char* me = "faultline bench remediation";
  std::error_code ec;
  const std::vector<fs::path> files = ScenarioFiles(a.dir, ec);
  if (ec) {
    std::cerr << me << ": " << a.dir << ": " << ec.message() << "\n";
    return kExitUsage;
  }
  if (files.empty()) {
    std::cerr << me << ": no scenario files (*.yaml, *.json) in " << a.dir << "\n";
    return kExitUsage;
  }
  auto workdir = sim::PrepareRunDir(a.workdir, "faultline-remediation");
  if (!workdir.ok()) {
    std::cerr << me << ": " << workdir.status().message() << "\n";
    return kExitUsage;
  }
  sim::RemediationBenchOptions o;
  o.lockstep.workdir = workdir->path;
  o.lockstep.nvml_library = a.nvml_lib;
  o.lockstep.keep_workdir = a.keep;
  o.fleet = a.fleet;
  std::vector<ScenarioRemediation> runs;
  std::vector<std::string> skipped;
  int failed = 0;
  std::optional<ScenarioRemediation> storm_only;  // the storm's source when not among the runs
  for (const fs::path& f : files) {
    auto sc = sim::LoadNodeScenario(f.string());
    if (!sc.ok()) {
      std::cerr << me << ": " << sc.status().message() << "\n";
      ++failed;
      continue;
    }
    const bool wanted = a.filter.empty() || f.filename().string().find(a.filter) != std::string::npos;
    const bool storm_source = !a.no_storm && !a.storm_scenario.empty() && sc->name == a.storm_scenario;
    if (!wanted && !storm_source) continue;
    if (sc->duration_s > a.skip_longer_than_s) {
      skipped.push_back(sc->name + " (" + Secs(sc->duration_s) + ")");
      if (!storm_source) continue;
    }
    auto run = sim::RunScenarioRemediation(*sc, o);
    if (!run.ok()) {
      std::cerr << me << ": " << f.string() << ": " << run.status().ToString() << "\n";
      ++failed;
      continue;
    }
    std::cerr << std::left << std::setw(11) << Verdict(*run) << std::right << sc->name << " (" << Secs(run->wall_s)
              << " wall)\n";
    if (wanted && sc->duration_s <= a.skip_longer_than_s) {
      runs.push_back(std::move(run).value());
    } else {
      storm_only = std::move(run).value();
    }
  }
  const sim::RemediationSummary summary = sim::SummarizeRemediation(runs);
  std::optional<sim::StormReport> storm;
  std::string storm_error;
  if (!a.no_storm) {
    std::vector<ScenarioRemediation> candidates = runs;
    if (storm_only) candidates.push_back(*storm_only);
    const ScenarioRemediation* src = PickStormSource(candidates, a.storm_scenario);
    if (src == nullptr) {
      storm_error = "no scenario to replay (" +
                    (a.storm_scenario.empty() ? std::string("none warrants a drain and got one")
                                              : "--storm-scenario " + a.storm_scenario + " not found") +
                    ")";
    } else {
      sim::StormOptions so;
      so.fleet = a.fleet;
      so.fraction = a.storm_fraction;
      so.hours = a.storm_hours;
      so.spread_s = a.storm_spread_s;
      so.workdir = workdir->path;
      so.keep = a.keep;
      auto st = sim::RunStorm(src->name, src->truth.start_s, src->stored, so);
      if (st.ok()) {
        storm = std::move(st).value();
      } else {
        storm_error = st.status().ToString();
      }
    }
    if (!storm_error.empty()) {
      std::cerr << me << ": storm: " << storm_error << "\n";
      ++failed;
    }
  }
  if (!a.keep) sim::RemoveIfCreated(*workdir);

  if (a.json) {
    nlohmann::json runs_json = nlohmann::json::array();
    for (const ScenarioRemediation& r : runs) runs_json.push_back(RunJson(r));
    nlohmann::json j = {{"summary", SummaryJson(summary, skipped)}, {"runs", runs_json}, {"fleet", a.fleet}};
    j["storm"] = storm ? StormJson(*storm) : nlohmann::json();
    if (!storm_error.empty()) j["storm_error"] = storm_error;
    std::cout << j.dump(2) << "\n";
  } else {
    PrintTable(runs);
    PrintDetails(runs);
    PrintSummary(summary, skipped, a);
    if (storm) PrintStorm(*storm);
    if (a.keep) std::cout << "\nrun files kept under " << workdir->path << "\n";
  }
  const bool unsafe =
      summary.wrong_disruptive > 0 || summary.duplicates > 0 || (storm && storm->max_in_window > storm->limit);
  return failed || unsafe ? kExitFailure : kExitOk;
}

}  // namespace

void AddBenchRemediationCommand(CliApp& app) {
  auto args = std::make_shared<RemediationArgs>();
  args->nvml_lib = sim::DefaultFakeNvmlPath();
  CLI::App* b = app.bench->add_subcommand(
      "remediation",
      "Run the scenarios with the remediation policy enabled against a simulated cluster: fault onset -> correct\n"
      "action requested, wrong disruptive actions, duplicates, and a fault storm against the breaker");
  b->footer(
      "Each scenario runs as in `bench accuracy` (the real agent in lockstep with the simulated node), with\n"
      "[policy] enable = every class and an in-memory cluster of --fleet nodes as every actuator and the\n"
      "breaker's fleet view. Expected actions come from each scenario's truth (docs/remediation.md \"Measured\").\n"
      "The storm replays a drain-warranting scenario's stored diagnoses on --storm-fraction of the fleet.\n"
      "\n"
      "Exit codes: 0 ran, 0 wrong disruptive actions, 0 duplicates, the storm within the breaker's limit;\n"
      "1 a run failed or one of those did not hold; 2 bad arguments.");
  b->add_option("--scenarios", args->dir, "Directory of scenario files")->required();
  b->add_option("--filter", args->filter, "Only scenario files whose name contains this");
  b->add_option("--fleet", args->fleet, "Nodes in the simulated cluster (default 100)")->check(CLI::Range(1, 100000));
  b->add_option("--storm-fraction", args->storm_fraction, "Fraction of the fleet faulting in the storm (default 0.3)")
      ->check(CLI::Range(0.000001, 1.0));
  b->add_option("--storm-scenario", args->storm_scenario,
                "Scenario name whose diagnoses the storm replays (default: the first that warrants a drain)");
  b->add_option("--storm-hours", args->storm_hours, "Simulated hours the storm runs after the onset (default 2)")
      ->check(CLI::Range(0.01, 48.0));
  b->add_option("--storm-spread", args->storm_spread_s, "Seconds over which the storm's onsets spread (default 30)")
      ->check(CLI::Range(0.0, 3600.0));
  b->add_flag("--no-storm", args->no_storm, "Skip the storm");
  b->add_option("--skip-longer-than", args->skip_longer_than_s,
                "Skip scenarios longer than this many simulated seconds (default 3600; listed in the output)")
      ->check(CLI::PositiveNumber);
  b->add_option("--workdir", args->workdir,
                "Directory for the runs' files (default: a fresh one in /dev/shm or $TMPDIR); each run makes\n"
                "its own directory inside and removes only what it made");
  b->add_option("--nvml-lib", args->nvml_lib, "The fake libnvidia-ml.so.1 (default: the one built with faultline)");
  b->add_flag("--keep", args->keep, "Keep the runs' files (agent stores, storm stores)");
  b->add_flag("--json", args->json, "The report as JSON (every request of the platform)");
  b->callback([&app, args] { app.exit_code = RunRemediation(*args); });
}

}  // namespace faultline::cli
