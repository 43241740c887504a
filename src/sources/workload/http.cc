#include "sources/workload/http.h"

#include <nlohmann/json.hpp>

#include "parse/text.h"

namespace faultline {
namespace {

HttpReply Error(int status, WorkloadOutcome outcome, const std::string& message) {
  nlohmann::json j{{"error", message}};
  return {status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), outcome, 0};
}

}  // namespace

HttpReply HandleWorkloadPost(std::string_view body, const WorkloadHttpOptions& options, const Clock& clock,
                             const ObservationSink& sink) {
  if (body.size() > options.max_body_bytes) {
    return Error(413, WorkloadOutcome::kTooLarge,
                 "body larger than " + std::to_string(options.max_body_bytes) + " bytes");
  }
  const int64_t now = clock.NowNs();
  std::vector<Observation> out;
  size_t reports = 0, line_no = 0;
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    const std::string_view line = Trim(body.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    if (++reports > options.max_reports_per_request) {
      return Error(413, WorkloadOutcome::kTooLarge,
                   "more than " + std::to_string(options.max_reports_per_request) + " reports");
    }
    auto report = ParseWorkloadReport(line, options.parse);
    if (!report.ok()) {
      return Error(400, WorkloadOutcome::kMalformed,
                   "line " + std::to_string(line_no) + ": " + report.status().message());
    }
    if (!options.node.empty() && !report->node.empty() && report->node != options.node) {
      // The node name comes from the client: quoted by the JSON encoder, never trusted.
      return Error(403, WorkloadOutcome::kOtherNode,
                   "line " + std::to_string(line_no) + ": report for node \"" + report->node.substr(0, 64) +
                       "\"; this agent accepts reports only for \"" + options.node + "\"");
    }
    for (auto& o : WorkloadObservations(*report, line, options.node, now)) out.push_back(std::move(o));
  }
  if (reports == 0) return Error(400, WorkloadOutcome::kMalformed, "empty body");
  if (Status s = sink(std::move(out)); !s.ok()) {
    return Error(s.code() == StatusCode::kUnavailable ? 503 : 500, WorkloadOutcome::kUnavailable, s.message());
  }
  return {202, nlohmann::json{{"accepted", reports}}.dump(), WorkloadOutcome::kAccepted, reports};
}

}  // namespace faultline
