#include "sim/harness/lockstep.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/clock.h"
#include "core/inventory.h"
#include "daemon/sources.h"
#include "policy/ledger.h"
#include "sim/harness/workdir.h"
#include "store/store.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kEpochNs = kSimEpochNs;
constexpr int64_t kUptimeNs = 3LL * 86400 * 1'000'000'000;  // the node booted three days before

int64_t Ns(double s) { return static_cast<int64_t>(s * 1e9); }

// Every identity the simulator knows for one truth component.
struct Identity {
  std::vector<std::string> ids;     // exact component ids
  std::vector<std::string> tokens;  // names / key values (BDFs normalized)
};

Identity GpuIdentity(const SimNode& node, int gpu) {
  const NodeLayout& l = node.model().layout();
  Identity id;
  if (gpu < 0 || static_cast<size_t>(gpu) >= l.gpu_bdfs.size()) return id;
  const std::string bdf = NormalizeBdf(l.gpu_bdfs[gpu]);
  id.ids = {"gpu/" + std::to_string(gpu), "gpu/" + bdf};
  id.tokens = {bdf, l.GpuUuid(gpu), l.GpuSerial(gpu)};
  return id;
}

int IndexAfter(const std::string& name, std::string_view prefix) {
  if (name.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoi(name.substr(prefix.size()));
  } catch (...) {
    return -1;
  }
}

Identity Resolve(const std::string& truth, const SimNode& node) {
  const NodeLayout& l = node.model().layout();
  const size_t slash = truth.find('/');
  const std::string type = truth.substr(0, slash);
  const std::string name = slash == std::string::npos ? "" : truth.substr(slash + 1);
  Identity id;
  id.ids.push_back(truth);
  if (type == "gpu") {
    const int g = IndexAfter(name, "");
    if (g >= 0) return GpuIdentity(node, g);
  }
  if (type == "pcie") {
    std::string bdf;
    if (int g = IndexAfter(name, "gpu"); g >= 0 && static_cast<size_t>(g) < l.gpu_bdfs.size()) {
      bdf = l.gpu_bdfs[g];
      Identity gpu = GpuIdentity(node, g);  // NVML reports a GPU's link on the GPU
      id.ids.insert(id.ids.end(), gpu.ids.begin(), gpu.ids.end());
    }
    if (int n = IndexAfter(name, "nic"); n >= 0 && static_cast<size_t>(n) < l.nic_bdfs.size()) bdf = l.nic_bdfs[n];
    if (!bdf.empty()) {
      for (const std::string& b : {bdf, node.PcieParentOf(bdf)}) {
        if (b.empty()) continue;
        id.ids.push_back("pcie/" + NormalizeBdf(b));
        id.tokens.push_back(NormalizeBdf(b));
      }
    }
  }
  if (type == "ib") {
    if (int h = IndexAfter(name, "hca"); h >= 0 && static_cast<size_t>(h) < l.hca_names.size()) {
      id.ids = {"ib/" + l.hca_names[h] + "/1", "ib/" + l.hca_names[h]};
    }
  }
  if (type == "nvswitch") {
    if (int n = IndexAfter(name, ""); n >= 0 && static_cast<size_t>(n) < l.nvswitch_bdfs.size()) {
      const std::string bdf = NormalizeBdf(l.nvswitch_bdfs[n]);
      id.ids.push_back("nvswitch/" + bdf);
      id.tokens.push_back(bdf);
    }
  }
  return id;
}

bool Matches(const ComponentRef& c, const Identity& id) {
  const std::string cid = c.Id();
  for (const std::string& i : id.ids) {
    if (cid == i) return true;
  }
  for (const std::string& token : id.tokens) {
    if (NormalizeBdf(c.name) == token || c.name == token) return true;
    for (const char* key : {"bdf", "pci_bus_id", "uuid", "serial", "device_bdf", "gpu_bdf"}) {
      auto it = c.keys.find(key);
      if (it != c.keys.end() && !it->second.empty() && (it->second == token || NormalizeBdf(it->second) == token)) {
        return true;
      }
    }
  }
  return false;
}

// A truth without components is matched on its class alone.
bool NamesTheFaultyPart(const ComponentRef& c, const Truth& truth, const SimNode& node) {
  return truth.components.empty() || ComponentMatches(c, truth.components, node);
}

bool ClassAndComponent(const Diagnosis& d, const Truth& truth, const SimNode& node) {
  return d.fault_class == truth.fault_class && NamesTheFaultyPart(d.component, truth, node);
}

