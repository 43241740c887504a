// The isolator (DESIGN.md "Isolator"): turns the findings of every layer, in a window
// around a symptom, into root-cause diagnoses. It reasons physical layer first: a cause
// in a lower layer explains the symptoms above it when times and components line up
// (PSU loss -> GPU power brake -> lower clocks -> slow steps), and a symptom is never
// reported as a root cause when its cause is known. It also says which layers it
// ruled out, with the evidence that rules them out.
//
// Pure function of its input; never prints; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "core/types.h"

namespace faultline {

struct IsolateOptions {
  // How far before/after a cause a symptom may start and still be explained by it.
  int64_t explain_before_ns = 10LL * 60 * 1'000'000'000;  // a symptom up to 10 min after the cause
  int64_t explain_skew_ns = 2LL * 60 * 1'000'000'000;     // clock skew allowed the other way (BMC clocks)
  // The skew widens both bounds (a late BMC clock puts the symptom before its cause, an
  // early one puts it too long after), and so does a finding's own declared clock
  // uncertainty: attrs {"clock_skew_ns": "<n>"} (a BMC whose offset is known to +-n ns).

  // Evidence lines kept per diagnosis (oldest first; the rest are counted in the summary).
  size_t max_evidence = 256;
  // Healthy observations quoted per ruled-out layer.
  size_t max_ruled_out_evidence = 8;
};

struct IsolateInput {
  std::vector<Finding> findings;          // from every detector
  std::vector<Observation> observations;  // optional context (e.g. healthy readings that rule a layer out)
  std::set<Layer> layers_with_data;       // layers that had a working source in the window
  std::optional<int64_t> symptom_ns;      // when the symptom (slowdown, crash) began, if known
  bool slowdown_reported = false;         // the question is "why is this node slow?"
};

// Diagnoses, most important first (ordering and every tie-break: docs/isolator.md).
// Never empty: with no finding at all, one diagnosis of class `none` (or
// `workload_imbalance` when a slowdown was reported) saying so. The primary (first)
// diagnosis carries the ruled-out layers; a layer is ruled out only when it had data.
std::vector<Diagnosis> Isolate(const IsolateInput& input, const IsolateOptions& options = {});

// The input is built by BuildIsolateInput (engine/isolate/input.h), the one path the
// agent, offline `diagnose` and `why-slow` share.

}  // namespace faultline
