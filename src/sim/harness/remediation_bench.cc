#include "sim/harness/remediation_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

#include "core/clock.h"
#include "daemon/log.h"
#include "daemon/pipeline.h"
#include "daemon/remediation.h"
#include "sim/harness/workdir.h"
#include "store/store.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
using actions::ActionClass;

constexpr double kNsPerS = 1e9;

double SimSeconds(int64_t time_ns) { return static_cast<double>(time_ns - kSimEpochNs) / kNsPerS; }
int64_t SimNs(double s) { return kSimEpochNs + static_cast<int64_t>(std::llround(s * kNsPerS)); }

std::string Fixed(double v, int digits = 1) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(digits);
  os << v;
  return os.str();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The causes a facility fixes (the "physical causes: power, cooling, leak"),
// listed here from the fault taxonomy rather than taken from the policy's rules.
bool PhysicalCause(FaultClass c) {
  switch (c) {
    case FaultClass::kPowerSupply:
    case FaultClass::kPowerInsufficient:
    case FaultClass::kVoltageOutOfRange:
    case FaultClass::kThermalInlet:
    case FaultClass::kCoolingDegraded:
    case FaultClass::kCoolantLeak:
      return true;
    default:
      return false;
  }
}

// A hardware fault's recommended action, as platform requests.
std::set<ActionClass> ForAction(Action a) {
  switch (a) {
    case Action::kRma:
      return {ActionClass::kDrain, ActionClass::kRmaBundle};
    case Action::kResetGpu:
      return {ActionClass::kDrain, ActionClass::kResetGpu};
    case Action::kRebootNode:
      return {ActionClass::kDrain, ActionClass::kRebootNode};
    case Action::kDrain:
      return {ActionClass::kDrain};
    case Action::kCordon:
      return {ActionClass::kCordon};
    case Action::kFacilityTicket:
      return {ActionClass::kFacilityTicket};
    case Action::kNotifyUser:
      return {ActionClass::kNotifyUser};
    case Action::kReseatOrReplaceLink:
    case Action::kDriverUpgrade:
    case Action::kRestartJob:
      return {ActionClass::kWebhook};
    case Action::kMonitor:
    case Action::kNone:
      return {};
  }
  return {};
}

bool TakesNodeOut(Action a) {
  return a == Action::kRma || a == Action::kResetGpu || a == Action::kRebootNode || a == Action::kDrain ||
         a == Action::kCordon;
}

std::string ClassName(ActionClass c) { return std::string(actions::ToString(c)); }

std::string Describe(const JudgedApply& a) {
  return "t=" + Fixed(a.t) + "s " + ClassName(a.apply.action_class) + " for " +
         std::string(ToString(a.apply.fault_class)) + " " + a.apply.component.Id() + " (diagnosis " +
         std::to_string(a.apply.diagnosis_id) + ")";
}

// A request for the truth's fault: its diagnosis names the faulty part (the class may be a
// neighbour's: a remap failure first seen as an uncorrectable HBM error still drains the right
// node and returns the right GPU); a truth that names no part needs the class too.
bool ForTheFault(const JudgedApply& a, const Truth& t) {
  return a.right_fault || (a.right_part && !t.components.empty());
}

// The latest row of each decision key in a store's actions table.
struct LatestDecision {
  std::string key;
  std::optional<ActionClass> action_class;
  std::string state;
  std::string rule;
  std::string outcome;
  int64_t time_ns = 0;
  int64_t diagnosis_id = 0;
  std::string fault;
};

Result<std::vector<LatestDecision>> LatestDecisions(Store& store, const std::string& node) {
  RecordQuery q;
  q.node = node;
  q.limit = 0;
  auto rows = store.ListActions(q);
  if (!rows.ok()) return rows.status();
  std::map<std::string, LatestDecision> latest;
  for (const auto& row : rows->rows) {
    const auto& attrs = row.value.attrs;
    auto key = attrs.find("key");
    if (key == attrs.end()) continue;  // a resolution row, not a decision
    LatestDecision& d = latest[key->second];
    d.key = key->second;
    if (auto c = attrs.find("class"); c != attrs.end()) d.action_class = actions::ParseActionClass(c->second);
    if (auto s = attrs.find("state"); s != attrs.end()) d.state = s->second;
    if (auto r = attrs.find("rule"); r != attrs.end()) d.rule = r->second;
    if (auto f = attrs.find("fault"); f != attrs.end()) d.fault = f->second;
    d.outcome = row.value.outcome;
    d.time_ns = row.value.time_ns;
    d.diagnosis_id = row.value.diagnosis_id.value_or(0);
  }
  std::vector<LatestDecision> out;
  for (auto& [k, d] : latest) out.push_back(std::move(d));
  return out;
}