// This thread's CPU time (the agent's share of a tick, without the node's publishing).
int64_t ThreadCpuNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The first tick after `i` at which the agent has something due.
int64_t NextTick(const daemon::Agent& agent, int64_t i, int64_t mono0_ns, int64_t tick_ns) {
  const int64_t due = agent.NextDueNs() - mono0_ns;
  const int64_t at = due <= 0 ? 0 : (due + tick_ns - 1) / tick_ns;  // round up onto the grid
  return std::max(i + 1, at);
}

// Whether the agent's source `name` may poll at wall time `now_ns` (RunDue's test, from
// what the agent shows of it): due once `interval_ns` has passed since its last successful
// poll. A source not polled yet, or whose last poll failed (its retry back-off is the
// agent's own), counts as due; a source the agent does not have never is.
bool MayPoll(const std::vector<daemon::SourceStatus>& sources, std::string_view name, int64_t now_ns,
             int64_t interval_ns) {
  for (const daemon::SourceStatus& s : sources) {
    if (s.name != name) continue;
    return !s.up || !s.last_success_ns || now_ns - *s.last_success_ns >= interval_ns;
  }
  return false;
}

// What the node must rebuild before the agent's polls at this tick: the snapshots only a
// due source reads (the NVML state file, the BMC's sensor resources). The rest of the
// node is published at every visited tick.
SimPublish SnapshotsDue(const daemon::Agent& agent, const daemon::AgentConfig& config, int64_t now_ns) {
  const std::vector<daemon::SourceStatus> sources = agent.SourceStatuses();
  return SimPublish{.nvml = MayPoll(sources, "nvml", now_ns, config.nvml.interval_ns),
                    .bmc_sensors = MayPoll(sources, "redfish", now_ns, config.redfish.interval_ns)};
}

// The agent as `faultline agent` builds it (Agent::Create: the configured sources, the
// pipeline, the warm start), over a store the run throws away with its directory: no
// fsync per commit (NORMAL still survives the process dying) and no integrity check of
// a file created a moment ago. Thousands of commits a simulated day made the fsyncs most
// of a multi-day run's wall time. A topology file needs Agent::Create's own path.
Result<std::unique_ptr<daemon::Agent>> CreateSimAgent(const daemon::AgentConfig& config, const Clock& clock,
                                                      daemon::Logger& logger) {
  if (!config.sysfs.topology_file.empty()) return daemon::Agent::Create(config, clock, logger);
  StoreOptions disposable;
  disposable.synchronous = StoreOptions::Synchronous::kNormal;
  disposable.check_integrity_on_open = false;
  auto store = Store::Open(config.agent.store_path, disposable);
  if (!store.ok()) return store.status();
  std::unique_ptr<Topology> topology;
  auto sources = daemon::MakeConfiguredSources(config, config.agent.node, clock, **store, topology);
  if (!sources.ok()) return sources.status();
  return daemon::Agent::CreateWithStore(config, std::move(store).value(), std::move(sources).value(), clock, logger);
}

// A decision that was carried out or would have been (a dry run): what an operator sees
// happen. Held, withdrawn, refused, superseded and no-actuator ones were not.
bool Taken(policy::State s) {
  return s == policy::State::kDryRun || s == policy::State::kDecided || s == policy::State::kDone ||
         s == policy::State::kFailed;
}

// Decisions that disrupt, blame a part or a user: wrong on a healthy node whatever for.
bool ActsOnAHealthyNode(std::optional<actions::ActionClass> c) {
  using actions::ActionClass;
  return c == ActionClass::kCordon || c == ActionClass::kDrain || c == ActionClass::kResetGpu ||
         c == ActionClass::kRebootNode || c == ActionClass::kRmaBundle || c == ActionClass::kNotifyUser;
}

std::string Attr(const ActionRecord& r, const std::string& key) {
  auto it = r.attrs.find(key);
  return it == r.attrs.end() ? "" : it->second;
}

// The fault class of the diagnosis a decision is for: the head of its FaultKey
// ("<fault class>|<component id>", policy/identity.h).
std::optional<FaultClass> DecisionFaultClass(const ActionRecord& r) {
  const std::string fault = Attr(r, "fault");
  return ParseFaultClass(fault.substr(0, fault.find('|')));
}

