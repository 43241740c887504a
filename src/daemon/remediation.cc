#include "daemon/remediation.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

#include "store/store.h"

namespace faultline::daemon {
namespace {

// What the worker borrows from outside and may still reach after Stop() gave up on it.
// Short calls (a log line, a fleet verdict read from the store) run under the gate's lock,
// so Close() waits for one in progress and none starts after it. A call that may stall (an
// actuator, the fleet view) only checks the gate before it starts and runs unlocked: Close()
// must never wait for it, so the one call Stop() abandoned is the only one that may still
// reach its borrowed object after Stop() returns.
class Gate {
 public:
  template <typename F>
  bool RunShort(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    f();
    return true;
  }
  bool open() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !closed_;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }

 private:
  mutable std::mutex mu_;
  bool closed_ = false;
};

Status Stopped() { return Status(StatusCode::kUnavailable, "remediation stopped (the agent is shutting down)"); }

// A borrowed actuator behind the gate. It shows the engine what its actuator is: one that
// can also undo its drain (actions::Reverter, the breaker's second look) gets the reverting
// proxy, any other the plain one, so the engine's dynamic_cast finds the same answer.
class GatedActuator : public actions::Actuator {
 public:
  GatedActuator(Gate& gate, actions::Actuator* inner) : gate_(gate), inner_(inner) {}
  bool Handles(actions::ActionClass c) const override {
    bool handles = false;
    gate_.RunShort([&] { handles = inner_->Handles(c); });
    return handles;
  }
  Status Apply(const actions::Decision& d) override { return gate_.open() ? inner_->Apply(d) : Stopped(); }
  Status Finish(const actions::Decision& d) override { return gate_.open() ? inner_->Finish(d) : Stopped(); }
  Result<actions::Observed> Observe(const actions::Decision& d) override {
    if (!gate_.open()) return Stopped();
    return inner_->Observe(d);
  }

 protected:
  Gate& gate_;

 private:
  actions::Actuator* inner_;
};

class GatedRevertingActuator final : public GatedActuator, public actions::Reverter {
 public:
  GatedRevertingActuator(Gate& gate, actions::Actuator* inner, actions::Reverter* reverter)
      : GatedActuator(gate, inner), reverter_(reverter) {}
  Status Revert(const actions::Decision& d) override { return gate_.open() ? reverter_->Revert(d) : Stopped(); }

 private:
  actions::Reverter* reverter_;
};

std::unique_ptr<actions::Actuator> Gated(Gate& gate, actions::Actuator* inner) {
  if (auto* reverter = dynamic_cast<actions::Reverter*>(inner)) {
    return std::make_unique<GatedRevertingActuator>(gate, inner, reverter);
  }
  return std::make_unique<GatedActuator>(gate, inner);
}

// A borrowed fleet view behind the gate (sinfo, the API server: may stall like an actuator).
class GatedFleetView final : public actions::FleetView {
 public:
  GatedFleetView(Gate& gate, actions::FleetView* inner) : gate_(gate), inner_(inner) {}
  Result<actions::FleetState> Read() override {
    if (!gate_.open()) return Stopped();
    return inner_->Read();
  }

 private:
  Gate& gate_;
  actions::FleetView* inner_;
};

// The fleet's verdicts behind the gate; set at any time (null = no fleet: nothing is linked
// and nothing may be shared, as the engine reads a null FleetVerdicts).
class GatedVerdicts final : public policy::FleetVerdicts {
 public:
  explicit GatedVerdicts(Gate& gate) : gate_(gate) {}
  void Set(const policy::FleetVerdicts* inner) {
    std::lock_guard<std::mutex> lock(mu_);
    inner_ = inner;
  }
  bool MayBeShared(const Diagnosis& diagnosis) const override {
    bool shared = false;
    gate_.RunShort([&] {
      if (const policy::FleetVerdicts* v = inner()) shared = v->MayBeShared(diagnosis);
    });
    return shared;
  }
  Result<std::optional<policy::FleetLink>> LinkFor(const Diagnosis& diagnosis) const override {
    Result<std::optional<policy::FleetLink>> link = std::optional<policy::FleetLink>();
    // Closed: unreadable, which never stops the node's own paperwork (Engine::FleetStandDown).
    if (!gate_.RunShort([&] {
          if (const policy::FleetVerdicts* v = inner()) link = v->LinkFor(diagnosis);
        })) {
      return Stopped();
    }
    return link;
  }

