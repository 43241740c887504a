// A stalled actuator for the remediation worker's tests (daemon/remediation.h): it holds
// every Apply until the test opens it, and writes what happened, in order, to an event log
// the test's own steps write to too. Tests assert on that order, never on time: a step that
// would have waited for the stalled actuator shows up after the test opened it.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "actions/actuator.h"

namespace faultline::daemon::testing {

class EventLog {
 public:
  void Add(std::string event) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(event));
    }
    cv_.notify_all();
  }
  // Waits until `event` was added. False after a minute: only a test that would otherwise
  // hang for good (nothing here is a time limit on the code under test).
  bool WaitFor(const std::string& event) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kSafety, [&] { return Find(event); });
  }
  // Waits until `n` events start with `prefix`; false after a minute.
  bool WaitForCount(const std::string& prefix, size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kSafety, [&] { return CountLocked(prefix) >= n; });
  }
  // Lets every Apply held now and later through.
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool WaitOpen() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kSafety, [&] { return open_; });
  }
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  size_t Count(const std::string& prefix) const {
    std::lock_guard<std::mutex> lock(mu_);
    return CountLocked(prefix);
  }
  // "a, b, c": for failure messages.
  std::string Joined() const {
    std::string out;
    for (const std::string& e : events()) out += (out.empty() ? "" : ", ") + e;
    return out;
  }

 private:
  static constexpr std::chrono::seconds kSafety{60};
  bool Find(const std::string& event) const {
    return std::find(events_.begin(), events_.end(), event) != events_.end();
  }
  size_t CountLocked(const std::string& prefix) const {
    return std::count_if(events_.begin(), events_.end(), [&](const std::string& e) { return e.starts_with(prefix); });
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
  bool open_ = false;
};

// Like a webhook (cannot tell whether it was sent: Observe is kUnknown) whose endpoint hangs
// until the test opens the log. Logs "apply <diagnosis id>" on entry and "applied <id>" on
// return.
class BlockingActuator final : public actions::Actuator {
 public:
  BlockingActuator(std::shared_ptr<EventLog> log, std::set<actions::ActionClass> classes)
      : log_(std::move(log)), classes_(std::move(classes)) {}
  bool Handles(actions::ActionClass c) const override { return classes_.count(c) > 0; }
  Result<actions::Observed> Observe(const actions::Decision&) override { return actions::Observed::kUnknown; }
  Status Apply(const actions::Decision& d) override {
    // A local share: once "applied" is logged the test may destroy this actuator.
    std::shared_ptr<EventLog> log = log_;
    const std::string id = std::to_string(d.diagnosis_id);
    log->Add("apply " + id);
    if (!log->WaitOpen()) {
      log->Add("apply " + id + " never released by the test");
      return Status(StatusCode::kTimeout, "test: never released");
    }
    log->Add("applied " + id);
    return Status::Ok();
  }

 private:
  std::shared_ptr<EventLog> log_;
  std::set<actions::ActionClass> classes_;
};

}  // namespace faultline::daemon::testing
