// "Why was this node slow between since and until?" answered from the store
// (`faultline why-slow`): the stored findings whose span overlaps the window (latest
// version of each, as the agent re-stores a finding when it changes) and the stored
// observations inside it go through the agent's IsolateContext and BuildIsolateInput
// (engine/isolate/input.h) and the isolator. The slowdown itself is judged again by the
// workload detector over the window's stored step times (the question's window, not
// the agent's sliding one), so the stored workload findings are not used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

struct WhySlowAnswer {
  std::vector<Diagnosis> diagnoses;  // primary first; never empty
  size_t findings = 0;               // distinct findings considered
  size_t observations = 0;
  size_t bad_rows = 0;  // stored rows this binary could not decode (skipped)
};

Result<WhySlowAnswer> WhySlow(Store& store, const WhySlowQuery& query, const IsolateOptions& options = {});

}  // namespace faultline::daemon
