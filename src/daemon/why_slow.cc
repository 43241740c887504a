#include "daemon/why_slow.h"

#include <algorithm>
#include <limits>
#include <map>

#include "daemon/pipeline.h"
#include "engine/detect/workload_detector.h"
#include "engine/isolate/input.h"
#include "store/store.h"

namespace faultline::daemon {

namespace {

// An open bound (0) as the store's "everything" bound.
int64_t Since(const WhySlowQuery& q) { return q.since_ns != 0 ? q.since_ns : std::numeric_limits<int64_t>::min(); }
int64_t Until(const WhySlowQuery& q) { return q.until_ns != 0 ? q.until_ns : std::numeric_limits<int64_t>::max(); }

// The latest stored version of each finding overlapping the window (the agent re-stores
// a finding when it changes). The workload layer's are left out: the slowdown is judged
// again over the question's window; the agent judged it over its own sliding window.
Result<std::vector<Finding>> StoredFindings(Store& store, const WhySlowQuery& query, WhySlowAnswer& answer) {
  RecordQuery rq;
  rq.node = query.node;
  rq.since_ns = Since(query);
  rq.until_ns = Until(query);
  rq.limit = 0;
  auto rows = store.ListFindings(rq);
  if (!rows.ok()) return rows.status();
  answer.bad_rows += rows->bad_rows.size();
  std::map<std::string, std::pair<int64_t, Finding>> latest;  // key -> (row id, finding)
  for (auto& row : rows->rows) {
    auto& slot = latest[FindingKey(row.value)];
    if (row.id >= slot.first) slot = {row.id, std::move(row.value)};
  }
  std::vector<Finding> findings;
  for (auto& [key, entry] : latest) {
    if (entry.second.layer != Layer::kWorkload) findings.push_back(std::move(entry.second));
  }
  answer.findings = findings.size();
  return findings;
}

// The window's stored observations (the newest max_observations), oldest first, through
// the same context the agent and `diagnose` keep, and the workload detector.
Status ReadObservations(Store& store, const WhySlowQuery& query, IsolateContext& context, Detector& slowdown,
                        WhySlowAnswer& answer) {
  ObservationQuery oq;
  oq.node = query.node;
  oq.since_ns = Since(query);
  oq.until_ns = Until(query);
  oq.limit = query.max_observations;
  oq.newest_first = true;
  auto rows = store.QueryObservations(oq);
  if (!rows.ok()) return rows.status();
  answer.bad_rows += rows->bad_rows.size();
  for (auto it = rows->rows.rbegin(); it != rows->rows.rend(); ++it) {
    context.Observe(it->value);
    slowdown.Observe(it->value);
  }
  answer.observations = rows->rows.size();
  return Status::Ok();
}

}  // namespace

Result<WhySlowAnswer> WhySlow(Store& store, const WhySlowQuery& query, const IsolateOptions& options) {
  if (query.node.empty()) return Status(StatusCode::kInvalidArgument, "why-slow: a node is required");
  if (query.since_ns != 0 && query.until_ns != 0 && query.since_ns > query.until_ns) {
    return Status(StatusCode::kInvalidArgument, "why-slow: --since is after --until");
  }
  WhySlowAnswer answer;
  auto findings = StoredFindings(store, query, answer);
  if (!findings.ok()) return findings.status();
  IsolateContext context;
  WorkloadDetector slowdown;
  if (Status read = ReadObservations(store, query, context, slowdown, answer); !read.ok()) return read;
  IsolateInputParts parts = context.Parts();
  parts.findings = std::move(findings).value();
  for (Finding& f : slowdown.Findings()) parts.findings.push_back(std::move(f));
  parts.window = {.since_ns = query.since_ns, .until_ns = query.until_ns};
  parts.slowdown_reported = true;
  answer.diagnoses = Isolate(BuildIsolateInput(std::move(parts)), options);
  return answer;
}

}  // namespace faultline::daemon
