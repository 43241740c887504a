#include "daemon/agent.h"

#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "daemon/fleet_publisher.h"
#include "daemon/sources.h"
#include "store/store.h"

namespace faultline::daemon {

struct Agent::SourceState {
  std::unique_ptr<AgentSource> source;
  int64_t interval_ns = 0;
  int64_t backoff_ns = 0;  // current retry delay while failing
  bool failing = false;
  std::optional<int64_t> last_poll_mono_ns;  // RunDue's schedule
  // For SourceStatuses (under the agent's mu_).
  uint64_t polls = 0;
  uint64_t errors = 0;
  std::optional<int64_t> last_success_ns;
  std::string last_error;                       // of the last failed poll
  std::optional<int64_t> poll_started_mono_ns;  // while a poll is in flight: when it began
  // A polled batch the store refused: retried before the source is polled again.
  std::optional<SourceBatch> unstored;
  bool holding = false;  // `unstored` is set, as mu_ sees it (Judge reads it from another thread)
  // PerturbSchedule (the simulator's real-time-faithful runs): the extra delay before the
  // next RunDue poll, the fraction of the interval it is drawn from, the draws' state.
  int64_t jitter_ns = 0;
  double jitter_fraction = 0;
  int64_t jitter_quantum_ns = 0;
  uint64_t rng = 0;
  // RunDue's wait after the last poll: the interval (or retry back-off), plus the jitter.
  int64_t Wait() const { return (failing ? backoff_ns : interval_ns) + jitter_ns; }
};

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

Result<std::unique_ptr<Agent>> Agent::Create(const AgentConfig& config, const Clock& clock, Logger& logger) {
  const std::string node = config.agent.node.empty() ? HostName() : config.agent.node;
  auto store = Store::Open(config.agent.store_path);
  if (!store.ok()) return store.status();
  std::unique_ptr<Topology> topology;
  auto sources = MakeConfiguredSources(config, node, clock, **store, topology);
  if (!sources.ok()) return sources.status();
  std::unique_ptr<Agent> agent(new Agent(config, node, std::move(store).value(), std::move(sources).value(),
                                         std::move(topology), clock, logger));
  return Finish(std::move(agent));
}

Result<std::unique_ptr<Agent>> Agent::CreateWithSources(const AgentConfig& config,
                                                        std::vector<std::unique_ptr<AgentSource>> sources,
                                                        const Clock& clock, Logger& logger) {
  auto store = Store::Open(config.agent.store_path);
  if (!store.ok()) return store.status();
  return CreateWithStore(config, std::move(store).value(), std::move(sources), clock, logger);
}

Result<std::unique_ptr<Agent>> Agent::CreateWithStore(const AgentConfig& config, std::unique_ptr<Store> store,
                                                      std::vector<std::unique_ptr<AgentSource>> sources,
                                                      const Clock& clock, Logger& logger) {
  if (store == nullptr) return Status(StatusCode::kInvalidArgument, "agent: no store");
  const std::string node = config.agent.node.empty() ? HostName() : config.agent.node;
  std::unique_ptr<Agent> agent(new Agent(config, node, std::move(store), std::move(sources), nullptr, clock, logger));
  return Finish(std::move(agent));
}

Result<std::unique_ptr<Agent>> Agent::Finish(std::unique_ptr<Agent> agent) {
  auto remediation = Remediation::Create(agent->config_.policy, agent->store_, agent->node_, agent->logger_);
  if (!remediation.ok()) return remediation.status();
  agent->remediation_ = std::move(remediation).value();
  AssistantSection notes = agent->config_.assistant;
  if (notes.index_dir.empty()) notes.index_dir = agent->config_.agent.store_path + ".kb-index";
  agent->notes_ = std::make_unique<IncidentNotes>(notes, *agent->store_, agent->node_, agent->clock_, agent->logger_);
  if (agent->config_.fleet.enabled) {
    agent->fleet_ = std::make_unique<FleetPublisher>(
        *agent->store_, FleetPublisherOptionsFor(agent->config_.fleet, agent->node_), agent->clock_, &agent->logger_);
    // The fleet's verdicts come back on the publisher's connection and thread; the policy
    // reads them from the store (docs/remediation.md "Shared causes").
    agent->fleet_links_ = std::make_unique<FleetLinks>(
        *agent->store_, FleetLinksOptions{.site = agent->config_.fleet.site, .node = agent->node_}, agent->clock_,
        &agent->logger_);
    agent->fleet_->UseFleetLinks(agent->fleet_links_.get());
    agent->remediation_->UseFleetVerdicts(agent->fleet_links_.get());
  }
  if (Status s = agent->pipeline_->WarmStart(agent->clock_.NowNs()); !s.ok()) return s;
  agent->LoadSight();
  return agent;
}

void Agent::UseActuators(std::vector<actions::Actuator*> actuators, actions::FleetView* fleet) {
  remediation_ =
      std::make_unique<Remediation>(config_.policy, store_, node_, std::move(actuators), fleet, logger_);
  if (fleet_links_) remediation_->UseFleetVerdicts(fleet_links_.get());
}

Agent::Agent(const AgentConfig& config, std::string node, std::unique_ptr<Store> store,
             std::vector<std::unique_ptr<AgentSource>> sources, std::unique_ptr<Topology> topology, const Clock& clock,
             Logger& logger)
    : config_(config),
      node_(std::move(node)),
      clock_(clock),
      logger_(logger),
      topology_(std::move(topology)),
      store_(std::move(store)) {
  pipeline_ = std::make_unique<Pipeline>(*store_, node_, PipelineOptionsFor(config), topology_.get());
  for (auto& s : sources) {
    auto state = std::make_unique<SourceState>();
    state->interval_ns = IntervalFor(*s);
    state->source = std::move(s);
    sources_.push_back(std::move(state));
  }
}

Agent::~Agent() { (void)Stop(); }

int64_t Agent::PollBudget(const SourceState& s) const {
  // A Redfish sweep gets its own (long) budget; the others must finish within an interval.
  return s.source->name() == "redfish" ? config_.redfish.sweep_deadline_ns : s.interval_ns;
}

int64_t Agent::IntervalFor(const AgentSource& s) const {
  const std::string name = s.name();
  if (name == "kmsg") return config_.kmsg.interval_ns;
  if (name == "nvml") return config_.nvml.interval_ns;
  if (name == "dcgm_exporter") return config_.dcgm_exporter.interval_ns;
  if (name == "redfish") return config_.redfish.interval_ns;
  if (name == "sysfs") return config_.sysfs.interval_ns;
  if (name == "ethernet") return config_.ethernet.interval_ns;
  if (name == "amd") return config_.amd.interval_ns;
  return config_.workload.interval_ns;
}

void Agent::PollOne(SourceState& s) {
  // The held batch first: until it is stored the source stays where it is (its position
  // is just past the held batch), so nothing it reads can be lost behind it.
  if (s.unstored && !StoreBatch(s, *s.unstored)) return;
  const int64_t started = clock_.MonotonicNs();
  {
    std::lock_guard<std::mutex> lock(mu_);  // a poll that never returns counts against sight (Judge)
    s.poll_started_mono_ns = started;
  }
  auto batch = s.source->Poll(started + PollBudget(s));
  std::unique_lock<std::mutex> lock(mu_);
  s.poll_started_mono_ns.reset();
  ++stats_.polls;
  ++s.polls;
  if (!batch.ok()) {
    ++stats_.poll_failures;
    ++s.errors;
    s.last_error = batch.status().ToString();
    s.backoff_ns = s.failing ? std::min(s.backoff_ns * 2, config_.agent.max_backoff_ns) : s.interval_ns;
    if (!s.failing) {
      logger_.Warn("source " + s.source->name() + " unavailable: " + batch.status().ToString() + " (retrying)");
    } else {
      logger_.Debug("source " + s.source->name() + " still unavailable: " + batch.status().ToString());
    }
    s.failing = true;
    return;
  }
  if (s.failing) logger_.Info("source " + s.source->name() + " recovered");
  s.failing = false;
  s.last_success_ns = clock_.NowNs();
  s.backoff_ns = 0;
  warnings_.Report(s.source->name(), batch->warnings, clock_.MonotonicNs());
  lock.unlock();  // the pipeline serialises itself; keep the agent lock short
  if (!StoreBatch(s, *batch)) s.unstored = std::move(batch).value();
}

bool Agent::StoreBatch(SourceState& s, SourceBatch& batch) {
  size_t critical = 0;
  auto stats = pipeline_->TryIngest(s.source->layer(), batch, &critical);
  if (stats.ok() && critical > 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.critical_batches;
    }
    RequestEvaluation();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!stats.ok()) {
    ++stats_.store_failures;
    s.holding = true;
    if (!s.unstored) {  // a new failure; retries of the same batch log at debug
      logger_.Error("store: " + stats.status().ToString() + "; holding " + std::to_string(batch.observations.size()) +
                    " observations of source " + s.source->name() + " and pausing it until they are stored");
      if (first_error_.ok()) first_error_ = stats.status();
    } else {
      logger_.Debug("store: still failing for source " + s.source->name() + ": " + stats.status().ToString());
    }
    return false;
  }
  s.holding = false;
  stats_.observations_inserted += stats->inserted;
  stats_.observations_duplicate += stats->duplicates;
  if (s.unstored) {  // `batch` is the held one: the last use of it is above
    logger_.Info("store: source " + s.source->name() + "'s held batch stored; the source resumes");
    s.unstored.reset();
  }
  return true;
}

