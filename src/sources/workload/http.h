// The HTTP push form of the workload signal: a job POSTs one report (report.h) as a
// JSON object, or several as JSON/key=value lines, to the agent. The request is
// all-or-nothing: any bad line rejects the whole body (400, nothing delivered), so a
// job's retry never half-duplicates a batch.
//
// Replies (JSON body): 202 {"accepted":N}; 400 {"error":...} malformed; 403 a report
// names another node (this agent speaks only for its own: a job pointed at the wrong
// agent must not plant data on it); 413 body too large; 503 the sink refused (queue
// full; retry later). Reports without a node are this agent's node.
//
// This file has no HTTP library in it: http_server.h serves it (hardened) over HTTP.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "sources/workload/report.h"

namespace faultline {

struct WorkloadHttpOptions {
  std::string path = "/v1/workload";  // where http_server.h serves the handler
  std::string node;                   // this agent's node: the default, and the only one accepted
  size_t max_body_bytes = 1 << 20;
  size_t max_reports_per_request = 1000;
  WorkloadParseOptions parse;
};

// Receives each accepted request's observations; may be called from several server
// threads at once (ObservationQueue::Push is a suitable sink).
using ObservationSink = std::function<Status(std::vector<Observation>)>;

// Why a request was answered as it was, for counting (http_server.h).
enum class WorkloadOutcome { kAccepted, kMalformed, kUnauthorized, kOtherNode, kTooLarge, kUnavailable };

struct HttpReply {
  int status = 200;
  std::string body;  // JSON
  WorkloadOutcome outcome = WorkloadOutcome::kAccepted;
  size_t reports = 0;  // accepted reports
};

HttpReply HandleWorkloadPost(std::string_view body, const WorkloadHttpOptions& options, const Clock& clock,
                             const ObservationSink& sink);

}  // namespace faultline
