// Turns the isolator's graph into Diagnoses: one per root cause with its evidence chain
// and the symptoms it explains, the workload / none answers, the ruled-out layers, and
// the final order. Internal to src/engine/isolate.
#pragma once

#include <vector>

#include "core/types.h"
#include "engine/isolate/graph.h"
#include "engine/isolate/isolator.h"

namespace faultline::isolate {

// A diagnosis plus what the ordering needs to know about it.
struct RankedDiagnosis {
  Diagnosis diagnosis;
  bool answers_slowdown = false;  // explains the slow steps (or is the workload answer)
};

// The diagnosis for root node `root` and everything it explains.
RankedDiagnosis RootDiagnosis(const std::vector<Node>& nodes, int root, const IsolateOptions& options);

// `workload_imbalance` for slow steps nothing explains; `hardware_in_window` says whether
// some hardware/fabric fault was present but did not line up (it changes the wording).
RankedDiagnosis WorkloadDiagnosis(const std::vector<Node>& nodes, const std::vector<int>& slowdowns,
                                  bool hardware_in_window, size_t ruled_out_layers, const IsolateOptions& options);

// `none`: nothing needs doing. `informational` counts findings reported below it.
RankedDiagnosis NoneDiagnosis(size_t ruled_out_layers, size_t informational);

// Whether the isolator may quote `o` to rule its layer out: a reading of a hardware layer
// (oob, gpu, os, fabric), not an event (log lines and SEL entries are what findings are
// made of). BuildIsolateInput keeps only these as context.
bool QuotableReading(const Observation& o);

// Every layer with data and no warning-or-worse finding, with the healthy observations
// that rule it out (latest reading per component and kind, capped).
std::vector<RuledOut> RuledOutLayers(const IsolateInput& input, const IsolateOptions& options);

// Primary first (docs/isolator.md "Ordering"): when the question is a slowdown, what
// answers it leads; then severity, action, confidence, physical layer first, earlier
// first, component id.
void OrderDiagnoses(std::vector<RankedDiagnosis>& diagnoses, bool slowdown_question);

}  // namespace faultline::isolate