void Agent::RequestEvaluation() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (evaluation_requested_) return;  // one is pending already: it will see this batch too
    evaluation_requested_ = true;
  }
  evaluate_wake_.notify_one();
}

void Agent::SetEvaluationListener(EvaluationListener listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

Status Agent::EvaluateNow(bool record_sight) {
  const int64_t started = clock_.MonotonicNs();
  Judgement judgement = JudgeSources();
  // No source has read the node: a "none" now would be the silence of failing sources.
  const EvaluateOptions options{.may_store_none = sources_.empty() || judgement.any_sees};
  auto result = pipeline_->Evaluate(clock_.NowNs(), options);
  if (record_sight) RecordSight(std::move(judgement), clock_.NowNs());
  const int64_t took = clock_.MonotonicNs() - started;
  EvaluationListener listener;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listener = listener_;
  }
  if (result.ok() && listener) listener(*result, clock_.MonotonicNs());
  // Its rows are committed: the policy may act on the new diagnosis (never fatal).
  // (No remediation when Create failed before building it: the destructor's Stop runs this.)
  if (result.ok() && remediation_) remediation_->AfterEvaluation(*result, clock_.NowNs());
  if (result.ok() && notes_) notes_->AfterEvaluation(*result, clock_.NowNs());
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.evaluations;
  stats_.evaluation_latency.Observe(took);
  if (remediation_) {
    stats_.policy_decisions = remediation_->stats().decisions_stored;
    stats_.policy_errors = remediation_->stats().errors;
  }
  if (notes_) stats_.incident_notes = notes_->notes_written();
  if (result.ok() && result->none_withheld) ++stats_.nones_withheld;
  if (!result.ok()) {
    logger_.Error("evaluate: " + result.status().ToString());
    return result.status();
  }
  stats_.findings_stored += result->findings_stored;
  if (result->diagnosis_stored) {
    ++stats_.diagnoses_stored;
    const Diagnosis& d = result->diagnoses.front();
    logger_.Info("diagnosis: " + std::string(ToString(d.fault_class)) + " on " + d.component.Id() + " -> " +
                 std::string(ToString(d.action)) + ": " + d.summary);
  }
  last_diagnoses_ = std::move(result->diagnoses);
  return Status::Ok();
}