// A decision the policy meant to carry out (not refused, not a dry run, not closed by an operator).
bool Carried(const std::string& state) { return state != "refused" && state != "dry_run" && state != "resolved"; }

// What the run left in its store: the ledger and the stored primaries.
Status ReadRunStore(const std::string& path, const std::string& node,
                    const std::vector<std::pair<int64_t, double>>& stored_t, ScenarioRemediation& out,
                    std::vector<LatestDecision>& decisions) {
  StoreOptions ro;
  ro.read_only = true;
  auto store = Store::Open(path, ro);
  if (!store.ok()) return store.status();
  auto latest = LatestDecisions(**store, node);
  if (!latest.ok()) return latest.status();
  decisions = std::move(latest).value();
  RecordQuery q;
  q.node = node;
  q.limit = 0;
  auto rows = (*store)->ListDiagnoses(q);
  if (!rows.ok()) return rows.status();
  std::map<int64_t, double> when(stored_t.begin(), stored_t.end());
  for (auto& row : rows->rows) {
    auto it = when.find(row.id);
    // A row whose evaluation the run did not see (none expected): its time is unknown, so
    // it cannot be replayed in order.
    if (it == when.end()) continue;
    out.stored.push_back({row.id, it->second, std::move(row.value)});
  }
  std::sort(out.stored.begin(), out.stored.end(),
            [](const StoredDiagnosis& a, const StoredDiagnosis& b) { return a.id < b.id; });
  return (*store)->Close();
}

void Score(ScenarioRemediation& r, const std::vector<LatestDecision>& decisions) {
  const RemediationExpectation& e = r.expect;
  // Decisions: states, refusals, wrong disruptive ones.
  for (const LatestDecision& d : decisions) {
    ++r.states[d.state];
    const std::string cls = d.action_class ? ClassName(*d.action_class) : "?";
    if (d.state == "refused") r.refused.push_back(cls + " (" + d.rule + ")");
    if (d.state.rfind("held", 0) == 0 || d.state == "failed" || d.state == "decided") {
      r.notes.push_back(cls + " left " + d.state + " for " + d.fault + ": " + d.outcome);
    }
    if (!d.action_class || !actions::IsDisruptive(*d.action_class) || !Carried(d.state)) continue;
    const std::string what = "t=" + Fixed(SimSeconds(d.time_ns)) + "s " + cls + " " + d.state + " for " + d.fault +
                             " (diagnosis " + std::to_string(d.diagnosis_id) + ", rule " + d.rule + ")";
    if (!e.disruptive_allowed && e.disruptive_judged) {
      r.wrong_disruptive.push_back(what);
    } else if (!e.disruptive_allowed) {
      r.extra.push_back("not judged (truth states no action): " + what);
    }
  }
  // Requests of the platform: first correct, complete, duplicates, extras.
  std::set<ActionClass> got;
  const std::set<ActionClass> also_ok = e.also_ok;
  for (size_t i = 0; i < r.applies.size(); ++i) {
    const JudgedApply& a = r.applies[i];
    const ActionClass c = a.apply.action_class;
    if (!a.apply.error.empty()) continue;
    if (c == ActionClass::kResetGpu && !a.right_part && !r.truth.components.empty()) {
      r.wrong_disruptive.push_back("GPU reset of a part that is not the faulty one: " + Describe(a));
    }
    for (size_t j = 0; j < i; ++j) {
      const JudgedApply& b = r.applies[j];
      if (!b.apply.error.empty() || b.apply.action_class != c || b.apply.node != a.apply.node) continue;
      const bool same_fault =
          (b.apply.fault_class == a.apply.fault_class && b.apply.component.Id() == a.apply.component.Id()) ||
          (ForTheFault(a, r.truth) && ForTheFault(b, r.truth));
      if (same_fault) {
        r.duplicates.push_back(Describe(a) + ", again after " + Describe(b));
        break;
      }
    }
    const bool wanted = e.correct.count(c) > 0;
    if (!wanted && !also_ok.count(c) && !actions::IsDisruptive(c)) r.extra.push_back(Describe(a));
    if (!wanted || !ForTheFault(a, r.truth) || a.t < r.truth.start_s) continue;
    if (!r.first_correct_s) {
      r.first_correct_s = a.t;
      if (!a.right_fault)
        r.notes.push_back("first correct request made for another class on the faulty part: " + Describe(a));
    }
    got.insert(c);
    if (!r.complete_s && got.size() == e.correct.size()) r.complete_s = a.t;
  }
  // Why an expected class was never requested: what the diagnoses of the faulty part asked for.
  std::set<std::string> asked;
  for (const JudgedApply& a : r.applies) {
    if (ForTheFault(a, r.truth)) asked.insert(std::string(ToString(a.apply.recommended)));
  }
  std::string asked_text;
  for (const std::string& x : asked) asked_text += (asked_text.empty() ? "" : ", ") + x;
  for (ActionClass c : e.correct) {
    if (got.count(c) || !e.scored) continue;
    r.notes.push_back(ClassName(c) + " never requested for the fault" +
                      (asked_text.empty() ? std::string(" (no request for the faulty part at all)")
                                          : " (its diagnoses recommended: " + asked_text + ")"));
  }
}

}  // namespace

