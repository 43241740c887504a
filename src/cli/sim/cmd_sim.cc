// `faultline sim`: run a simulated HGX node from a scenario file, and
// `faultline bench accuracy`: score the agent over a directory of scenarios.
//
// `sim --agent` (what `make demo` runs) drives the node and the real agent in lockstep
// on a simulated clock and prints the diagnosis. Without --agent the node is served in
// real time (scaled by --speed) for an agent started by hand with the printed config.
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "cli/render.h"
#include "cli/sim/sim_commands.h"
#include "core/clock.h"
#include "core/json.h"
#include "sim/harness/accuracy.h"
#include "sim/harness/lockstep.h"
#include "sim/harness/workdir.h"

namespace faultline::cli {
namespace {

namespace fs = std::filesystem;
using sim::LockstepOptions;
using sim::NodeScenario;
using sim::ScenarioRun;

volatile std::sig_atomic_t g_stop = 0;  // set by SIGINT/SIGTERM in the real-time mode
extern "C" void OnSignal(int) { g_stop = 1; }

std::string Seconds(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(s < 10 ? 1 : 0) << s << "s";
  return os.str();
}

nlohmann::json RunJson(const ScenarioRun& r) {
  nlohmann::json j;
  j["scenario"] = r.name;
  j["phase"] = r.phase;
  j["truth"] = {
      {"fault_class", ToString(r.truth.fault_class)}, {"components", r.truth.components}, {"start_s", r.truth.start_s}};
  j["final"] = r.final_diagnoses.empty() ? nlohmann::json() : nlohmann::json(r.final_diagnoses.front());
  j["correct_class"] = r.final_correct_class;
  j["correct_component"] = r.final_correct_component;
  j["first_correct_s"] = r.first_correct_s ? nlohmann::json(*r.first_correct_s) : nlohmann::json();
  nlohmann::json changes = nlohmann::json::array();
  for (const sim::DiagnosisChange& c : r.changes) {
    changes.push_back({{"t", c.t},
                       {"fault_class", ToString(c.primary.fault_class)},
                       {"component", c.primary.component.Id()},
                       {"action", ToString(c.primary.action)}});
  }
  j["changes"] = std::move(changes);
  j["wrong_hardware_actions"] = r.wrong_hardware_actions;
  j["flaps"] = r.flaps;
  j["decisions"] = {{"taken", r.decisions.taken},
                    {"wrong", r.decisions.wrong},
                    {"wrong_details", r.decisions.wrong_details},
                    {"first_correct_s",
                     r.decisions.first_correct_s ? nlohmann::json(*r.decisions.first_correct_s) : nlohmann::json()}};
  j["wall_s"] = r.wall_s;
  j["observations_stored"] = r.agent.observations_inserted;
  j["sim_errors"] = r.node.errors;
  if (!r.workdir.empty()) j["workdir"] = r.workdir;
  return j;
}

void PrintRun(const ScenarioRun& r, const NodeScenario& sc) {
  std::cout << "scenario " << sc.name << ": " << sc.description << "\n";
  std::cout << "ground truth: " << ToString(r.truth.fault_class);
  if (!r.truth.components.empty()) std::cout << " on " << r.truth.components.front();
  std::cout << ", fault began at t=" << Seconds(r.truth.start_s) << "\n\n";
  std::cout << "primary diagnosis over time (scenario seconds):\n";
  for (const sim::DiagnosisChange& c : r.changes) {
    std::cout << "  t=" << std::setw(6) << Seconds(c.t) << "  " << ToString(c.primary.fault_class) << " on "
              << c.primary.component.Id() << " -> " << ToString(c.primary.action) << "\n";
  }
  std::cout << "\nfinal diagnosis:\n";
  RenderDiagnoses(std::cout, r.final_diagnoses);
  std::cout << "\nverdict: " << (r.final_correct_class && r.final_correct_component ? "CORRECT" : "WRONG");
  if (r.first_correct_s) {
    std::cout << " (first correct at t=" << Seconds(*r.first_correct_s) << ", "
              << Seconds(std::max(0.0, *r.first_correct_s - r.truth.start_s)) << " after the fault began)";
  }
  std::cout << "\n";
  for (const std::string& w : r.wrong_hardware_actions) std::cout << "WRONG HARDWARE ACTION: " << w << "\n";
  for (const std::string& e : r.node.errors) std::cout << "simulator error: " << e << "\n";
  if (!r.workdir.empty()) std::cout << "files kept in " << r.workdir << "\n";
}

// The lockstep options `sim --agent` and `bench accuracy` share; each scenario's own
// `agent:` block sets its schedule inside RunScenarioLockstep.
LockstepOptions LockstepFor(const std::string& workdir, const std::string& nvml_lib, bool keep) {
  LockstepOptions o;
  o.workdir = workdir;
  o.nvml_library = nvml_lib;
  o.keep_workdir = keep;
  return o;
}

struct SimArgs {
  std::string scenario;
  std::string workdir;
  std::string nvml_lib;
  double speed = 1.0;
  double duration = 0;
  bool agent = false;
  bool json = false;
  bool keep = false;
  bool check = false;
};

// --check: the scenario as parsed (what the simulator will do), nothing run.
void PrintScenario(const NodeScenario& sc) {
  std::cout << "scenario " << sc.name << " (" << Seconds(sc.duration_s) << ", seed " << sc.seed
            << "): " << sc.description << "\n"
            << "node: " << sc.node.gpus << " GPUs, " << sc.node.psus << " PSUs x " << sc.node.psu_capacity_w << " W, "
            << sc.node.fans << " fans, BMC " << (sc.node.bmc ? "yes" : "no") << ", row remap "
            << (sc.node.row_remap ? "yes" : "no") << "\n"
            << "truth: " << ToString(sc.truth.fault_class);
  for (const std::string& c : sc.truth.components) std::cout << " " << c;
  std::cout << " -> " << ToString(sc.truth.action) << " from t=" << Seconds(sc.truth.start_s)
            << (sc.truth.slow ? ", slows the job" : "") << "\n";
  for (const sim::NodeFault& f : sc.faults) {
    std::cout << "  t=" << Seconds(f.at) << " " << sim::ToString(f.kind);
    if (f.until) std::cout << " until t=" << Seconds(*f.until);
    std::cout << "\n";
  }
}

// Serves the node in real time until the scenario ends or a signal arrives.
int ServeRealtime(const NodeScenario& sc, const SimArgs& a) {
  SystemClock sys;
  // The node's files go in a fresh directory (inside --workdir when given). They stay
  // afterwards: the agent started by hand keeps its store there for `why-slow`.
  auto parent = sim::PrepareRunDir(a.workdir, "faultline-sim");
  if (!parent.ok()) {
    std::cerr << "faultline sim: " << parent.status().message() << "\n";
    return kExitUsage;
  }
  auto made = parent->created ? Result<std::string>(parent->path) : sim::MakeUniqueDir(parent->path, sc.name);
  if (!made.ok()) {
    std::cerr << "faultline sim: " << made.status().message() << "\n";
    return kExitFailure;
  }
  const std::string dir = *made;
  sim::SimNodeOptions so{.workdir = dir, .time = {sys.NowNs(), sys.BootTimeNs(), a.speed}};
  auto node = sim::SimNode::Create(sc, so);
  if (!node.ok()) {
    std::cerr << "faultline sim: " << node.status().ToString() << "\n";
    return kExitFailure;
  }
  LockstepOptions lo;
  lo.nvml_library = a.nvml_lib;
  daemon::AgentConfig c = sim::SimAgentConfig(**node, lo, dir + "/faultline.db");
  std::ofstream toml(dir + "/agent.toml");
  toml << "# faultline agent config for the simulated node (written by faultline sim)\n"
       << "[agent]\nnode = \"sim-node\"\nstore_path = \"" << c.agent.store_path << "\"\nevaluate_interval = \"1s\"\n"
       << "[kmsg]\npath = \"" << c.kmsg.path << "\"\ninterval = \"1s\"\n"
       << "[nvml]\nlibrary_path = \"" << a.nvml_lib << "\"\ninterval = \"5s\"\n"
       << "[sysfs]\nroot = \"" << c.sysfs.root << "\"\ninterval = \"5s\"\n"
       << "[workload]\nfile = \"" << c.workload.file << "\"\n";
  if (!c.redfish.url.empty()) {
    toml << "[redfish]\nurl = \"" << c.redfish.url << "\"\nuser = \"" << c.redfish.user << "\"\npassword_file = \""
         << c.redfish.password_file << "\"\nca_file = \"" << c.redfish.ca_file << "\"\ninterval = \"10s\"\n";
  }
  toml.close();
  std::cout << "simulated node '" << sc.name << "' running at " << a.speed << "x; files in " << dir << "\n"
            << "run the agent against it:\n  FAKE_NVML_STATE=" << (*node)->nvml_state_path()
            << " faultline agent --config " << dir << "/agent.toml\n"
            << "then: faultline why-slow --store " << c.agent.store_path << " --node sim-node\n"
            << "Ctrl-C stops the node.\n"
            << std::flush;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const double duration = a.duration > 0 ? a.duration : sc.duration_s;
  const auto start = std::chrono::steady_clock::now();
  while (!g_stop) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * a.speed;
    if (Status s = (*node)->AdvanceTo(std::min(t, duration)); !s.ok()) std::cerr << "sim: " << s.ToString() << "\n";
    if (t >= duration) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::cout << "scenario time " << Seconds((*node)->now()) << ": " << (*node)->stats().kmsg_lines << " kernel lines, "
            << (*node)->stats().sel_entries << " SEL entries, " << (*node)->stats().step_reports << " step reports\n";
  return kExitOk;
}

int RunSim(const SimArgs& a) {
  auto sc = sim::LoadNodeScenario(a.scenario);
  if (!sc.ok()) {
    std::cerr << "faultline sim: " << sc.status().message() << "\n";
    return kExitUsage;
  }
  if (a.duration > 0) sc->duration_s = a.duration;
  if (a.check) {
    PrintScenario(*sc);
    return kExitOk;
  }
  if (!a.agent) return ServeRealtime(*sc, a);
  auto workdir = sim::PrepareRunDir(a.workdir, "faultline-sim");
  if (!workdir.ok()) {
    std::cerr << "faultline sim: " << workdir.status().message() << "\n";
    return kExitUsage;
  }
  LockstepOptions o = LockstepFor(workdir->path, a.nvml_lib, a.keep);
  o.agent_log = &std::cerr;
  auto run = sim::RunScenarioLockstep(*sc, o);
  // The run removed its own directory; this removes --workdir only if this command made it.
  if (!a.keep) sim::RemoveIfCreated(*workdir);
  if (!run.ok()) {
    std::cerr << "faultline sim: " << run.status().ToString() << "\n";
    return kExitFailure;
  }
  if (a.json) {
    std::cout << RunJson(*run).dump(2) << "\n";
  } else {
    PrintRun(*run, *sc);
  }
  return kExitOk;
}

struct AccuracyArgs {
  std::string dir;
  std::string filter;
  std::string nvml_lib;
  std::string workdir;
  int phases = 1;
  bool json = false;
  bool keep = false;
};

void PrintReport(const sim::AccuracyReport& rep, const std::vector<ScenarioRun>& runs) {
  std::set<std::string> names;
  for (const ScenarioRun& r : runs) names.insert(r.name);
  std::cout << "scenarios: " << names.size();
  if (names.size() != runs.size()) std::cout << ", runs: " << rep.scenarios << " (name#k: phase k)";
  std::cout << "\n\nper scenario:\n";
  for (const ScenarioRun& r : runs) {
    const std::string got =
        r.final_diagnoses.empty() ? "(none)" : std::string(ToString(r.final_diagnoses[0].fault_class));
    const double start = r.truth.start_s;
    std::cout << "  " << (r.final_correct_class && r.final_correct_component ? "ok   " : "MISS ") << std::left
              << std::setw(42) << sim::RunLabel(r) << std::setw(22) << got << std::setw(11)
              << (r.first_correct_s ? "ttd " + Seconds(std::max(0.0, *r.first_correct_s - start)) : "") << std::setw(16)
              << (r.decisions.first_correct_s
                      ? "decision " + Seconds(std::max(0.0, *r.decisions.first_correct_s - start))
                      : "")
              << "flaps " << std::setw(3) << r.flaps
              << (r.decisions.wrong ? " WRONG DECISIONS " + std::to_string(r.decisions.wrong) : "") << std::right
              << "\n";
  }
  std::cout << "\nconfusion matrix (rows: truth, columns: final primary diagnosis):\n";
  for (const auto& [truth, row] : rep.confusion) {
    std::cout << "  " << std::left << std::setw(22) << truth << std::right;
    for (const auto& [got, n] : row) std::cout << " " << got << "=" << n;
    std::cout << "\n";
  }
  std::cout << "\nper class:            precision recall  f1    support\n";
  for (const auto& [name, c] : rep.classes) {
    std::cout << "  " << std::left << std::setw(22) << name << std::right << std::fixed << std::setprecision(3)
              << std::setw(6) << c.precision << "  " << std::setw(6) << c.recall << "  " << std::setw(6) << c.f1 << "  "
              << c.support << "\n";
  }
  std::cout << std::setprecision(3) << "\nmacro-F1: " << rep.macro_f1
            << "\nprimary-diagnosis accuracy: " << rep.primary_accuracy
            << "\ncomponent accuracy: " << rep.component_accuracy << "\nfault -> first correct diagnosis: median "
            << Seconds(rep.ttd_median_s) << ", max " << Seconds(rep.ttd_max_s) << " (" << rep.diagnosed
            << " diagnosed; simulated clock, lockstep tick 0.25 s unless a scenario sets its own)"
            << "\nagent time per evaluating tick (polls due + evaluation, real): mean " << rep.agent_tick_ms_mean
            << " ms, max " << rep.agent_tick_ms_max << " ms"
            << "\nwrong hardware actions: " << rep.wrong_hardware_actions << "\n";
  for (const std::string& w : rep.wrong_action_details) std::cout << "  " << w << "\n";
  std::cout << "decisions for a wrong diagnosis: " << rep.wrong_decisions << " (taken, dry runs included)\n";
  for (const std::string& w : rep.wrong_decision_details) std::cout << "  " << w << "\n";
  std::cout << "final misses: " << rep.final_misses << " of " << rep.scenarios << " runs\n";
  for (const std::string& m : rep.misses) std::cout << "  miss: " << m << "\n";
  std::cout << std::setprecision(2) << "flaps: mean " << rep.flaps_mean << ", max " << rep.flaps_max
            << " (primary changes after the first non-none primary)\n"
            << "first correct decision: median " << Seconds(rep.first_decision_median_s) << ", max "
            << Seconds(rep.first_decision_max_s) << " after the fault began (" << rep.decided << " runs decided)\n";
}

nlohmann::json ReportJson(const sim::AccuracyReport& rep, const std::vector<ScenarioRun>& runs) {
  nlohmann::json classes = nlohmann::json::object();
  for (const auto& [name, c] : rep.classes) {
    classes[name] = {{"precision", c.precision},
                     {"recall", c.recall},
                     {"f1", c.f1},
                     {"support", c.support},
                     {"predicted", c.predicted}};
  }
  nlohmann::json scenario_runs = nlohmann::json::array();
  for (const ScenarioRun& r : runs) scenario_runs.push_back(RunJson(r));
  return {{"scenarios", rep.scenarios},
          {"confusion", rep.confusion},
          {"classes", classes},
          {"macro_f1", rep.macro_f1},
          {"primary_accuracy", rep.primary_accuracy},
          {"component_accuracy", rep.component_accuracy},
          {"time_to_diagnosis_s", {{"median", rep.ttd_median_s}, {"max", rep.ttd_max_s}, {"diagnosed", rep.diagnosed}}},
          {"agent_tick_ms", {{"mean", rep.agent_tick_ms_mean}, {"max", rep.agent_tick_ms_max}}},
          {"wrong_hardware_actions", rep.wrong_hardware_actions},
          {"wrong_action_details", rep.wrong_action_details},
          {"misses", rep.misses},
          {"final_misses", rep.final_misses},
          {"wrong_decisions", rep.wrong_decisions},
          {"wrong_decision_details", rep.wrong_decision_details},
          {"flaps", {{"mean", rep.flaps_mean}, {"max", rep.flaps_max}}},
          {"first_correct_decision_s",
           {{"median", rep.first_decision_median_s}, {"max", rep.first_decision_max_s}, {"decided", rep.decided}}},
          {"runs", scenario_runs}};
}

int RunAccuracy(const AccuracyArgs& a) {
  std::error_code ec;
  std::vector<fs::path> files = ScenarioFiles(a.dir, ec);
  if (ec) {
    std::cerr << "faultline bench accuracy: " << a.dir << ": " << ec.message() << "\n";
    return kExitUsage;
  }
  std::erase_if(files, [&a](const fs::path& f) { return f.filename().string().find(a.filter) == std::string::npos; });
  if (files.empty()) {
    std::cerr << "faultline bench accuracy: no scenario files (*.yaml, *.json) in " << a.dir << "\n";
    return kExitUsage;
  }
  auto workdir = sim::PrepareRunDir(a.workdir, "faultline-accuracy");
  if (!workdir.ok()) {
    std::cerr << "faultline bench accuracy: " << workdir.status().message() << "\n";
    return kExitUsage;
  }
  LockstepOptions o = LockstepFor(workdir->path, a.nvml_lib, a.keep);
  std::vector<ScenarioRun> runs;
  int failed = 0;
  for (const fs::path& f : files) {
    auto sc = sim::LoadNodeScenario(f.string());
    if (!sc.ok()) {
      std::cerr << "faultline bench accuracy: " << sc.status().message() << "\n";
      ++failed;
      continue;
    }
    // Phase 0 is the aligned lockstep; each further phase the same scenario on a
    // schedule drawn from its name and the phase (LockstepOptions::phase).
    for (int k = 0; k < a.phases; ++k) {
      o.phase = k;
      auto run = sim::RunScenarioLockstep(*sc, o);
      if (!run.ok()) {
        std::cerr << "faultline bench accuracy: " << f.string() << " phase " << k << ": " << run.status().ToString()
                  << "\n";
        ++failed;
        continue;
      }
      std::cerr << (run->final_correct_class && run->final_correct_component ? "ok   " : "MISS ") << sim::RunLabel(*run)
                << " (" << Seconds(run->wall_s) << " wall)\n";
      runs.push_back(std::move(run).value());
    }
  }
  if (!a.keep) sim::RemoveIfCreated(*workdir);
  const sim::AccuracyReport rep = sim::ScoreRuns(runs);
  if (a.json) {
    std::cout << ReportJson(rep, runs).dump(2) << "\n";
  } else {
    PrintReport(rep, runs);
  }
  return failed ? kExitFailure : kExitOk;
}

// Options every simulator run takes.
void AddRunOptions(CLI::App* cmd, std::string& workdir, std::string& nvml_lib, bool& keep) {
  cmd->add_option("--workdir", workdir,
                  "Directory for the runs' files (default: a fresh one in /dev/shm or $TMPDIR); each run makes\n"
                  "its own <scenario>-XXXXXX inside and removes only what it made");
  cmd->add_option("--nvml-lib", nvml_lib, "The fake libnvidia-ml.so.1 (default: the one built with faultline)");
  cmd->add_flag("--keep", keep, "Keep the work directory (the node's files, the agent's store) afterwards");
}

}  // namespace

std::vector<fs::path> ScenarioFiles(const std::string& dir, std::error_code& ec) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void AddSimCommand(CliApp& app) {
  auto args = std::make_shared<SimArgs>();
  args->nvml_lib = sim::DefaultFakeNvmlPath();
  CLI::App* cmd = app.root->add_subcommand(
      "sim",
      "Simulate an HGX node from a scenario file and serve it through the real interfaces (mock Redfish BMC,\n"
      "fake NVML library, kmsg-format log, fake sysfs tree, workload step reports).\n"
      "  --agent: also run the agent against it on a simulated clock and print the diagnosis (what `make demo` does).\n"
      "  without --agent: serve in real time (x --speed) and print how to point `faultline agent` at it.\n"
      "Scenario format: docs/scenarios.md; examples in scenarios/.");
  // Required unless a subcommand (`sim fleet`) runs instead; checked in the callback.
  cmd->add_option("--scenario", args->scenario, "Scenario file (YAML or JSON)");
  cmd->add_option("--speed", args->speed, "Scenario seconds per wall-clock second in real-time mode (default 1)")
      ->check(CLI::Range(0.01, 1000.0));
  cmd->add_option("--duration", args->duration, "Override the scenario's duration (seconds)")
      ->check(CLI::PositiveNumber);
  AddRunOptions(cmd, args->workdir, args->nvml_lib, args->keep);
  cmd->add_flag("--agent", args->agent, "Run the agent in lockstep and print the diagnosis");
  cmd->add_flag("--json", args->json, "With --agent: the run as JSON (timeline, final diagnosis, verdict)");
  cmd->add_flag("--check", args->check, "Parse the scenario and print what it will do; run nothing");
  cmd->callback([&app, args, cmd] {
    if (!cmd->get_subcommands().empty()) return;  // `sim fleet` ran
    if (args->scenario.empty()) {
      std::cerr << "sim: --scenario is required\n";
      app.exit_code = kExitUsage;
      return;
    }
    app.exit_code = RunSim(*args);
  });

  auto acc = std::make_shared<AccuracyArgs>();
  acc->nvml_lib = sim::DefaultFakeNvmlPath();
  CLI::App* bench = app.bench->add_subcommand(
      "accuracy",
      "Run every scenario in a directory through the simulator and the agent and score the diagnoses:\n"
      "confusion matrix, per-class precision/recall/F1, macro-F1, component accuracy, time from fault to\n"
      "diagnosis, wrong hardware actions (cordon/drain/RMA on a non-hardware cause or the wrong part),\n"
      "and the decision timeline: policy decisions taken (dry runs too) for a diagnosis of the wrong class,\n"
      "flaps of the primary diagnosis, time from fault to the first correct decision.\n"
      "  --phases N: run each scenario N times, the first in the aligned lockstep, the others with each\n"
      "  source's polls at a random phase and jitter and the daemon's evaluation schedule, as in real time.\n"
      "Scenario format and the figures: docs/scenarios.md.");
  bench->add_option("--scenarios", acc->dir, "Directory of scenario files")->required();
  bench->add_option("--filter", acc->filter, "Only scenario files whose name contains this");
  AddRunOptions(bench, acc->workdir, acc->nvml_lib, acc->keep);
  bench
      ->add_option("--phases", acc->phases,
                   "Runs per scenario (default 1: the aligned lockstep only). Run k > 0 draws, from the\n"
                   "scenario's name and k, each source's first-poll phase in [0, interval) and a per-poll\n"
                   "jitter of up to 20 % of the interval, and evaluates as the daemon does")
      ->check(CLI::Range(1, 1000));
  bench->add_flag("--json", acc->json, "The report as JSON (with every run's timeline)");
  bench->callback([&app, acc] { app.exit_code = RunAccuracy(*acc); });
}

}  // namespace faultline::cli