Status Agent::RunOnce() {
  for (auto& s : sources_) PollOne(*s);
  if (Status st = EvaluateNow(); !st.ok()) return st;
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

Status Agent::RunDue(bool* evaluated, DueEvaluation when) {
  const int64_t now = clock_.MonotonicNs();
  bool polled = false;
  for (auto& s : sources_) {
    if (s->last_poll_mono_ns && now - *s->last_poll_mono_ns < s->Wait()) continue;
    s->last_poll_mono_ns = now;
    DrawJitter(*s);
    PollOne(*s);
    polled = true;
  }
  bool requested = false;  // a stored batch held a critical observation (StoreBatch)
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(requested, evaluation_requested_);
    if (requested) ++stats_.evaluations_on_demand;
  }
  const bool due = !last_due_evaluation_ns_ || now - *last_due_evaluation_ns_ >= config_.agent.evaluate_interval_ns;
  const bool evaluate = due || requested || (polled && when == DueEvaluation::kAfterEveryPoll);
  if (evaluated) *evaluated = evaluate;
  if (evaluate) {
    last_due_evaluation_ns_ = now;
    if (Status st = EvaluateNow(); !st.ok()) return st;
    ApplyRetentionWhenDue();
  }
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

int64_t Agent::NextDueNs() const {
  // Mirrors RunDue's tests: a source is due `wait` after its last poll, the evaluation
  // `evaluate_interval` after the last one; never polled or evaluated means due now.
  const int64_t now = clock_.MonotonicNs();
  if (!last_due_evaluation_ns_) return now;
  int64_t next = *last_due_evaluation_ns_ + config_.agent.evaluate_interval_ns;
  for (const auto& s : sources_) {
    if (!s->last_poll_mono_ns) return now;
    next = std::min(next, *s->last_poll_mono_ns + s->Wait());
  }
  return std::max(next, now);
}

namespace {

// SplitMix64: a tiny, well-mixed generator whose sequence is the same on every platform
// (std:: distributions are not), so a perturbed schedule is reproducible from its seed.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1).
double NextUnit(uint64_t& state) { return static_cast<double>(NextRandom(state) >> 11) * 0x1.0p-53; }

uint64_t NameHash(const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a
  for (const unsigned char c : name) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

}  // namespace

void Agent::PerturbSchedule(uint64_t seed, double jitter_fraction, int64_t quantum_ns) {
  const int64_t now = clock_.MonotonicNs();
  for (auto& s : sources_) {
    // Each source's draws depend on its name only, not on which other sources exist.
    s->rng = seed ^ NameHash(s->source->name());
    s->jitter_fraction = std::max(0.0, jitter_fraction);
    s->jitter_quantum_ns = std::max<int64_t>(0, quantum_ns);
    // The phase: a slot of the quantum grid inside one interval, each equally likely.
    const int64_t q = s->jitter_quantum_ns > 0 ? s->jitter_quantum_ns : 1;
    const int64_t slots = std::max<int64_t>(1, (s->interval_ns + q - 1) / q);
    const int64_t phase = std::min(static_cast<int64_t>(NextUnit(s->rng) * static_cast<double>(slots)), slots - 1) * q;
    // As if polled an interval before `now + phase`: the first poll lands at the phase.
    s->jitter_ns = 0;
    s->last_poll_mono_ns = now + std::min(phase, s->interval_ns - 1) - s->interval_ns;
  }
}

void Agent::DrawJitter(SourceState& s) {
  if (s.jitter_fraction <= 0) return;
  const double j = NextUnit(s.rng) * s.jitter_fraction * static_cast<double>(s.interval_ns);
  // Rounded to the nearest point of the grid (the lockstep's tick): the mean stays the
  // drawn one's, where rounding up would add half a tick to every poll.
  const int64_t q = s.jitter_quantum_ns;
  s.jitter_ns = q > 0 ? static_cast<int64_t>(std::llround(j / static_cast<double>(q))) * q : static_cast<int64_t>(j);
}

bool Agent::WaitFor(int64_t ns) {
  std::unique_lock<std::mutex> lock(mu_);
  wake_.wait_for(lock, std::chrono::nanoseconds(ns), [this] { return stop_requested_; });
  return !stop_requested_;
}

bool Agent::WaitForNextPoll(SourceState& s) {
  // A failing source or one holding a refused batch keeps its back-off / interval: data
  // arriving must not turn its retries into a busy loop.
  if (!s.failing && !s.unstored && s.source->CanWaitForData()) {
    s.source->WaitForData(s.interval_ns);  // returns at Cancel(), which RequestStop calls
    std::lock_guard<std::mutex> lock(mu_);
    return !stop_requested_;
  }
  return WaitFor(s.failing ? s.backoff_ns : s.interval_ns);
}

namespace {
// Names the calling thread "fl-<what>" (15 bytes at most), so `top -H`, perf and the
// agent-rest bench can tell where an idle agent's time goes.
void NameThisThread(const std::string& what) {
  const std::string name = ("fl-" + what).substr(0, 15);
  (void)pthread_setname_np(pthread_self(), name.c_str());
}
}  // namespace

void Agent::SourceLoop(SourceState& s) {
  NameThisThread(s.source->name());
  do {
    PollOne(s);
  } while (WaitForNextPoll(s));
  s.source->Shutdown();
}

void Agent::EvaluateLoop() {
  NameThisThread("evaluate");
  last_retention_ns_ = clock_.MonotonicNs();  // the first an interval after the start
  for (;;) {
    // Sleep until the evaluate interval has passed since the last evaluation, an
    // on-demand request (a critical observation was stored), or stop. A request made
    // while an evaluation runs stays pending and is served right after it: at most one
    // in flight and one pending, however many critical batches arrive.
    bool on_demand = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      evaluate_wake_.wait_for(lock, std::chrono::nanoseconds(config_.agent.evaluate_interval_ns),
                              [this] { return stop_requested_ || evaluation_requested_; });
      if (stop_requested_) break;
      on_demand = evaluation_requested_;
      evaluation_requested_ = false;
      if (on_demand) ++stats_.evaluations_on_demand;
    }
    (void)EvaluateNow();
    ApplyRetentionWhenDue();
  }
}

void Agent::ApplyRetentionWhenDue() {
  const int64_t now = clock_.MonotonicNs();
  if (!last_retention_ns_) last_retention_ns_ = now;  // RunDue: an interval after its first evaluation
  if (now - *last_retention_ns_ < config_.agent.retention_interval_ns) return;
  last_retention_ns_ = now;
  ApplyRetention();
}

void TuneAllocatorForLongRun() { (void)::mallopt(M_ARENA_MAX, 2); }

void Agent::ApplyRetention() {
  // Store limits (age 30 d, size 2 GiB) are the store's defaults (store/store.h).
  auto r = store_->ApplyRetention(clock_.NowNs());
  // Hourly, with the store's pages freed: hand the allocator's free pages back to the
  // system (free() returns only the top of a heap; what a burst left in the middle of
  // one would otherwise count in the agent's RSS for good).
  (void)::malloc_trim(0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.retention_runs;
  }
  if (!r.ok()) {
    logger_.Warn("store retention: " + r.status().ToString());
    return;
  }
  logger_.Debug("store retention: " + std::to_string(r->observations_deleted) + " observations and " +
                std::to_string(r->records_deleted) + " records dropped");
}

void Agent::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_ || stopped_) return;
  running_ = true;
  logger_.Info("agent for node " + node_ + ": " + std::to_string(sources_.size()) + " sources");
  // The daemon's actions run on their own worker, so a slow webhook or API server never
  // holds the next diagnosis; RunOnce / RunDue (tests, the simulator) stay synchronous.
  if (remediation_) {
    if (Status s = remediation_->StartWorker(); !s.ok()) logger_.Warn(s.ToString() + "; actions run inline");
  }
  for (auto& s : sources_) threads_.emplace_back([this, state = s.get()] { SourceLoop(*state); });
  threads_.emplace_back([this] { EvaluateLoop(); });
  if (fleet_) fleet_->Start();
}

