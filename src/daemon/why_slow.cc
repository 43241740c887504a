#include "daemon/why_slow.h"

#include <algorithm>
#include <limits>
#include <map>

#include "daemon/pipeline.h"
#include "sources/workload/slowdown.h"
#include "store/store.h"

namespace faultline::daemon {

Result<WhySlowAnswer> WhySlow(Store& store, const WhySlowQuery& query, const IsolateOptions& options) {
  if (query.node.empty()) return Status(StatusCode::kInvalidArgument, "why-slow: a node is required");
  if (query.since_ns != 0 && query.until_ns != 0 && query.since_ns > query.until_ns) {
    return Status(StatusCode::kInvalidArgument, "why-slow: --since is after --until");
  }
  const int64_t since = query.since_ns != 0 ? query.since_ns : std::numeric_limits<int64_t>::min();
  const int64_t until = query.until_ns != 0 ? query.until_ns : std::numeric_limits<int64_t>::max();
  WhySlowAnswer answer;

  RecordQuery rq;
  rq.node = query.node;
  rq.since_ns = since;
  rq.until_ns = until;
  rq.limit = 0;
  auto finding_rows = store.ListFindings(rq);
  if (!finding_rows.ok()) return finding_rows.status();
  answer.bad_rows += finding_rows->bad_rows.size();
  std::map<std::string, std::pair<int64_t, Finding>> latest;  // key -> (row id, finding)
  for (auto& row : finding_rows->rows) {
    auto& slot = latest[FindingKey(row.value)];
    if (row.id >= slot.first) slot = {row.id, std::move(row.value)};
  }
  std::vector<Finding> findings;
  for (auto& [key, entry] : latest) findings.push_back(std::move(entry.second));
  answer.findings = findings.size();

  ObservationQuery oq;
  oq.node = query.node;
  oq.since_ns = since;
  oq.until_ns = until;
  oq.limit = query.max_observations;
  oq.newest_first = true;
  auto obs_rows = store.QueryObservations(oq);
  if (!obs_rows.ok()) return obs_rows.status();
  answer.bad_rows += obs_rows->bad_rows.size();
  std::vector<Observation> observations;
  observations.reserve(obs_rows->rows.size());
  for (auto it = obs_rows->rows.rbegin(); it != obs_rows->rows.rend(); ++it) observations.push_back(it->value);
  answer.observations = observations.size();

  IsolateInput input = MakeWindowInput(findings, observations, query.since_ns, query.until_ns, true);
  std::vector<Observation> workload;
  for (const Observation& o : input.observations) {
    if (o.layer == Layer::kWorkload) workload.push_back(o);
  }
  const SlowdownVerdict slow = DetectNodeSlowdown(workload);
  if (slow.slow) input.symptom_ns = slow.began_ns;
  answer.diagnoses = Isolate(input, options);
  return answer;
}

}  // namespace faultline::daemon
