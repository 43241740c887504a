// The isolator's causal knowledge as data (STYLE.md rule 8): which fault class can explain
// which symptom, how the two components must be related, and the fact the rule relies on.
// docs/isolator.md lists the same table with its sources. The rules form a DAG over fault
// classes (tested), so following "explained by" links always ends at a root cause.
//
// A slowdown (slow steps from the workload layer, or a slowdown the caller reports) is the
// symptom class `workload_imbalance`: the class the isolator reports when nothing explains it.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "core/types.h"

namespace faultline::isolate {

// The symptom class that stands for "the job's steps got slower".
constexpr FaultClass kSlowdown = FaultClass::kWorkloadImbalance;

enum class Relation {
  kNode,           // anything on the node (PSUs feed every GPU), unless scoping keys differ
  kSameComponent,  // the same part, matched by any shared identity key
  kAttached,       // the cause's part is connected to the symptom's (a GPU's upstream port)
};

struct CausalRule {
  FaultClass cause;
  FaultClass symptom;
  Relation relation;
  // The link is plausible but not physically direct (a lost GPU stalls the job): such a
  // cause is chosen only when no direct one fits, and earns no corroboration bonus.
  bool weak = false;
  // The cause must be at least this severe (corrected AER noise does not slow a job).
  Severity min_severity = Severity::kInfo;
  // Applies only when this layer had no data: a PSU explains slow steps directly only
  // if the GPU layer, where the power brake would show, was not observed.
  std::optional<Layer> only_if_blind;
  std::string_view fact;
  // When set, the symptom must begin within this long of the cause's start (either side,
  // widened only by the findings' own declared clock uncertainty, not the default skew):
  // a supply losing its input drops the GPUs it feeds within a second or two, never ten
  // minutes later.
  int64_t within_ns = 0;
  // When set, the cause must be seen no later than this after the symptom began (print
  // order of one incident), whatever the default skew allows: a link read at width 0 or
  // down only after its GPU fell off is the GPU's absence, not the fall's cause.
  int64_t cause_lag_ns = 0;
};

std::span<const CausalRule> CausalRules();

// The action a class calls for when its findings carry none (docs/isolator.md).
Action DefaultAction(FaultClass cls);

// True for classes that are symptoms of something else when seen alone (the power brake,
// GPU thermal slowdown); when their cause is unknown they are reported with lower confidence.
bool IsSymptomClass(FaultClass cls);

// True for classes caused by the program rather than the hardware: never given a
// hardware action.
bool IsUserClass(FaultClass cls);

}  // namespace faultline::isolate