void Agent::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  evaluate_wake_.notify_all();
  for (auto& s : sources_) s->source->Cancel();
}

Status Agent::Stop() {
  bool was_running = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return first_error_;
    was_running = running_;
  }
  RequestStop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  if (fleet_) fleet_->Stop();  // before the store closes under it
  // The model's worker too (its request in flight cancelled); the last evaluation below
  // queues no investigation.
  if (notes_) notes_->StopInvestigations();
  // Threads shut their own source down; without them (RunOnce) it happens here.
  if (!was_running) {
    for (auto& s : sources_) s->source->Shutdown();
  }
  for (auto& s : sources_) {
    if (s->unstored) {
      logger_.Warn("store: " + std::to_string(s->unstored->observations.size()) + " held observations of source " +
                   s->source->name() + " were never stored; a source with a cursor reads them again at the next start");
    }
  }
  Status eval = EvaluateNow(/*record_sight=*/false);
  if (remediation_) {
    remediation_->Stop();  // what the last evaluation queued, never past its deadline for a stalled actuator
    std::lock_guard<std::mutex> lock(mu_);
    stats_.policy_decisions = remediation_->stats().decisions_stored;
    stats_.policy_errors = remediation_->stats().errors;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    warnings_.Flush();  // repeats counted since their last line are not lost at stop
  }
  Status closed = store_->Close();
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  running_ = false;
  logger_.Info("agent stopped");
  if (first_error_.ok() && !eval.ok()) first_error_ = eval;
  if (first_error_.ok() && !closed.ok()) first_error_ = closed;
  return first_error_;
}