RemediationExpectation ExpectedRemediation(const Truth& t) {
  RemediationExpectation e;
  const FaultClass c = t.fault_class;
  const std::string action(ToString(t.action));
  if (c == FaultClass::kNone) {
    e.basis = "no fault: nothing";
    return e;
  }
  if (c == FaultClass::kUserApplication) {
    e.correct = {ActionClass::kNotifyUser};
    e.basis = "user program: notify_user, never disruptive";
    return e;
  }
  if (PhysicalCause(c)) {
    e.correct = {ActionClass::kFacilityTicket};
    e.also_ok = {ActionClass::kWebhook};
    if (t.action == Action::kRma) e.also_ok.insert(ActionClass::kRmaBundle);  // the failed PSU or fan itself
    e.disruptive_allowed = t.action == Action::kDrain || t.action == Action::kCordon;
    e.disruptive_judged = t.action != Action::kNone;
    e.basis = "physical cause: facility_ticket" +
              std::string(e.disruptive_allowed ? ", node taken out (" + action + ")"
                                               : (e.disruptive_judged ? ", never disruptive (" + action + ")"
                                                                      : "; truth states no action"));
    return e;
  }
  if (c == FaultClass::kWorkloadImbalance || c == FaultClass::kDriverFault) {
    e.correct = ForAction(t.action);
    e.also_ok = {ActionClass::kWebhook};
    e.scored = t.action != Action::kNone;
    e.basis = std::string(ToString(c)) + ": " + (e.scored ? action : "truth states no action") + ", never disruptive";
    return e;
  }
  // Hardware.
  e.correct = ForAction(t.action);
  e.also_ok = {ActionClass::kWebhook};
  e.disruptive_allowed = TakesNodeOut(t.action);
  if (t.action == Action::kNone) {
    e.scored = false;
    e.disruptive_judged = false;
    e.basis = "hardware, truth states no action: not scored";
    return e;
  }
  e.basis = "hardware, " + action;
  if (e.correct.empty()) e.basis += ": nothing";
  if (!e.disruptive_allowed) e.basis += ", never disruptive";
  return e;
}

bool WarrantsDrain(const RemediationExpectation& e) { return e.correct.count(ActionClass::kDrain) > 0; }

policy::PolicyConfig BenchPolicyConfig() {
  policy::PolicyConfig c;
  for (ActionClass a : actions::AllActionClasses()) c.enable.insert(a);
  c.platform = "none";
  c.webhook_url = "https://webhook.invalid/faultline-bench";
  return c;
}

