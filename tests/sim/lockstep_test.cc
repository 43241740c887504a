// End to end: scenarios from the corpus through the simulated node and the real agent
// (NVML through the fake library via dlopen, Redfish over HTTPS to the mock BMC, the kmsg
// file, the fake sysfs tree, the workload file), scored against their ground truth.
#include "sim/harness/lockstep.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/sanitizer.h"
#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;

class LockstepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.workdir = FakeSysfsScratchDir("lockstep");
    fs::create_directories(options_.workdir);
    options_.nvml_library = DefaultFakeNvmlPath();
    ASSERT_FALSE(options_.nvml_library.empty()) << "the fake NVML library was not built";
  }
  void TearDown() override { fs::remove_all(options_.workdir); }

  ScenarioRun Run(const std::string& name, double duration_s = 0) {
    auto sc = LoadNodeScenario(std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/" + name + ".yaml");
    EXPECT_TRUE(sc.ok()) << sc.status().ToString();
    if (!sc.ok()) return {};
    if (duration_s > 0) sc->duration_s = duration_s;
    auto run = RunScenarioLockstep(*sc, options_);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    return run.ok() ? std::move(run).value() : ScenarioRun{};
  }

  LockstepOptions options_;
};

TEST_F(LockstepTest, DemoDegradingPsuIsFoundAcrossLayers) {
  ScenarioRun r = Run("demo-psu-degrading-power-brake", 260);
  ASSERT_FALSE(r.final_diagnoses.empty());
  const Diagnosis& d = r.final_diagnoses.front();
  EXPECT_EQ(d.fault_class, FaultClass::kPowerSupply);
  EXPECT_EQ(d.component.Id(), "psu/PSU2");
  EXPECT_EQ(d.action, Action::kRma);
  // The power brake on every GPU and the slow steps are explained, not reported as causes.
  EXPECT_GE(d.explains.size(), 9u);
  EXPECT_TRUE(r.first_correct_s.has_value());
  EXPECT_TRUE(r.wrong_hardware_actions.empty());
  EXPECT_TRUE(r.node.errors.empty());
  // Every source delivered: the agent stored readings of all of them.
  EXPECT_GT(r.agent.observations_inserted, 1000u);
  EXPECT_EQ(r.agent.poll_failures, 0u);
  // The decoy XID 13 is a separate, user-level diagnosis.
  bool user = false;
  for (const Diagnosis& x : r.final_diagnoses) user = user || x.fault_class == FaultClass::kUserApplication;
  EXPECT_TRUE(user);
}

TEST_F(LockstepTest, UserXidStormIsNeverAHardwareAction) {
  ScenarioRun r = Run("user-xid13-storm-with-sbe-noise", 240);
  ASSERT_FALSE(r.final_diagnoses.empty());
  EXPECT_EQ(r.final_diagnoses.front().fault_class, FaultClass::kUserApplication);
  EXPECT_TRUE(r.final_correct_component);
  EXPECT_TRUE(r.wrong_hardware_actions.empty());
}

