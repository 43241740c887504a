#include "sources/workload/http.h"

#include <nlohmann/json.hpp>

#include "parse/text.h"

namespace faultline {
namespace {

HttpReply Error(int status, const std::string& message) {
  nlohmann::json j{{"error", message}};
  return {status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

}  // namespace

HttpReply HandleWorkloadPost(std::string_view body, const WorkloadHttpOptions& options, const Clock& clock,
                             const ObservationSink& sink) {
  if (body.size() > options.max_body_bytes) {
    return Error(413, "body larger than " + std::to_string(options.max_body_bytes) + " bytes");
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
      return Error(413, "more than " + std::to_string(options.max_reports_per_request) + " reports");
    }
    auto report = ParseWorkloadReport(line, options.parse);
    if (!report.ok()) return Error(400, "line " + std::to_string(line_no) + ": " + report.status().message());
    for (auto& o : WorkloadObservations(*report, line, options.node, now)) out.push_back(std::move(o));
  }
  if (reports == 0) return Error(400, "empty body");
  if (Status s = sink(std::move(out)); !s.ok()) {
    return Error(s.code() == StatusCode::kUnavailable ? 503 : 500, s.message());
  }
  return {202, nlohmann::json{{"accepted", reports}}.dump()};
}

}  // namespace faultline
