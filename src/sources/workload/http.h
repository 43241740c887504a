// The HTTP push form of the workload signal: a job POSTs one report (report.h) as a
// JSON object, or several as JSON/key=value lines, to the agent. The request is
// all-or-nothing: any bad line rejects the whole body (400, nothing delivered), so a
// job's retry never half-duplicates a batch.
//
// Replies (JSON body): 202 {"accepted":N}; 400 {"error":...} malformed; 413 body too
// large; 503 the sink refused (queue full; retry later).
//
// This file has no HTTP library in it: http_mount.h adapts it to a cpp-httplib server.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "sources/workload/report.h"

namespace faultline {

struct WorkloadHttpOptions {
  std::string path = "/v1/workload";  // where http_mount.h mounts the handler
  std::string node;                   // this agent's node: default for reports without one
  size_t max_body_bytes = 1 << 20;
  size_t max_reports_per_request = 1000;
  WorkloadParseOptions parse;
};

// Receives each accepted request's observations; may be called from several server
// threads at once (ObservationQueue::Push is a suitable sink).
using ObservationSink = std::function<Status(std::vector<Observation>)>;

struct HttpReply {
  int status = 200;
  std::string body;  // JSON
};

HttpReply HandleWorkloadPost(std::string_view body, const WorkloadHttpOptions& options, const Clock& clock,
                             const ObservationSink& sink);

}  // namespace faultline