TEST_F(LockstepTest, SilentPcieDowntrainIsNamedByItsLink) {
  ScenarioRun r = Run("pcie-gpu2-downtrained-x8", 240);
  ASSERT_FALSE(r.final_diagnoses.empty());
  EXPECT_EQ(r.final_diagnoses.front().fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_TRUE(r.final_correct_component) << r.final_diagnoses.front().component.Id();
  EXPECT_EQ(r.final_diagnoses.front().action, Action::kReseatOrReplaceLink);
}

TEST_F(LockstepTest, HealthyNodeHasNothingToDo) {
  ScenarioRun r = Run("healthy-node-noisy-background", 200);
  ASSERT_FALSE(r.final_diagnoses.empty());
  EXPECT_EQ(r.final_diagnoses.front().fault_class, FaultClass::kNone);
  for (const DiagnosisChange& c : r.changes) EXPECT_EQ(c.primary.fault_class, FaultClass::kNone);
}

TEST_F(LockstepTest, RunsAreReproducible) {
  ScenarioRun a = Run("psu-fail-redundancy-holds", 200);
  ScenarioRun b = Run("psu-fail-redundancy-holds", 200);
  ASSERT_EQ(a.changes.size(), b.changes.size());
  for (size_t i = 0; i < a.changes.size(); ++i) {
    EXPECT_EQ(a.changes[i].t, b.changes[i].t);
    EXPECT_EQ(a.changes[i].primary.component.Id(), b.changes[i].primary.component.Id());
  }
  ASSERT_FALSE(a.final_diagnoses.empty());
  EXPECT_EQ(a.final_diagnoses.front().component.Id(), "psu/PSU3");
  EXPECT_EQ(a.final_diagnoses.front().severity, Severity::kWarning);  // redundancy held
}

// Two runs of one scenario changed their primary diagnosis at the same times to the same
// answers, and were first right at the same time.
void ExpectSameTimeline(const ScenarioRun& a, const ScenarioRun& b, const std::string& name) {
  ASSERT_EQ(a.changes.size(), b.changes.size()) << name;
  for (size_t i = 0; i < a.changes.size(); ++i) {
    EXPECT_EQ(a.changes[i].t, b.changes[i].t) << name;
    EXPECT_EQ(a.changes[i].primary.fault_class, b.changes[i].primary.fault_class) << name;
    EXPECT_EQ(a.changes[i].primary.component.Id(), b.changes[i].primary.component.Id()) << name;
  }
  EXPECT_EQ(a.first_correct_s, b.first_correct_s) << name;
}

// The scenarios an equivalence check runs over: all of them, or under ASan (where each
// run takes about 10 s) the first, which still runs every line of the comparison.
std::vector<const char*> OneUnderAsan(const std::vector<const char*>& names) {
  return {names.begin(), names.begin() + static_cast<std::ptrdiff_t>(SweepSize(names.size(), 1))};
}

TEST_F(LockstepTest, SkippingIdleTicksChangesNothingTheAgentSees) {
  // Every tick visited vs only the ticks with a poll or evaluation due: the same
  // timeline, the same stored observations, the same final answer, for fewer ticks.
  const std::vector<const char*> names = {"gpu7-fell-off-bus", "psu-degrade-then-fail"};
  for (const char* name : OneUnderAsan(names)) {
    options_.skip_idle_ticks = false;
    ScenarioRun all = Run(name, 240);
    options_.skip_idle_ticks = true;
    ScenarioRun skip = Run(name, 240);
    ExpectSameTimeline(all, skip, name);
    EXPECT_EQ(all.agent.observations_inserted, skip.agent.observations_inserted) << name;
    EXPECT_EQ(all.agent.evaluations, skip.agent.evaluations) << name;
    EXPECT_EQ(all.final_correct_class, skip.final_correct_class) << name;
    EXPECT_EQ(all.ticks_visited, 961) << name;                     // 240 s / 0.25 s, both ends
    EXPECT_LT(skip.ticks_visited, all.ticks_visited / 3) << name;  // evaluations every 1 s: 1 tick in 4
  }
}

TEST_F(LockstepTest, AScenarioStatesItsOwnSchedule) {
  auto sc = LoadNodeScenario(std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/healthy-node.yaml");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  sc->duration_s = 600;
  sc->agent = AgentSchedule{.fast_interval_s = 60, .sample_interval_s = 120, .redfish_interval_s = 300, .tick_s = 1};
  auto run = RunScenarioLockstep(*sc, options_);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->agent.evaluations, 11u);  // t = 0, 60, ..., 600
  EXPECT_EQ(run->ticks_visited, 11);
}

TEST_F(LockstepTest, SnapshotsRebuiltOnlyWhenReadChangeNothingTheAgentSees) {
  // The NVML state file and the BMC sensors rebuilt at every visited tick vs only when
  // the NVML / Redfish source may poll: same timeline, same stored observations. The
  // scenarios' faults show through NVML (power brake, lost GPU, heat) and Redfish (PSU).
  const std::vector<const char*> names = {"demo-psu-degrading-power-brake", "gpu7-fell-off-bus",
                                          "inlet-hot-thermal-throttle"};
  for (const char* name : OneUnderAsan(names)) {
    options_.publish_when_read = false;
    ScenarioRun every = Run(name, 240);
    options_.publish_when_read = true;
    ScenarioRun lazy = Run(name, 240);
    ExpectSameTimeline(every, lazy, name);
    EXPECT_EQ(every.agent.observations_inserted, lazy.agent.observations_inserted) << name;
    EXPECT_EQ(every.agent.observations_duplicate, lazy.agent.observations_duplicate) << name;
    EXPECT_EQ(every.node.sel_entries, lazy.node.sel_entries) << name;
    EXPECT_LE(lazy.node.nvml_writes, every.node.nvml_writes) << name;
  }
}

// A scenario of `duration_s` on a deployed agent's pace (kmsg, workload and evaluation
// every 60 s, NVML and sysfs every 300 s, Redfish every 600 s, 1 s ticks).
NodeScenario SlowPaced(double duration_s, std::vector<NodeFault> faults) {
  auto sc = LoadNodeScenario(std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/healthy-node.yaml");
  EXPECT_TRUE(sc.ok()) << sc.status().ToString();
  if (!sc.ok()) return {};
  sc->duration_s = duration_s;
  sc->agent = AgentSchedule{.fast_interval_s = 60, .sample_interval_s = 300, .redfish_interval_s = 600, .tick_s = 1};
  sc->faults = std::move(faults);
  return *sc;
}

TEST_F(LockstepTest, AFaultFarAheadIsReachedInFewStepsAndSeenOnTime) {
  // A GPU falls off the bus half a day in, between two ticks and between two polls: the
  // run visits one tick per evaluation (721 for 12 hours, not 43,201) and the kernel-log
  // poll after the fault sees it, so the first right answer comes at that poll.
  NodeFault gone;
  gone.kind = NodeFaultKind::kFallOffBus;
  gone.at = 40000.3;  // between the polls at 39960 and 40020
  gone.gpu = 3;
  NodeScenario sc = SlowPaced(43200, {gone});
  sc.truth = Truth{.fault_class = FaultClass::kGpuFellOffBus, .components = {"gpu/3"}, .start_s = gone.at};
  auto run = RunScenarioLockstep(sc, options_);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->ticks_visited, 721);
  EXPECT_EQ(run->agent.evaluations, 721u);
  ASSERT_TRUE(run->first_correct_s.has_value());
  EXPECT_EQ(*run->first_correct_s, 40020);
  EXPECT_TRUE(run->wrong_hardware_actions.empty());
}

TEST_F(LockstepTest, AFaultBetweenTicksIsSeenWhenEveryTickIsVisited) {
  // The same fault, 20 minutes in, with every tick visited and with only the due ones:
  // seen at the same simulated time.
  NodeFault gone;
  gone.kind = NodeFaultKind::kFallOffBus;
  gone.at = 1000.3;
  gone.gpu = 5;
  NodeScenario sc = SlowPaced(1500, {gone});
  sc.truth = Truth{.fault_class = FaultClass::kGpuFellOffBus, .components = {"gpu/5"}, .start_s = gone.at};
  std::vector<ScenarioRun> runs;
  for (bool skip : {false, true}) {
    options_.skip_idle_ticks = skip;
    options_.publish_when_read = skip;
    auto run = RunScenarioLockstep(sc, options_);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    runs.push_back(std::move(run).value());
  }
  EXPECT_EQ(runs[0].ticks_visited, 1501);
  EXPECT_EQ(runs[1].ticks_visited, 26);
  ASSERT_TRUE(runs[0].first_correct_s.has_value());
  EXPECT_EQ(*runs[0].first_correct_s, 1020);
  EXPECT_EQ(runs[0].first_correct_s, runs[1].first_correct_s);
  EXPECT_EQ(runs[0].agent.observations_inserted, runs[1].agent.observations_inserted);
}

TEST_F(LockstepTest, NothingDueIsSkipped) {
  // Every source is polled at each of its due times and no other, and the agent
  // evaluates at every evaluation time: counted at each evaluation from the agent's own
  // source statuses.
  NodeScenario sc = SlowPaced(3600, {});
  sc.truth = Truth{.fault_class = FaultClass::kNone};
  const daemon::Agent* agent = nullptr;
  options_.on_agent_created = [&agent](daemon::Agent& a, const SimNode&) { agent = &a; };
  std::vector<std::string> wrong;
  std::vector<double> evaluated_at;
  options_.on_evaluation = [&](double t, const std::vector<Diagnosis>&) {
    evaluated_at.push_back(t);
    for (const daemon::SourceStatus& s : agent->SourceStatuses()) {
      const double every = s.name == "kmsg" || s.name == "workload" ? 60 : s.name == "redfish" ? 600 : 300;
      const auto want = static_cast<uint64_t>(t / every) + 1;  // t = 0 included
      if (s.polls != want) {
        wrong.push_back(s.name + " at t=" + std::to_string(t) + ": " + std::to_string(s.polls) + " polls, want " +
                        std::to_string(want));
      }
    }
  };
  auto run = RunScenarioLockstep(sc, options_);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(wrong.empty()) << wrong.front();
  ASSERT_EQ(evaluated_at.size(), 61u);
  for (size_t i = 0; i < evaluated_at.size(); ++i) EXPECT_EQ(evaluated_at[i], 60.0 * static_cast<double>(i));
  EXPECT_EQ(run->agent.poll_failures, 0u);
}

// Each source's poll times (scenario seconds) in one run, from the agent's own source
// statuses after every visited tick.
using PollTimes = std::map<std::string, std::vector<double>>;
void RecordPolls(LockstepOptions& o, PollTimes& polls) {
  o.on_tick = [&polls](double t, int64_t, const daemon::Agent& agent) {
    for (const daemon::SourceStatus& s : agent.SourceStatuses()) {
      std::vector<double>& at = polls[s.name];
      while (at.size() < s.polls) at.push_back(t);
    }
  };
}

TEST_F(LockstepTest, PhaseZeroIsTheAlignedLockstep) {
  // `bench accuracy --phases 1` runs phase 0 only: exactly what the lockstep gave before.
  ScenarioRun aligned = Run("gpu7-fell-off-bus", 120);
  options_.phase = 0;
  options_.phase_jitter = 0.5;  // not used at phase 0
  ScenarioRun phase0 = Run("gpu7-fell-off-bus", 120);
  ExpectSameTimeline(aligned, phase0, "phase 0");
  EXPECT_EQ(aligned.agent.observations_inserted, phase0.agent.observations_inserted);
  EXPECT_EQ(aligned.agent.evaluations, phase0.agent.evaluations);
  EXPECT_EQ(aligned.decisions.taken, phase0.decisions.taken);
  EXPECT_EQ(aligned.decisions.first_correct_s, phase0.decisions.first_correct_s);
  EXPECT_EQ(aligned.flaps, phase0.flaps);
  EXPECT_EQ(phase0.phase, 0);
}

TEST_F(LockstepTest, PhasesDrawTheirOwnScheduleReproducibly) {
  PollTimes aligned, one, again, two;
  RecordPolls(options_, aligned);
  ScenarioRun r0 = Run("gpu7-fell-off-bus", 90);
  options_.phase = 1;
  RecordPolls(options_, one);
  ScenarioRun r1 = Run("gpu7-fell-off-bus", 90);
  RecordPolls(options_, again);
  ScenarioRun r1b = Run("gpu7-fell-off-bus", 90);
  options_.phase = 2;
  RecordPolls(options_, two);
  (void)Run("gpu7-fell-off-bus", 90);
  EXPECT_EQ(r1.phase, 1);
  // The aligned run polls every source at t = 0 and on multiples of its interval.
  for (const auto& [name, at] : aligned) {
    ASSERT_FALSE(at.empty()) << name;
    EXPECT_EQ(at.front(), 0.0) << name;
  }
  // Phase 1: another schedule, the same every time it runs; phase 2 another again.
  EXPECT_NE(aligned, one);
  EXPECT_EQ(one, again);
  EXPECT_NE(one, two);
  ExpectSameTimeline(r1, r1b, "phase 1 twice");
  EXPECT_EQ(r1.decisions.taken, r1b.decisions.taken);
  EXPECT_EQ(r1.agent.evaluations, r1b.agent.evaluations);
  // Each source's first poll within its first interval, on the tick grid, and each next
  // one an interval plus at most 20 % of it (rounded to the tick) after the last.
  const std::map<std::string, double> every = {{"kmsg", 1},  {"workload", 1}, {"nvml", 5},
                                               {"sysfs", 5}, {"ethernet", 5}, {"redfish", 10}};
  bool some_late = false, some_phased = false;
  for (const auto& [name, at] : one) {
    const double interval = every.count(name) ? every.at(name) : 1.0;
    ASSERT_FALSE(at.empty()) << name;
    EXPECT_LT(at.front(), interval) << name;
    EXPECT_EQ(at.front() / 0.25, std::floor(at.front() / 0.25)) << name;
    some_phased = some_phased || at.front() > 0;
    for (size_t i = 1; i < at.size(); ++i) {
      const double gap = at[i] - at[i - 1];
      EXPECT_GE(gap, interval) << name << " poll " << i;
      EXPECT_LE(gap, interval * 1.2 + 0.25) << name << " poll " << i;
      some_late = some_late || gap > interval;
    }
  }
  EXPECT_TRUE(some_phased);
  EXPECT_TRUE(some_late);
  // The daemon's evaluation schedule: on its 1 s interval (and at critical batches), not
  // after every poll.
  EXPECT_LE(r1.agent.evaluations, r0.agent.evaluations);
  EXPECT_NE(PhaseSeed("gpu7-fell-off-bus", 1), PhaseSeed("gpu7-fell-off-bus", 2));
  EXPECT_NE(PhaseSeed("gpu7-fell-off-bus", 1), PhaseSeed("gpu6-cold-plate-blocked", 1));
}

TEST_F(LockstepTest, TheRunsDecisionsAreReadFromTheStore) {
  // A GPU lost from the bus: the default policy (every class a dry run) decides for it.
  ScenarioRun r = Run("gpu7-fell-off-bus", 240);
  EXPECT_GT(r.decisions.taken, 0);
  EXPECT_EQ(r.decisions.wrong, 0) << (r.decisions.wrong_details.empty() ? "" : r.decisions.wrong_details.front());
  ASSERT_TRUE(r.decisions.first_correct_s.has_value());
  EXPECT_GE(*r.decisions.first_correct_s, r.truth.start_s);
  EXPECT_EQ(r.flaps, CountFlaps(r.changes));
}

// Every entry directly under `dir`, by name.
std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST_F(LockstepTest, AUsersWorkdirKeepsEverythingItHeld) {
  // The user's directory already holds a file and a directory named like the scenario:
  // the run makes its own directory beside them and removes only that.
  const std::string mine = options_.workdir + "/healthy-node";
  fs::create_directories(mine);
  std::ofstream(mine + "/precious.txt") << "user data\n";
  std::ofstream(options_.workdir + "/notes.txt") << "more user data\n";
  const std::set<std::string> before = Entries(options_.workdir);
  ScenarioRun r = Run("healthy-node", 20);
  EXPECT_EQ(r.name, "healthy-node");
  EXPECT_TRUE(r.workdir.empty());
  EXPECT_EQ(Entries(options_.workdir), before);
  EXPECT_TRUE(fs::exists(mine + "/precious.txt"));
  EXPECT_TRUE(fs::exists(options_.workdir + "/notes.txt"));
}

TEST_F(LockstepTest, KeptRunsGetTheirOwnDirectoryEach) {
  options_.keep_workdir = true;
  ScenarioRun a = Run("healthy-node", 10);
  ScenarioRun b = Run("healthy-node", 10);
  ASSERT_FALSE(a.workdir.empty());
  ASSERT_FALSE(b.workdir.empty());
  EXPECT_NE(a.workdir, b.workdir);
  for (const std::string& d : {a.workdir, b.workdir}) {
    EXPECT_EQ(fs::path(d).parent_path(), fs::path(options_.workdir));
    EXPECT_EQ(fs::path(d).filename().string().rfind("healthy-node-", 0), 0u) << d;
    EXPECT_TRUE(fs::exists(d + "/kmsg.log")) << d;
  }
}

TEST_F(LockstepTest, AHostileNameIsRefusedBeforeAnythingIsWritten) {
  // A scenario built in code skips the parser: the run checks the name again.
  const std::string outside = fs::path(options_.workdir).parent_path().string() + "/" +
                              fs::path(options_.workdir).filename().string() + "-victim";
  fs::create_directories(outside);
  std::ofstream(outside + "/keep.txt") << "x\n";
  for (const std::string& name : std::vector<std::string>{"../" + fs::path(outside).filename().string(), "..", "/tmp",
                                                          "a/b", "", std::string("a\0b", 3), std::string(300, 'a')}) {
    NodeScenario sc;
    sc.name = name;
    sc.duration_s = 10;
    auto run = RunScenarioLockstep(sc, options_);
    EXPECT_FALSE(run.ok()) << "name of " << name.size() << " bytes was accepted";
  }
  EXPECT_TRUE(Entries(options_.workdir).empty());
  EXPECT_TRUE(fs::exists(outside + "/keep.txt"));
  fs::remove_all(outside);
}

TEST(LockstepHelpers, SymbolicTruthComponentsResolveToTheSimulatorsParts) {
  const std::string dir = FakeSysfsScratchDir("resolve");
  NodeScenario sc;
  sc.name = "r";
  sc.node.bmc = false;
  auto node = SimNode::Create(sc, SimNodeOptions{.workdir = dir});
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  const NodeLayout& l = (*node)->model().layout();
  ComponentRef by_bdf{ComponentType::kGpu, l.gpu_bdfs[3], {}};
  ComponentRef by_uuid{ComponentType::kGpu, "x", {{"uuid", l.GpuUuid(3)}}};
  ComponentRef other{ComponentType::kGpu, "4", {}};
  EXPECT_TRUE(ComponentMatches(by_bdf, {"gpu/3"}, **node));
  EXPECT_TRUE(ComponentMatches(by_uuid, {"gpu/3"}, **node));
  EXPECT_FALSE(ComponentMatches(other, {"gpu/3"}, **node));
  ComponentRef port{ComponentType::kPcie, (*node)->PcieParentOf(l.gpu_bdfs[2]), {}};
  EXPECT_TRUE(ComponentMatches(port, {"pcie/gpu2"}, **node));  // either end of the link
  EXPECT_FALSE(ComponentMatches(port, {"pcie/gpu5"}, **node));
  ComponentRef ib{ComponentType::kIb, l.hca_names[4] + "/1", {}};
  EXPECT_TRUE(ComponentMatches(ib, {"ib/hca4"}, **node));
  node->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace faultline::sim