 private:
  const policy::FleetVerdicts* inner() const {
    std::lock_guard<std::mutex> lock(mu_);
    return inner_;
  }
  Gate& gate_;
  mutable std::mutex mu_;
  const policy::FleetVerdicts* inner_ = nullptr;
};

// One call of the engine: at most one new diagnosis (none = look at held/failed ones).
struct Job {
  std::vector<Row<Diagnosis>> rows;
  int64_t now_ns = 0;
};

}  // namespace

// Everything the engine touches, shared by the Remediation and its worker thread: a worker
// that Stop() gave up on (blocked in an actuator) finds all of it alive when the call returns.
//
// The store: the agent's own Store, shared, not a second connection. A Store serializes every
// call under its mutex over one SQLite connection (store/store.h), and each of the engine's
// writes is one call (a decision row is one PutAction), so the evaluating thread's pipeline
// and the worker's engine may use it at once. A second connection on the same file would be
// a second writer in the process (SQLITE_BUSY waits between the two, a second page cache) and
// does not exist for a store handed in open or in memory. Sharing ownership is what makes the
// abandoned worker safe: the agent closes the store at stop, so the worker's late writes fail
// kUnavailable and its decision stays "decided" for Engine::Start at the next start.
struct Remediation::Core {
  Core(const policy::PolicyConfig& config, std::shared_ptr<Store> shared_store, bool store_owned_here,
       std::string node_name, std::vector<actions::Actuator*> actuators, actions::FleetView* fleet_view, Logger& log,
       std::unique_ptr<policy::ActuatorSet> owned_set)
      : store(std::move(shared_store)),
        store_owned(store_owned_here),
        owned(std::move(owned_set)),
        logger(log),
        retry_initial_ns(config.retry_initial_ns),
        node(node_name),
        verdicts(gate) {
    // The set's actuators and fleet view live here; borrowed ones go behind the gate.
    if (owned == nullptr) {
      for (actions::Actuator* a : actuators) {
        if (a == nullptr) continue;
        gated.push_back(Gated(gate, a));
        actuators_for_engine.push_back(gated.back().get());
      }
      if (fleet_view != nullptr) {
        gated_fleet = std::make_unique<GatedFleetView>(gate, fleet_view);
        fleet_view = gated_fleet.get();
      }
    } else {
      actuators_for_engine = std::move(actuators);
    }
    engine = std::make_unique<policy::Engine>(config, *store, std::move(node_name), actuators_for_engine, fleet_view);
    engine->UseFleetVerdicts(&verdicts);
  }

  void Log(LogLevel level, const std::string& line) {
    gate.RunShort([&] { logger.Log(level, line); });
  }
  void Count(uint64_t RemediationStats::*field) {
    std::lock_guard<std::mutex> lock(mu);
    ++(stats.*field);
  }

  // The engine's thread (the caller's when synchronous, else the worker's) only.
  void Process(const Job& job);
  static int64_t NextLook(const policy::Ledger& ledger);
  void Report(const policy::Outcome& o);
  // The caller's thread, on a worker: queues without waiting.
  void Enqueue(Job job, size_t capacity);
  void WorkerLoop();

  std::shared_ptr<Store> store;  // owned share, or a non-owning alias (borrowed store)
  const bool store_owned;
  std::unique_ptr<policy::ActuatorSet> owned;  // null when the actuators are borrowed
  Logger& logger;                              // only through Log() (the gate)
  const int64_t retry_initial_ns;
  const std::string node;  // the store's node name (the diagnoses' rows)
  Gate gate;
  GatedVerdicts verdicts;
  std::vector<std::unique_ptr<actions::Actuator>> gated;
  std::unique_ptr<GatedFleetView> gated_fleet;
  std::vector<actions::Actuator*> actuators_for_engine;
  std::unique_ptr<policy::Engine> engine;  // declared last: destroyed before what it borrows
  bool started = false;                    // Engine::Start ran (the engine's thread)
  // Written by the engine's thread after each call, read by the caller's (AfterEvaluation).
  std::atomic<int64_t> next_look_ns{0};

  // The queue (mu).
  mutable std::mutex mu;
  std::condition_variable cv;  // work or stop for the worker; its exit for Stop()
  std::deque<Job> queue;
  bool stopping = false;  // finish what is queued, then exit
  bool give_up = false;   // exit after the current call, start nothing more
  bool exited = false;
  RemediationStats stats;
};