Result<ScenarioRemediation> RunScenarioRemediation(const NodeScenario& scenario,
                                                   const RemediationBenchOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  ScenarioRemediation out;
  out.name = scenario.name;
  out.truth = scenario.truth;
  out.duration_s = scenario.duration_s;
  out.expect = ExpectedRemediation(scenario.truth);

  // What the hooks see during the run (the node lives only inside it).
  struct Capture {
    std::unique_ptr<SimPlatform> platform;
    const SimNode* node = nullptr;
    std::string agent_node;
    std::vector<int64_t> pending;                      // stored by the evaluation in progress
    std::vector<std::pair<int64_t, double>> stored_t;  // diagnosis row id -> scenario second
    std::map<std::string, bool> part_ok;               // component id -> names the truth's part
    size_t judged = 0;
  } cap;
  const Truth& truth = scenario.truth;
  auto right_part = [&](const ComponentRef& c) {
    if (truth.components.empty()) return true;
    const std::string id = c.Id();
    auto it = cap.part_ok.find(id);
    if (it != cap.part_ok.end() || cap.node == nullptr) return it != cap.part_ok.end() && it->second;
    return cap.part_ok[id] = ComponentMatches(c, truth.components, *cap.node);
  };
  auto judge_new = [&] {
    if (!cap.platform) return;
    const std::vector<PlatformApply> all = cap.platform->applies();
    for (size_t i = cap.judged; i < all.size(); ++i) {
      JudgedApply j{.t = SimSeconds(all[i].time_ns), .apply = all[i]};
      j.right_part = right_part(all[i].component);
      j.right_fault = j.right_part && all[i].fault_class == truth.fault_class;
      out.applies.push_back(std::move(j));
    }
    cap.judged = all.size();
  };

  LockstepOptions lo = options.lockstep;
  lo.policy = BenchPolicyConfig();
  lo.keep_workdir = true;  // the store is read afterwards; removed below unless asked to keep
  lo.on_agent_created = [&](daemon::Agent& agent, const SimNode& node) {
    cap.node = &node;
    cap.agent_node = agent.node();
    cap.platform = std::make_unique<SimPlatform>(SimPlatform::FleetNames(options.fleet, agent.node()));
    agent.UseActuators({cap.platform.get()}, cap.platform.get());
    agent.SetEvaluationListener([&cap](const daemon::EvaluateResult& r, int64_t) {
      if (r.diagnosis_stored) cap.pending.push_back(r.diagnosis_id);
    });
  };
  const auto user_hook = options.lockstep.on_evaluation;
  lo.on_evaluation = [&](double t, const std::vector<Diagnosis>& dx) {
    for (int64_t id : cap.pending) cap.stored_t.emplace_back(id, t);
    cap.pending.clear();
    for (const Diagnosis& d : dx) right_part(d.component);  // remembered for requests after the loop
    judge_new();
    if (user_hook) user_hook(t, dx);
  };
  auto run = RunScenarioLockstep(scenario, lo);
  if (!run.ok()) return run.status();
  cap.node = nullptr;                                                                 // gone with the run
  for (int64_t id : cap.pending) cap.stored_t.emplace_back(id, scenario.duration_s);  // the final evaluation
  judge_new();
  out.first_diagnosis_s = run->first_correct_s;

  std::vector<LatestDecision> decisions;
  Status read = ReadRunStore(run->workdir + "/faultline.db", cap.agent_node, cap.stored_t, out, decisions);
  if (options.lockstep.keep_workdir) {
    out.workdir = run->workdir;
  } else {
    std::error_code ec;
    fs::remove_all(run->workdir, ec);
  }
  if (!read.ok()) return read;
  Score(out, decisions);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

RemediationSummary SummarizeRemediation(const std::vector<ScenarioRemediation>& runs) {
  RemediationSummary s;
  std::vector<double> first, complete;
  for (const ScenarioRemediation& r : runs) {
    ++s.scenarios;
    s.wrong_disruptive += static_cast<int>(r.wrong_disruptive.size());
    s.duplicates += static_cast<int>(r.duplicates.size());
    if (r.expect.correct.empty() && r.expect.scored) {
      ++s.expect_nothing;
      if (r.applies.empty()) ++s.expect_nothing_quiet;
      continue;
    }
    if (!r.expect.scored) {
      s.not_scored.push_back(r.name + ": " + r.expect.basis);
      continue;
    }
    ++s.scored;
    if (!r.first_correct_s) {
      std::string why = r.first_diagnosis_s ? "diagnosed at t=" + Fixed(*r.first_diagnosis_s) + "s, no correct request"
                                            : "never diagnosed correctly";
      s.misses.push_back(r.name + ": " + why);
      continue;
    }
    ++s.correct;
    first.push_back(std::max(0.0, *r.first_correct_s - r.truth.start_s));
    if (r.first_diagnosis_s)
      s.policy_lag_max_s = std::max(s.policy_lag_max_s, *r.first_correct_s - *r.first_diagnosis_s);
    if (r.complete_s) {
      ++s.complete;
      complete.push_back(std::max(0.0, *r.complete_s - r.truth.start_s));
    }
  }
  s.first_correct_median_s = Median(first);
  s.first_correct_max_s = first.empty() ? 0 : *std::max_element(first.begin(), first.end());
  s.complete_median_s = Median(complete);
  s.complete_max_s = complete.empty() ? 0 : *std::max_element(complete.begin(), complete.end());
  return s;
}

namespace {

// One faulting node of the storm: its own store and the agent's remediation step over it.
struct StormNode {
  std::string name;
  double offset_s = 0;
  std::unique_ptr<Store> store;
  std::unique_ptr<daemon::Remediation> step;
  size_t next = 0;  // next replayed row
};

Diagnosis Shifted(Diagnosis d, int64_t by_ns) {
  if (d.first_ns != 0) d.first_ns += by_ns;
  if (d.last_ns != 0) d.last_ns += by_ns;
  return d;
}

int MaxInWindow(std::vector<double> times, double window_s) {
  std::sort(times.begin(), times.end());
  int best = 0;
  size_t lo = 0;
  for (size_t hi = 0; hi < times.size(); ++hi) {
    while (times[hi] - times[lo] > window_s) ++lo;
    best = std::max(best, static_cast<int>(hi - lo + 1));
  }
  return best;
}

}  // namespace

Result<StormReport> RunStorm(const std::string& source, double onset_s, const std::vector<StoredDiagnosis>& rows,
                             const StormOptions& o) {
  if (o.fleet == 0) return Status(StatusCode::kInvalidArgument, "storm: the fleet needs at least one node");
  if (!(o.fraction > 0 && o.fraction <= 1))
    return Status(StatusCode::kInvalidArgument, "storm: fraction not in (0, 1]");
  if (!(o.hours > 0) || !(o.tick_s > 0) || o.spread_s < 0) {
    return Status(StatusCode::kInvalidArgument, "storm: hours and tick must be positive, spread not negative");
  }
  if (rows.empty()) return Status(StatusCode::kInvalidArgument, "storm: no stored diagnoses to replay from " + source);
  const auto wall0 = std::chrono::steady_clock::now();
  auto made = MakeUniqueDir(o.workdir, "storm");
  if (!made.ok()) return made.status();
  struct RemoveOnExit {
    RunDir dir;
    ~RemoveOnExit() { RemoveIfCreated(dir); }
  } cleanup{RunDir{*made, !o.keep}};

  StormReport rep;
  rep.source = source;
  rep.fleet = o.fleet;
  rep.limit = policy::BreakerLimit(o.policy, o.fleet);
  rep.window_s = static_cast<double>(o.policy.breaker_window_ns) / kNsPerS;
  rep.hours = o.hours;
  rep.spread_s = o.spread_s;
  if (o.keep) rep.workdir = *made;
  const std::vector<std::string> names = SimPlatform::FleetNames(o.fleet);
  SimPlatform platform(names);
  std::mt19937_64 rng(o.seed);
  std::vector<std::string> pick = names;
  std::shuffle(pick.begin(), pick.end(), rng);
  rep.faulting =
      std::clamp<size_t>(static_cast<size_t>(std::llround(o.fraction * static_cast<double>(o.fleet))), 1, o.fleet);
  pick.resize(rep.faulting);

  FakeClock log_clock(kSimEpochNs);
  std::ostringstream discard;
  daemon::Logger logger(discard, daemon::LogLevel::kWarn, log_clock);
  std::uniform_real_distribution<double> spread(0, o.spread_s);
  std::vector<StormNode> nodes;
  for (const std::string& name : pick) {
    StormNode n;
    n.name = name;
    n.offset_s = o.spread_s > 0 ? spread(rng) : 0;
    auto store = Store::Open(*made + "/" + name + ".db");
    if (!store.ok()) return store.status();
    n.store = std::move(store).value();
    n.step = std::make_unique<daemon::Remediation>(o.policy, *n.store, name, std::vector<actions::Actuator*>{&platform},
                                                   &platform, logger);
    nodes.push_back(std::move(n));
  }

  // Storm time: seconds after the source's onset; node k replays row r at r.t - onset + offset_k.
  double t_first = 0;
  for (const StoredDiagnosis& r : rows) t_first = std::min(t_first, r.t - onset_s);
  const double t_end = o.hours * 3600;
  std::vector<size_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0);
  for (double t = std::floor(t_first / o.tick_s) * o.tick_s; t <= t_end + 1e-9; t += o.tick_s) {
    std::shuffle(order.begin(), order.end(), rng);  // interleaved: no node always first
    for (size_t k : order) {
      StormNode& n = nodes[k];
      const int64_t now_ns = SimNs(onset_s + t);
      bool fed = false;
      while (n.next < rows.size() && rows[n.next].t - onset_s + n.offset_s <= t) {
        const StoredDiagnosis& r = rows[n.next++];
        const Diagnosis d = Shifted(r.diagnosis, static_cast<int64_t>(std::llround(n.offset_s * kNsPerS)));
        auto id = n.store->PutDiagnosis(n.name, d, now_ns);
        if (!id.ok()) return id.status();
        ++rep.replayed_rows;
        daemon::EvaluateResult er{.diagnosis_stored = true, .diagnosis_id = *id, .diagnoses = {d}};
        n.step->AfterEvaluation(er, now_ns);
        fed = true;
      }
      if (!fed) n.step->AfterEvaluation(daemon::EvaluateResult{}, now_ns);  // an evaluation, nothing new
    }
  }

  for (const PlatformApply& a : platform.applies()) {
    if (a.action_class == ActionClass::kCordon || a.action_class == ActionClass::kDrain) {
      ++rep.drain_requests;
    } else {
      ++rep.other_requests[ClassName(a.action_class)];
    }
  }
  for (const std::string& name : names) {
    auto st = platform.node(name);
    if (!st || st->out == SimNodeState::Out::kIn || st->owner != "faultline") continue;
    ++rep.taken_out;
    rep.take_out_s.push_back(SimSeconds(st->since_ns) - onset_s);
  }
  std::sort(rep.take_out_s.begin(), rep.take_out_s.end());
  rep.max_in_window = MaxInWindow(rep.take_out_s, rep.window_s);
  for (double s : rep.take_out_s) rep.taken_out_first_window += s < rep.window_s ? 1 : 0;
  for (StormNode& n : nodes) {
    auto latest = LatestDecisions(*n.store, n.name);
    if (!latest.ok()) return latest.status();
    bool held = false;
    for (const LatestDecision& d : *latest) {
      if (!d.action_class || (*d.action_class != ActionClass::kDrain && *d.action_class != ActionClass::kCordon))
        continue;
      ++rep.states[d.state];
      if (d.state == "held_by_breaker") {
        held = true;
        if (rep.sample_hold.empty()) rep.sample_hold = d.outcome;
      }
    }
    auto st = platform.node(n.name);
    const bool out = st && st->out != SimNodeState::Out::kIn;
    if (!out) ++(held ? rep.held_by_breaker : rep.not_out_other);
  }
  for (StormNode& n : nodes) {
    n.step.reset();
    (void)n.store->Close();
  }
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return rep;
}

}  // namespace faultline::sim
