// Scenario files for the mock BMC: a timeline of state changes applied over the served
// Redfish tree. Kept general (pointer + value, linear ramp, collection append, event) so
// the node simulator can drive any resource the same way. Format: docs/mock-bmc.md.
//
//   steps:
//     - at: 5                      # scenario seconds, >= 0
//       set: {resource: /redfish/v1/Chassis/1U/Power, pointer: /PowerSupplies/0/Status/State, value: Absent}
//     - at: 10
//       ramp: {resource: ..., pointer: /Reading, from: 22, to: 45, until: 70}   # from: default = current
//     - at: 12
//       append: {collection: /redfish/v1/Systems/1/LogServices/SEL/Entries, member: {...}}
//     - at: 12
//       event: {MessageId: ..., MessageArgs: [..], MessageSeverity: Critical, OriginOfCondition: /redfish/v1/...}
//
// ParseScenario never throws and never crashes on hostile input: it bounds the text size,
// nesting depth, node count (YAML alias bombs) and step count, and rejects unknown keys.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/mock_bmc/mock_bmc.h"

namespace faultline::sim {

enum class StepKind { kSet, kRamp, kAppend, kEvent };

struct ScenarioStep {
  double at = 0;
  StepKind kind = StepKind::kSet;
  std::string resource;   // set/ramp: the resource URI; append: the collection URI
  std::string pointer;    // set/ramp: JSON pointer inside the resource
  nlohmann::json value;   // set: the new value; append: the member object
  bool has_from = false;  // ramp: start value given; else the value current at `at`
  double from = 0;
  double to = 0;
  double until = 0;  // ramp: time the value reaches `to` (> at)
  BmcEvent event;    // event
};

struct Scenario {
  std::string name;
  std::vector<ScenarioStep> steps;  // sorted by `at` (stable: file order breaks ties)
};

struct ScenarioLimits {
  size_t max_text_bytes = 8u << 20;
  int max_depth = 64;
  size_t max_nodes = 1u << 20;
  size_t max_steps = 100000;
};

// Parses JSON (text starting with '{') or YAML. Errors are kInvalidArgument (too large)
// or kCorrupt (syntax, schema), with the offending step index in the message.
Result<Scenario> ParseScenario(std::string_view text, const ScenarioLimits& limits = {});

// Where a scenario's steps land. The mock BMC implements it over its resource tree.
class ScenarioTarget {
 public:
  virtual ~ScenarioTarget() = default;
  virtual Status Set(const std::string& resource, const std::string& pointer, const nlohmann::json& value) = 0;
  virtual Result<nlohmann::json> Get(const std::string& resource, const std::string& pointer) const = 0;
  virtual Status Append(const std::string& collection, const nlohmann::json& member) = 0;
  virtual void Emit(const BmcEvent& event) = 0;
};

// Plays a scenario forward. Not thread-safe: the owner serialises calls.
class ScenarioPlayer {
 public:
  explicit ScenarioPlayer(Scenario scenario) : scenario_(std::move(scenario)) {}

  // Applies every step with at <= t not applied yet, then sets each active ramp to its
  // value at t. Times before the current one are ignored. Returns the target's errors
  // (a step that fails is skipped, the others still apply).
  std::vector<Status> AdvanceTo(double t, ScenarioTarget& target);
  double now() const { return now_; }
  bool started() const { return started_; }

 private:
  struct ActiveRamp {
    size_t step;  // index into scenario_.steps
    double from;
  };
  Status Begin(const ScenarioStep& step, ScenarioTarget& target);

  Scenario scenario_;
  size_t next_ = 0;
  std::vector<ActiveRamp> ramps_;
  double now_ = 0;
  bool started_ = false;
};

}  // namespace faultline::sim