std::string FormatSeconds(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace

DecisionScore ScoreDecisions(const std::vector<ActionRecord>& actions, const Truth& truth, int64_t epoch_ns) {
  // Rows in the order stored: the first taken row of each key is when it was taken.
  std::vector<const ActionRecord*> rows;
  for (const ActionRecord& r : actions) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ActionRecord* a, const ActionRecord* b) { return a->time_ns < b->time_ns; });
  DecisionScore score;
  std::set<std::string> counted;
  const bool healthy = truth.fault_class == FaultClass::kNone;
  for (const ActionRecord* r : rows) {
    const std::optional<policy::State> state = policy::ParseState(Attr(*r, "state"));
    const std::string key = Attr(*r, "key");
    if (!state || !Taken(*state) || key.empty() || !counted.insert(key).second) continue;
    ++score.taken;
    const double t = static_cast<double>(r->time_ns - epoch_ns) / 1e9;
    const std::optional<FaultClass> cls = DecisionFaultClass(*r);
    const std::optional<actions::ActionClass> action = actions::ParseActionClass(Attr(*r, "class"));
    const bool stated = std::any_of(truth.also.begin(), truth.also.end(),
                                    [&](const OtherIncident& o) { return cls == o.fault_class && t >= o.start_s; });
    const bool wrong = !stated && (healthy ? ActsOnAHealthyNode(action) : cls != truth.fault_class);
    if (wrong) {
      ++score.wrong;
      score.wrong_details.push_back("t=" + FormatSeconds(t) + "s " + Attr(*r, "class") + " for " + Attr(*r, "fault") +
                                    " (" + Attr(*r, "state") + (r->dry_run ? ", dry run)" : ")"));
    } else if (!healthy && cls == truth.fault_class && !score.first_correct_s) {
      score.first_correct_s = t;
    }
  }
  return score;
}

int CountFlaps(const std::vector<DiagnosisChange>& changes) {
  auto first = std::find_if(changes.begin(), changes.end(),
                            [](const DiagnosisChange& c) { return c.primary.fault_class != FaultClass::kNone; });
  return first == changes.end() ? 0 : static_cast<int>(changes.end() - first - 1);
}

uint64_t PhaseSeed(const std::string& scenario, int phase) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a of the name: stable across platforms and builds
  for (const unsigned char c : scenario) h = (h ^ c) * 0x100000001B3ULL;
  uint64_t z = h + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(phase + 1);  // SplitMix64's finalizer
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

bool ComponentMatches(const ComponentRef& c, const std::vector<std::string>& truth, const SimNode& node) {
  for (const std::string& t : truth) {
    if (Matches(c, Resolve(t, node))) return true;
  }
  return false;
}

bool IsHardwareAction(Action a) { return a == Action::kCordon || a == Action::kDrain || a == Action::kRma; }

bool IsHardwareCause(FaultClass c) {
  return c != FaultClass::kUserApplication && c != FaultClass::kWorkloadImbalance && c != FaultClass::kNone &&
         c != FaultClass::kDriverFault;
}

std::string DefaultFakeNvmlPath() {
  std::error_code ec;
#ifdef FAULTLINE_FAKE_NVML_PATH
  if (fs::exists(FAULTLINE_FAKE_NVML_PATH, ec)) return FAULTLINE_FAKE_NVML_PATH;
#endif
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path next_to = exe.parent_path() / "src/sim/fake_nvml/libnvidia-ml.so.1";
  return fs::exists(next_to, ec) ? next_to.string() : "";
}

std::string DefaultFakeAmdsmiPath() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const fs::path& p : {exe.parent_path() / "src/sim/fake_amdsmi/libamd_smi.so",
                            exe.parent_path().parent_path() / "src/sim/fake_amdsmi/libamd_smi.so",
                            exe.parent_path().parent_path().parent_path() / "src/sim/fake_amdsmi/libamd_smi.so"}) {
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}

daemon::AgentConfig SimAgentConfig(const SimNode& node, const LockstepOptions& o, const std::string& store) {
  daemon::AgentConfig c;
  c.agent.node = "sim-node";
  c.agent.store_path = store;
  c.agent.log_level = daemon::LogLevel::kWarn;
  c.agent.evaluate_interval_ns = Ns(o.fast_interval_s);
  c.kmsg.path = node.kmsg_path();
  c.kmsg.interval_ns = Ns(o.fast_interval_s);
  c.nvml.library_path = o.nvml_library;
  c.nvml.interval_ns = Ns(o.sample_interval_s);
  c.sysfs.root = node.sysfs_root();
  c.sysfs.interval_ns = Ns(o.sample_interval_s);
  c.ethernet.interval_ns = Ns(o.sample_interval_s);  // its root follows [sysfs] (docs/ethernet.md)
  if (node.model().scenario().node.amd()) {
    // An AMD node: its GPUs through the fake AMD SMI (or the amdgpu sysfs files alone).
    c.nvml.enabled = false;
    c.amd.enabled = true;
    c.amd.library_path = DefaultFakeAmdsmiPath();
    c.amd.use_library = node.model().scenario().node.amdsmi && !c.amd.library_path.empty();
    c.amd.interval_ns = Ns(o.sample_interval_s);
  }
  c.workload.file = node.workload_path();
  c.workload.interval_ns = Ns(o.fast_interval_s);
  if (!node.bmc_url().empty()) {
    c.redfish.url = node.bmc_url();
    c.redfish.user = node.bmc_user();
    c.redfish.password_file = node.bmc_password_file();
    c.redfish.ca_file = node.bmc_ca_file();
    c.redfish.interval_ns = Ns(o.redfish_interval_s);
    c.redfish.sweep_deadline_ns = Ns(std::max(1.0, o.redfish_interval_s * 0.8));
    // Events arrive on their own thread in real time; the lockstep reads the SEL by
    // polling so that a run is reproducible.
    c.redfish.events = false;
  }
  return c;
}

