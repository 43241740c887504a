// "Why was this node slow between since and until?" answered from the store
// (`faultline why-slow`, the API's /why-slow, the assistant's why_slow tool): the stored
// findings whose span overlaps the window (latest version of each, as the agent re-stores
// a finding when it changes) and the stored observations inside it go through the agent's
// IsolateContext and BuildIsolateInput (engine/isolate/input.h) and the isolator.
//
// It fails closed, because "suspect the workload" sends the job owner hunting:
//   - no row for the node in the window (a wrong name, an empty window, an empty store):
//     status unknown, one `none` diagnosis saying so, never an answer about the node;
//   - rows but no slowdown measured: status no_slowdown; the isolator runs without a
//     slowdown (slowdown_reported false), so it can name hardware findings but never
//     workload_imbalance;
//   - a slowdown measured: status slowdown; the isolator names the hardware cause that
//     explains it, or workload_imbalance (notify_user) when none does.
// "Measured" = the workload detector over the window's stored step times and throughput
// (the question's window, not the agent's sliding one) or, when that series cannot judge
// (e.g. the window holds no baseline), a slowdown finding the agent stored overlapping the
// window. Never a flag: a node is not called slow because someone asked why it was.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "core/types.h"
#include "engine/isolate/isolator.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

struct WhySlowQuery {
  std::string node;                   // required
  int64_t since_ns = 0;               // 0 = open
  int64_t until_ns = 0;               // 0 = open
  size_t max_observations = 200'000;  // the latest ones in the window, when there are more
};

enum class WhySlowStatus {
  kUnknown,     // no data for the node in the window: nothing can be said
  kNoSlowdown,  // data, and no slowdown in it
  kSlowdown,    // a slowdown measured; diagnoses.front() answers it
};
std::string_view ToString(WhySlowStatus status);  // "unknown", "no_slowdown", "slowdown"

struct WhySlowAnswer {
  WhySlowStatus status = WhySlowStatus::kUnknown;
  // One line: why unknown (naming the window), what was looked at when no slowdown was
  // seen, or the slowdown measured.
  std::string reason;
  // Unknown only: node names seen in the store's newest rows (a bounded sample, sorted;
  // the asked node included when it has data outside the window), for a hint.
  std::vector<std::string> store_nodes;
  // Primary first; never empty (unknown: one `none` diagnosis carrying the reason).
  std::vector<Diagnosis> diagnoses;
  size_t findings = 0;  // distinct findings considered (the workload layer's not counted)
  size_t observations = 0;
  size_t step_reports = 0;  // of them, step-time and throughput reports (what "slow" is judged on)
  size_t bad_rows = 0;      // stored rows this binary could not decode (skipped)
};

Result<WhySlowAnswer> WhySlow(Store& store, const WhySlowQuery& query, const IsolateOptions& options = {});

// "[2025-11-29T09:59:00Z, end of the store]": the window as the answers name it.
std::string WindowText(int64_t since_ns, int64_t until_ns);

// The one JSON shape of `faultline why-slow --json` and GET /api/v1/why-slow:
// {node, status, reason, diagnoses, primary[, store_nodes]} (docs/agent.md).
Json WhySlowJson(const std::string& node, const WhySlowAnswer& answer);

}  // namespace faultline::daemon