Status Agent::RunFor(std::chrono::nanoseconds duration) {
  Start();
  WaitFor(duration.count());
  return Stop();
}

PipelineStats Agent::pipeline_stats() const {
  // pipeline_ is set at construction, before any thread reads it; Pipeline locks itself.
  return pipeline_ != nullptr ? pipeline_->stats() : PipelineStats{};
}

AgentStats Agent::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  AgentStats out = stats_;
  if (notes_) out.investigations = notes_->investigation_stats();  // live: its worker runs on its own
  if (remediation_) out.remediation = remediation_->stats();       // likewise
  return out;
}

std::vector<SourceStatus> Agent::SourceStatuses() const {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_.MonotonicNs();
  std::vector<SourceStatus> out;
  for (const auto& s : sources_) {
    std::string why;
    const bool failing = Judge(*s, now, &why) == Standing::kFails;
    out.push_back(SourceStatus{.name = s->source->name(),
                               .layer = s->source->layer(),
                               .up = s->polls > 0 && !s->failing,
                               .polls = s->polls,
                               .errors = s->errors,
                               .last_success_ns = s->last_success_ns,
                               .failing = failing,
                               .error = std::move(why)});
  }
  return out;
}

std::vector<Diagnosis> Agent::LastDiagnoses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_diagnoses_;
}