namespace {

// The run's options with the scenario's own agent schedule, when it states one.
LockstepOptions WithSchedule(LockstepOptions o, const NodeScenario& scenario) {
  if (scenario.agent) {
    o.tick_s = scenario.agent->tick_s;
    o.fast_interval_s = scenario.agent->fast_interval_s;
    o.sample_interval_s = scenario.agent->sample_interval_s;
    o.redfish_interval_s = scenario.agent->redfish_interval_s;
  }
  if (o.phase > 0) o.evaluate = daemon::Agent::DueEvaluation::kAsTheDaemon;
  return o;
}

// Every remediation row the run's agent stored (dry runs included).
Result<std::vector<ActionRecord>> StoredActions(daemon::Agent& agent) {
  RecordQuery q;
  q.node = agent.node();
  q.limit = 0;
  auto rows = agent.store().ListActions(q);
  if (!rows.ok()) return rows.status();
  std::vector<ActionRecord> out;
  out.reserve(rows->rows.size());
  for (auto& r : rows->rows) out.push_back(std::move(r.value));
  return out;
}

}  // namespace

Result<ScenarioRun> RunScenarioLockstep(const NodeScenario& scenario, const LockstepOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const LockstepOptions o = WithSchedule(options, scenario);
  if (o.nvml_library.empty()) return Status(StatusCode::kNotFound, "simulator: fake NVML library not found");
  // A fresh directory of the run's own (o.workdir holds other runs, maybe user files):
  // removed on every way out unless kept, after the node and the agent (declared later,
  // destroyed first) have closed their files.
  auto made = MakeUniqueDir(o.workdir, scenario.name);
  if (!made.ok()) return made.status();
  const std::string dir = *made;
  struct RemoveOnExit {
    RunDir dir;
    ~RemoveOnExit() { RemoveIfCreated(dir); }
  } cleanup{RunDir{dir, !o.keep_workdir}};
  FakeClock clock(kEpochNs, kUptimeNs);
  SimNodeOptions so{.workdir = dir, .time = {kEpochNs, kUptimeNs, 1.0}, .tick_s = o.tick_s};
  auto node = SimNode::Create(scenario, so);
  if (!node.ok()) return node.status();
  // The fake NVML library reads its state file from the environment at nvmlInit.
  ::setenv("FAKE_NVML_STATE", (*node)->nvml_state_path().c_str(), 1);
  // ... and the fake AMD SMI its own (an AMD node's; unset otherwise).
  if (const std::string amd = (*node)->amdsmi_state_path(); !amd.empty()) {
    ::setenv("FAKE_AMDSMI_STATE", amd.c_str(), 1);
  } else {
    ::unsetenv("FAKE_AMDSMI_STATE");
  }

  std::ostringstream discard;
  daemon::Logger logger(o.agent_log ? *o.agent_log : discard, daemon::LogLevel::kWarn, clock);
  daemon::AgentConfig config = SimAgentConfig(**node, o, dir + "/faultline.db");
  if (o.policy) config.policy = *o.policy;
  if (o.configure) o.configure(config);
  auto agent = CreateSimAgent(config, clock, logger);
  if (!agent.ok()) return agent.status();
  if (o.on_agent_created) o.on_agent_created(**agent, **node);
  if (o.phase > 0) (*agent)->PerturbSchedule(PhaseSeed(scenario.name, o.phase), o.phase_jitter, Ns(o.tick_s));

  ScenarioRun run;
  run.name = scenario.name;
  run.phase = o.phase;
  run.truth = scenario.truth;
  std::string last_signature;
  double tick_ms_sum = 0;
  int64_t ticks_evaluated = 0;
  const int64_t ticks = static_cast<int64_t>(scenario.duration_s / o.tick_s);
  const int64_t tick_ns = Ns(o.tick_s);
  const int64_t mono0_ns = clock.MonotonicNs();
  // Event-driven on the lockstep's tick grid: the loop visits only the ticks at which the
  // agent has a poll or an evaluation due, the first tick at or after Agent::NextDueNs().
  // A tick where nothing is due did nothing before but move the node, and the agent reads
  // the node only when it polls: the node is moved (its model still stepping every
  // tick_s) to each visited tick, so every poll sees what it saw at that time when every
  // tick was visited, and the results are the same, for a fraction of the work.
  for (int64_t i = 0, prev = 0; i <= ticks;
       prev = i, i = o.skip_idle_ticks ? NextTick(**agent, i, mono0_ns, tick_ns) : i + 1) {
    const double t = static_cast<double>(i) * o.tick_s;
    clock.Advance((i - prev) * tick_ns);
    ++run.ticks_visited;
    // Failures are counted in the node's stats.
    (void)(*node)->AdvanceTo(t, o.publish_when_read ? SnapshotsDue(**agent, config, clock.NowNs()) : SimPublish{});
    bool evaluated = false;
    const auto tick_start = std::chrono::steady_clock::now();
    const int64_t cpu_start = ThreadCpuNs();
    if (Status s = (*agent)->RunDue(&evaluated, o.evaluate); !s.ok()) return s;
    if (o.on_tick) o.on_tick(t, ThreadCpuNs() - cpu_start, **agent);
    if (!evaluated) continue;
    const double tick_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tick_start).count();
    tick_ms_sum += tick_ms;
    ++ticks_evaluated;
    run.agent_tick_ms_max = std::max(run.agent_tick_ms_max, tick_ms);
    const std::vector<Diagnosis> dx = (*agent)->LastDiagnoses();
    if (o.on_evaluation) o.on_evaluation(t, dx);
    if (dx.empty()) continue;
    const Diagnosis& primary = dx.front();
    const std::string sig = std::string(ToString(primary.fault_class)) + "|" + primary.component.Id() + "|" +
                            std::string(ToString(primary.action));
    if (sig != last_signature) {
      last_signature = sig;
      run.changes.push_back({t, primary});
    }
    // Counted from the fault's start: a right answer before it would be a guess (or a
    // scenario whose node was already faulty, which the run then does not credit).
    if (!run.first_correct_s && t >= scenario.truth.start_s && ClassAndComponent(primary, scenario.truth, **node)) {
      run.first_correct_s = t;
    }
    if (IsHardwareAction(primary.action)) {
      const bool wrong_cause = !IsHardwareCause(scenario.truth.fault_class);
      const bool wrong_part =
          primary.action == Action::kRma && !NamesTheFaultyPart(primary.component, scenario.truth, **node);
      if (wrong_cause || wrong_part) {
        std::ostringstream os;
        os << "t=" << t << "s " << ToString(primary.action) << " " << primary.component.Id() << " ("
           << ToString(primary.fault_class) << ")";
        if (run.wrong_hardware_actions.empty() ||
            run.wrong_hardware_actions.back().find(primary.component.Id()) == std::string::npos) {
          run.wrong_hardware_actions.push_back(os.str());
        }
      }
    }
  }
  run.agent_tick_ms_mean = ticks_evaluated ? tick_ms_sum / static_cast<double>(ticks_evaluated) : 0;
  run.final_diagnoses = (*agent)->LastDiagnoses();
  run.agent = (*agent)->stats();
  // The decisions up to the scenario's end, as the final answer (the store closes at Stop).
  auto actions = StoredActions(**agent);
  if (!actions.ok()) return actions.status();
  run.decisions = ScoreDecisions(*actions, scenario.truth, kEpochNs);
  run.flaps = CountFlaps(run.changes);
  if (Status s = (*agent)->Stop(); !s.ok()) return s;
  // The agent goes first: its Redfish client closes the connections it keeps alive, so
  // the mock BMC does not wait out their keep-alive timeout when the node stops.
  agent->reset();
  run.node = (*node)->stats();
  if (!run.final_diagnoses.empty()) {
    const Diagnosis& d = run.final_diagnoses.front();
    run.final_correct_class = d.fault_class == scenario.truth.fault_class;
    run.final_correct_component = NamesTheFaultyPart(d.component, scenario.truth, **node);
  }
  node->reset();
  if (o.keep_workdir) run.workdir = dir;
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace faultline::sim
