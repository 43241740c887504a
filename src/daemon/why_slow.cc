#include "daemon/why_slow.h"

#include <algorithm>
#include <limits>
#include <map>

#include "core/time.h"
#include "daemon/pipeline.h"
#include "engine/detect/slowdown.h"
#include "engine/detect/workload_detector.h"
#include "engine/isolate/input.h"
#include "store/store.h"

namespace faultline::daemon {

namespace {

// At most this many node names in the no-data hint.
constexpr size_t kHintNodes = 20;

// An open bound (0) as the store's "everything" bound.
int64_t Since(const WhySlowQuery& q) { return q.since_ns != 0 ? q.since_ns : std::numeric_limits<int64_t>::min(); }
int64_t Until(const WhySlowQuery& q) { return q.until_ns != 0 ? q.until_ns : std::numeric_limits<int64_t>::max(); }

// What the isolator treats as "the node is slow" (graph.cc IsSlowdown): only these may
// lead to workload_imbalance, so only these count as evidence of a slowdown.
bool IsSlowdownFinding(const Finding& f) {
  return f.fault_class == FaultClass::kWorkloadImbalance ||
         (f.layer == Layer::kWorkload && f.fault_class != FaultClass::kUserApplication &&
          f.fault_class != FaultClass::kNone);
}

struct StoredRows {
  std::vector<Finding> findings;   // every layer but the workload's
  std::vector<Finding> slowdowns;  // the agent's own slowdown findings (its sliding window)
  size_t rows = 0;                 // decoded finding rows for the node in the window
};

// The latest stored version of each finding overlapping the window (the agent re-stores
// a finding when it changes). The workload layer's are kept apart: the slowdown is judged
// again over the question's window, and the agent's verdict is only the fallback.
Result<StoredRows> StoredFindings(Store& store, const WhySlowQuery& query, WhySlowAnswer& answer) {
  RecordQuery rq;
  rq.node = query.node;
  rq.since_ns = Since(query);
  rq.until_ns = Until(query);
  rq.limit = 0;
  auto rows = store.ListFindings(rq);
  if (!rows.ok()) return rows.status();
  answer.bad_rows += rows->bad_rows.size();
  StoredRows out;
  out.rows = rows->rows.size();
  std::map<std::string, std::pair<int64_t, Finding>> latest;  // key -> (row id, finding)
  for (auto& row : rows->rows) {
    auto& slot = latest[FindingKey(row.value)];
    if (row.id >= slot.first) slot = {row.id, std::move(row.value)};
  }
  for (auto& [key, entry] : latest) {
    Finding& f = entry.second;
    if (f.layer != Layer::kWorkload) {
      out.findings.push_back(std::move(f));
    } else if (IsSlowdownFinding(f)) {
      out.slowdowns.push_back(std::move(f));
    }
  }
  return out;
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
    if (it->value.layer == Layer::kWorkload && StepSampleOf(it->value)) ++answer.step_reports;
  }
  answer.observations = rows->rows.size();
  return Status::Ok();
}

// The store's node names (Store::NodeNames: every node with observations, one index seek
// each), at most kHintNodes, for the no-data hint. Best effort: a read error here only
// drops the hint.
std::vector<std::string> StoreNodes(Store& store) {
  auto names = store.NodeNames();
  if (!names.ok()) return {};
  if (names->size() > kHintNodes) names->resize(kHintNodes);
  return std::move(*names);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// No row for the node in the window: say so, name the window, hint at what is there.
WhySlowAnswer Unknown(Store& store, const WhySlowQuery& query, WhySlowAnswer answer) {
  answer.status = WhySlowStatus::kUnknown;
  answer.store_nodes = StoreNodes(store);
  std::string reason =
      "no data for node " + query.node + " in the window " + WindowText(query.since_ns, query.until_ns);
  if (answer.bad_rows > 0) reason += " (" + std::to_string(answer.bad_rows) + " stored row(s) could not be read)";
  std::vector<std::string> others;
  for (const std::string& n : answer.store_nodes) {
    if (n != query.node) others.push_back(n);
  }
  if (others.size() < answer.store_nodes.size()) reason += "; node " + query.node + " has data outside this window";
  if (!others.empty()) reason += "; the store holds node(s): " + Join(others);
  if (answer.store_nodes.empty()) reason += "; the store holds no rows";
  answer.reason = reason;
  Diagnosis d;
  d.fault_class = FaultClass::kNone;
  d.layer = Layer::kWorkload;
  d.component = HostComponent();
  d.action = Action::kNone;
  d.severity = Severity::kInfo;
  d.confidence = 0;  // nothing was judged
  d.summary = reason;
  answer.diagnoses = {std::move(d)};
  return answer;
}

std::string NoSlowdownReason(const WhySlowQuery& query, const WhySlowAnswer& answer) {
  std::string reason = "no slowdown seen in the window " + WindowText(query.since_ns, query.until_ns) + ": ";
  reason += answer.step_reports == 0 ? std::string("no step-time or throughput reports to judge")
                                     : "the workload detector found no slowdown in " +
                                           std::to_string(answer.step_reports) + " step-time/throughput report(s)";
  return reason + "; " + std::to_string(answer.observations) + " observation(s) and " +
         std::to_string(answer.findings) + " finding(s) looked at";
}

}  // namespace

std::string_view ToString(WhySlowStatus status) {
  switch (status) {
    case WhySlowStatus::kUnknown:
      return "unknown";
    case WhySlowStatus::kNoSlowdown:
      return "no_slowdown";
    case WhySlowStatus::kSlowdown:
      return "slowdown";
  }
  return "unknown";
}

std::string WindowText(int64_t since_ns, int64_t until_ns) {
  return "[" + (since_ns != 0 ? FormatIso8601(since_ns) : std::string("start of the store")) + ", " +
         (until_ns != 0 ? FormatIso8601(until_ns) : std::string("end of the store")) + "]";
}

Result<WhySlowAnswer> WhySlow(Store& store, const WhySlowQuery& query, const IsolateOptions& options) {
  if (query.node.empty()) return Status(StatusCode::kInvalidArgument, "why-slow: a node is required");
  if (query.since_ns != 0 && query.until_ns != 0 && query.since_ns > query.until_ns) {
    return Status(StatusCode::kInvalidArgument, "why-slow: --since is after --until");
  }
  WhySlowAnswer answer;
  auto stored = StoredFindings(store, query, answer);
  if (!stored.ok()) return stored.status();
  IsolateContext context;
  WorkloadDetector detector;
  if (Status read = ReadObservations(store, query, context, detector, answer); !read.ok()) return read;
  // Fail closed: with nothing stored for the node in the window there is nothing to
  // judge, and the isolator's "no cause found" would read as an answer.
  if (stored->rows == 0 && answer.observations == 0) return Unknown(store, query, std::move(answer));

  std::vector<Finding> slowdowns = detector.Findings();
  const bool from_agent = slowdowns.empty() && !stored->slowdowns.empty();
  if (from_agent) slowdowns = std::move(stored->slowdowns);
  // Counted: the stored findings considered (the detector's fresh verdicts are not rows).
  answer.findings = stored->findings.size() + (from_agent ? slowdowns.size() : 0);
  IsolateInputParts parts = context.Parts();
  // The measured slowdown first, so the reason quotes it (the isolator's order is its own).
  parts.findings = std::move(slowdowns);
  for (Finding& f : stored->findings) parts.findings.push_back(std::move(f));
  parts.window = {.since_ns = query.since_ns, .until_ns = query.until_ns};
  // Never a synthetic slowdown: a node is slow when measured so, not because it was asked.
  parts.slowdown_reported = false;
  const auto slow = std::find_if(parts.findings.begin(), parts.findings.end(), IsSlowdownFinding);
  if (slow != parts.findings.end()) {
    answer.status = WhySlowStatus::kSlowdown;
    answer.reason = "slowdown seen: " + slow->summary +
                    (from_agent ? " (the agent's stored finding; the window's step times alone did not show it)" : "");
  } else {
    answer.status = WhySlowStatus::kNoSlowdown;
    answer.reason = NoSlowdownReason(query, answer);
  }
  answer.diagnoses = Isolate(BuildIsolateInput(std::move(parts)), options);
  return answer;
}

Json WhySlowJson(const std::string& node, const WhySlowAnswer& answer) {
  const std::vector<Diagnosis>& dx = answer.diagnoses;
  Json j{
      {"node", node}, {"status", std::string(ToString(answer.status))}, {"reason", answer.reason}, {"diagnoses", dx}};
  j["primary"] = dx.empty() ? Json{{"fault_class", "none"}, {"action", "none"}} : Json(dx.front());
  if (!answer.store_nodes.empty()) j["store_nodes"] = answer.store_nodes;
  return j;
}

}  // namespace faultline::daemon