namespace {

constexpr size_t kMaxErrorBytes = 240;  // a source's error in the stored state and the API

std::string Seconds(int64_t ns) { return std::to_string(ns / 1'000'000'000) + " s"; }

}  // namespace

Agent::Standing Agent::Judge(const SourceState& s, int64_t now_mono_ns, std::string* why) const {
  if (s.polls > 0 && s.failing) {
    *why = s.last_error.substr(0, kMaxErrorBytes);
    return Standing::kFails;
  }
  // Read but not stored: the detectors never saw it (the source is not polled meanwhile).
  if (s.holding) {
    *why = "its last batch is held: the store refuses it";
    return Standing::kFails;
  }
  // A poll that never returns fails nothing, yet delivers nothing either. The time between
  // polls is no measure: a quiet kernel log waits for input up to 30 s, by design.
  const int64_t in_flight = s.poll_started_mono_ns ? now_mono_ns - *s.poll_started_mono_ns : 0;
  if (in_flight > kBlindAfterIntervals * std::max(s.interval_ns, PollBudget(s))) {
    *why = "a poll has not returned for " + Seconds(in_flight);
    return Standing::kFails;
  }
  why->clear();
  return s.polls > 0 ? Standing::kSees : Standing::kPending;
}

Agent::Judgement Agent::JudgeSources() const {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_.MonotonicNs();
  Judgement j;
  size_t failing = 0;
  for (const auto& s : sources_) {
    SourceSight sight{.source = s->source->name(), .last_success_ns = s->last_success_ns};
    const Standing standing = Judge(*s, now, &sight.error);
    sight.failing = standing == Standing::kFails;
    j.any_sees = j.any_sees || standing == Standing::kSees;
    failing += sight.failing ? 1 : 0;
    j.sources.push_back(std::move(sight));
  }
  j.all_fail = !sources_.empty() && failing == sources_.size();
  return j;
}

namespace {

// "kmsg: <error>; nvml: <error>" for the sources that fail.
std::string FailingSources(const std::vector<SourceSight>& sources) {
  std::string out;
  for (const SourceSight& s : sources) {
    if (!s.failing) continue;
    if (!out.empty()) out += "; ";
    out += s.source + ": " + s.error;
  }
  return out;
}

}  // namespace

std::optional<AgentState> Agent::UpdateSight(Judgement judgement, int64_t now_ns) {
  // Some sources pending, none seeing: undecided, the state stands.
  const bool decided = judgement.all_fail || judgement.any_sees;
  std::lock_guard<std::mutex> lock(mu_);
  sight_.sources = std::move(judgement.sources);
  if (!decided) return std::nullopt;
  if (judgement.all_fail != sight_.blind) {
    sight_.blind = judgement.all_fail;
    sight_.since_ns = now_ns;
    if (sight_.blind) {
      logger_.Error("agent blind: every source is failing (" + FailingSources(sight_.sources) +
                    "); no \"none\" diagnosis is stored until one reads again");
    } else {
      logger_.Info("agent sees again: a source reads the node; diagnoses are stored as usual");
    }
  }
  if (recorded_blind_ == sight_.blind) return std::nullopt;
  if (!recorded_blind_ && sight_.since_ns == 0) sight_.since_ns = now_ns;  // the first judgement
  AgentState record = sight_;
  record.updated_ns = now_ns;
  return record;
}

void Agent::RecordSight(Judgement judgement, int64_t now_ns) {
  const std::optional<AgentState> record = UpdateSight(std::move(judgement), now_ns);
  if (!record) return;
  // Written on a change only; a failed write (a full disk) is tried again at the next
  // evaluation, logged once at warn.
  if (Status st = PutAgentState(*store_, node_, *record); !st.ok()) {
    const std::string line = "store: cannot record the agent's blind state: " + st.ToString();
    if (sight_write_failed_) {
      logger_.Debug(line);
    } else {
      logger_.Warn(line + " (retried at each evaluation)");
    }
    sight_write_failed_ = true;
    return;
  }
  sight_write_failed_ = false;
  recorded_blind_ = record->blind;
}

void Agent::LoadSight() {
  auto stored = GetAgentState(*store_, node_);
  if (!stored.ok()) {
    logger_.Warn("store: the agent's recorded blind state is unreadable (" + stored.status().ToString() +
                 "); it is written again at the next judgement");
    return;
  }
  if (!stored->has_value()) return;
  std::lock_guard<std::mutex> lock(mu_);
  sight_ = std::move(**stored);
  recorded_blind_ = sight_.blind;
}

AgentState Agent::Sight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sight_;
}

}  // namespace faultline::daemon