void Remediation::Core::Process(const Job& job) {
  if (!started) {
    // The first call finishes what a crash left "decided" (Engine::Start) before anything new.
    started = true;
    auto out = engine->Start(job.now_ns);
    if (!out.ok()) {
      Count(&RemediationStats::errors);
      Log(LogLevel::kError, "policy: start: " + out.status().ToString());
    } else {
      for (const policy::Outcome& o : *out) Report(o);
    }
  }
  auto out = engine->OnDiagnoses(job.rows, job.now_ns);
  if (!out.ok()) {
    Count(&RemediationStats::errors);
    Log(LogLevel::kError, "policy: " + out.status().ToString() + " (the agent keeps diagnosing)");
    return;
  }
  for (const policy::Outcome& o : *out) Report(o);
  next_look_ns.store(NextLook(engine->ledger()));
}

// The earliest time a decision waiting in the ledger is due again: a held one when its
// diagnosis settles, a failed one at its retry. 0 = none waits on a time.
int64_t Remediation::Core::NextLook(const policy::Ledger& ledger) {
  int64_t next = 0;
  for (const policy::LedgerEntry* e : ledger.Pending()) {
    const bool timed = e->state == policy::State::kHeldUntilSettled || e->state == policy::State::kFailed;
    if (timed && e->next_retry_ns > 0 && (next == 0 || e->next_retry_ns < next)) next = e->next_retry_ns;
  }
  return next;
}

void Remediation::Core::Report(const policy::Outcome& o) {
  if (!o.changed) return;
  Count(&RemediationStats::decisions_stored);
  const auto& d = o.decision;
  std::string line = "policy: " + std::string(actions::ToString(d.action_class)) + " for diagnosis " +
                     std::to_string(d.diagnosis_id) + " (" + std::string(ToString(d.diagnosis.fault_class)) + " " +
                     d.diagnosis.component.Id() + "): " + std::string(policy::ToString(o.state));
  if (!o.detail.empty()) line += ": " + o.detail;
  Log(o.state == policy::State::kFailed ? LogLevel::kWarn : LogLevel::kInfo, line);
}

void Remediation::Core::Enqueue(Job job, size_t capacity) {
  std::optional<int64_t> dropped_id;
  {
    std::lock_guard<std::mutex> lock(mu);
    // Every call looks at held and failed decisions (from the engine's ledger): a look with
    // nothing new rides on any call already waiting.
    if (job.rows.empty() && !queue.empty()) {
      ++stats.coalesced;
      return;
    }
    ++stats.queued;
    if (queue.size() >= std::max<size_t>(capacity, 1)) {
      // Full: the newest diagnosis matters most; the oldest waiting call makes room.
      if (!queue.front().rows.empty()) {
        ++stats.dropped;
        dropped_id = queue.front().rows.front().id;
      } else {
        ++stats.coalesced;
      }
      queue.pop_front();
    }
    queue.push_back(std::move(job));
    stats.max_queued = std::max<uint64_t>(stats.max_queued, queue.size());
  }
  cv.notify_all();
  if (dropped_id) {
    Log(LogLevel::kWarn, "policy: an action is still running and " + std::to_string(capacity) +
                             " calls wait behind it: diagnosis " + std::to_string(*dropped_id) +
                             " is not considered (a newer one is)");
  }
}

void Remediation::Core::WorkerLoop() {
  (void)pthread_setname_np(pthread_self(), "fl-policy");
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    cv.wait(lock, [this] { return give_up || stopping || !queue.empty(); });
    if (give_up || queue.empty()) break;  // given up on, or stopping with nothing left
    Job job = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    Process(job);
    lock.lock();
  }
  exited = true;
  cv.notify_all();
}

Remediation::Remediation(std::shared_ptr<Core> core, RemediationOptions options)
    : core_(std::move(core)), options_(options) {}

Result<std::unique_ptr<Remediation>> Remediation::Create(const policy::PolicyConfig& config,
                                                         std::shared_ptr<Store> store, std::string node, Logger& logger,
                                                         RemediationOptions options) {
  if (store == nullptr) return Status(StatusCode::kInvalidArgument, "remediation: no store");
  auto set = policy::BuildActuators(config, {.store = store.get()});
  if (!set.ok()) return set.status();
  std::vector<actions::Actuator*> actuators = (*set)->actuators();
  actions::FleetView* fleet = (*set)->fleet();
  auto core = std::make_shared<Core>(config, std::move(store), true, std::move(node), std::move(actuators), fleet,
                                     logger, std::move(set).value());
  return std::unique_ptr<Remediation>(new Remediation(std::move(core), options));
}

