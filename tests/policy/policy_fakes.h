// Test doubles for the policy: an actuator over a fake platform (a set of node states it
// can apply and observe, optionally persisted in a file so a forked child that is SIGKILLed
// leaves its effect behind), a fleet view, and diagnosis builders.
#pragma once

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "store/records.h"

namespace faultline::policy::testing {

// The "platform": which (target node, class) pairs are in effect, and who made them.
// With a file, every change is written through, so it survives the process.
class FakePlatform {
 public:
  explicit FakePlatform(std::string file = "") : file_(std::move(file)) { Load(); }
  void Set(const std::string& key, const std::string& owner) {
    Load();
    state_[key] = owner;
    ++applies_;
    Save();
  }
  std::string Owner(const std::string& key) {
    Load();
    auto it = state_.find(key);
    return it == state_.end() ? "" : it->second;
  }
  int applies() {
    Load();
    return applies_;
  }

 private:
  void Load() {
    if (file_.empty()) return;
    std::ifstream in(file_);
    if (!in) return;
    state_.clear();
    in >> applies_;
    std::string k, o;
    while (in >> k >> o) state_[k] = o;
  }
  void Save() {
    if (file_.empty()) return;
    std::ofstream out(file_, std::ios::trunc);
    out << applies_ << "\n";
    for (const auto& [k, o] : state_) out << k << " " << o << "\n";
    out.flush();
  }
  std::string file_;
  std::map<std::string, std::string> state_;
  int applies_ = 0;
};

class FakeActuator final : public actions::Actuator {
 public:
  FakeActuator(FakePlatform& platform, std::set<actions::ActionClass> classes, bool observable = true)
      : platform_(platform), classes_(std::move(classes)), observable_(observable) {}
  bool Handles(actions::ActionClass c) const override { return classes_.count(c) > 0; }
  Status Apply(const actions::Decision& d) override {
    applied.push_back(d);
    if (!fail_with.ok()) return fail_with;
    platform_.Set(Key(d), "faultline");
    return Status::Ok();
  }
  Result<actions::Observed> Observe(const actions::Decision& d) override {
    ++observes;
    if (!observable_) return actions::Observed::kUnknown;
    if (!fail_with.ok()) return fail_with;
    const std::string owner = platform_.Owner(Key(d));
    if (owner.empty()) return actions::Observed::kNotInEffect;
    return owner == "faultline" ? actions::Observed::kInEffect : actions::Observed::kOtherOwner;
  }
  static std::string Key(const actions::Decision& d) {
    return d.target_node + "/" + std::string(actions::ToString(d.action_class));
  }
  std::vector<actions::Decision> applied;
  int observes = 0;
  Status fail_with;

 private:
  FakePlatform& platform_;
  std::set<actions::ActionClass> classes_;
  bool observable_;
};

class FakeFleet final : public actions::FleetView {
 public:
  Result<actions::FleetState> Read() override {
    ++reads;
    if (!fail_with.ok()) return fail_with;
    return state;
  }
  actions::FleetState state{100, {}};
  Status fail_with;
  int reads = 0;
};

inline Diagnosis MakeDiagnosis(FaultClass c, Action a, ComponentRef component, int64_t first_ns) {
  Diagnosis d;
  d.fault_class = c;
  d.action = a;
  d.component = std::move(component);
  d.severity = Severity::kCritical;
  d.confidence = 0.9;
  d.first_ns = first_ns;
  d.last_ns = first_ns + 60'000'000'000LL;
  d.summary = "test diagnosis";
  return d;
}

}  // namespace faultline::policy::testing