Remediation::Remediation(const policy::PolicyConfig& config, std::shared_ptr<Store> store, std::string node,
                         std::vector<actions::Actuator*> actuators, actions::FleetView* fleet, Logger& logger,
                         RemediationOptions options)
    : Remediation(std::make_shared<Core>(config, std::move(store), true, std::move(node), std::move(actuators), fleet,
                                         logger, nullptr),
                  options) {}

Remediation::Remediation(const policy::PolicyConfig& config, Store& store, std::string node,
                         std::vector<actions::Actuator*> actuators, actions::FleetView* fleet, Logger& logger,
                         RemediationOptions options)
    : Remediation(std::make_shared<Core>(config, std::shared_ptr<Store>(std::shared_ptr<Store>(), &store), false,
                                         std::move(node), std::move(actuators), fleet, logger, nullptr),
                  options) {}

Remediation::~Remediation() { Stop(); }

void Remediation::AfterEvaluation(const EvaluateResult& result, int64_t now_ns) {
  Job job{.rows = {}, .now_ns = now_ns};
  if (result.diagnosis_stored && !result.diagnoses.empty()) {
    job.rows.push_back(
        Row<Diagnosis>{.id = result.diagnosis_id, .node = core_->node, .value = result.diagnoses.front()});
  }
  // Nothing new: held and failed decisions still deserve a look, but not at every
  // evaluation (a held drain reads the fleet each time it is looked at): every
  // retry_initial, and as soon as a held decision's diagnosis settles or a retry is due
  // (waiting a whole retry interval past the settle would delay every decision). The first
  // call always goes (Engine::Start).
  const int64_t due = core_->next_look_ns.load();
  // Once per due time: a look at or after it that left the entry due (another rule held it)
  // falls back to the retry interval.
  const bool timed_look_due = due > 0 && now_ns >= due && (!last_run_ns_ || due > *last_run_ns_);
  if (job.rows.empty() && last_run_ns_ && now_ns - *last_run_ns_ < core_->retry_initial_ns && !timed_look_due) {
    return;
  }
  last_run_ns_ = now_ns;
  switch (mode_) {
    case Mode::kSync:
      core_->Process(job);
      return;
    case Mode::kWorker:
      core_->Enqueue(std::move(job), options_.queue_capacity);
      return;
    case Mode::kGaveUp:  // the engine is still with the abandoned worker
      if (!job.rows.empty()) core_->Count(&RemediationStats::dropped);
      return;
  }
}

Status Remediation::StartWorker() {
  if (mode_ != Mode::kSync || worker_.joinable()) {
    return Status(StatusCode::kInvalidArgument, "remediation: the worker was started or given up on already");
  }
  if (!core_->store_owned) {
    return Status(StatusCode::kInvalidArgument, "remediation: a worker needs a shared store (it may outlive Stop)");
  }
  mode_ = Mode::kWorker;
  worker_ = std::thread([core = core_] { core->WorkerLoop(); });
  return Status::Ok();
}

void Remediation::Stop() {
  if (mode_ != Mode::kWorker) return;
  std::unique_lock<std::mutex> lock(core_->mu);
  core_->stopping = true;
  core_->cv.notify_all();
  if (core_->cv.wait_for(lock, options_.stop_deadline, [this] { return core_->exited; })) {
    lock.unlock();
    worker_.join();
    mode_ = Mode::kSync;  // the engine is back with the caller
    return;
  }
  // Give up on the call in flight and on what waits behind it. Its decision was committed
  // "decided" before the actuator ran: the next start finishes it (Engine::Start).
  const size_t waiting = core_->queue.size();
  core_->queue.clear();
  core_->give_up = true;
  core_->stats.abandoned += waiting + 1;
  lock.unlock();
  core_->cv.notify_all();
  core_->Log(LogLevel::kWarn,
             "policy: stopping without waiting for an action still running after " +
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(options_.stop_deadline).count()) +
                 " ms (" + std::to_string(waiting) +
                 " calls waiting are dropped); a decision left \"decided\" is finished at the next start");
  // After this no log line or fleet verdict is read through what the worker borrows; the
  // worker keeps its share of the core and ends once the blocked call returns.
  core_->gate.Close();
  worker_.detach();
  mode_ = Mode::kGaveUp;
}

RemediationStats Remediation::stats() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->stats;
}

void Remediation::UseFleetVerdicts(const policy::FleetVerdicts* verdicts) { core_->verdicts.Set(verdicts); }

}  // namespace faultline::daemon
