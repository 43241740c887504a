// The HTTP API's routes as a pure function from a request to a response (no sockets),
// so they are tested and fuzzed without a server; api/server.h puts them on a socket.
// Routes, parameters, JSON shapes and errors: docs/api.md.
//
// JSON: diagnoses, findings and observations use core/json.h's to_json (the CLI's
// --json shapes), with the row's "id" added; /why-slow is exactly `faultline why-slow
// --json`. Errors are {"error": message, "status": code} plus "param" for a bad
// parameter. Lists are paged: at most `limit` rows and at most max_response_bytes of
// JSON per page (always at least one row), with "next_cursor" to continue.
//
// Analyses (/why-slow, /ask) are bounded (AnalysisLimits: a window of at most a day, the
// newest 50 000 observations of it; "capped" in the answer says what was bounded) and run
// at most max_concurrent_analyses at a time: past that 503 with Retry-After, so requests
// cannot pile analyses onto the agent's store and memory.
//
// Auth: with a token set, every route needs "Authorization: Bearer <token>" (401 when
// absent or not Bearer, 403 when wrong). POST routes always need the token; without one
// configured they answer 403. The token is never put in a response or a log line.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/metrics.h"
#include "api/provider.h"
#include "api/query.h"

namespace faultline::api {

struct ApiRequest {
  std::string method;         // "GET", "POST", ...
  std::string path;           // "/api/v1/observations" (no query)
  std::string query;          // raw, after '?' (not decoded)
  std::string authorization;  // the Authorization header, "" when absent
  std::string body;
};

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct ApiOptions {
  PageLimits page;
  QueryLimits query;
  size_t max_response_bytes = size_t{4} << 20;  // per page of a list (a single row may exceed it)
  size_t max_record_scan = 50'000;              // findings/diagnoses/actions read to page through
  size_t max_observation_scan = 100'000;        // rows read to step past one cursor instant
  size_t max_body_bytes = 4096;                 // POST bodies (the ack note)
  AnalysisLimits analysis;                      // /why-slow and /ask
  size_t max_concurrent_analyses = 1;
  std::string token;  // "" = none
  MetricsOptions metrics;
};

class ApiHandler {
 public:
  // `provider` must outlive the handler. Thread-safe if the provider is.
  ApiHandler(DataProvider& provider, ApiOptions options);

  ApiResponse Handle(const ApiRequest& request);

  // {"error": message, "status": status[, "param": param]}
  static ApiResponse Error(int status, std::string_view message, std::string_view param = "");

 private:
  ApiResponse Route(const ApiRequest& request, const QueryParams& params);
  ApiResponse Node(const QueryParams& params);
  ApiResponse Observations(const QueryParams& params);
  ApiResponse Findings(const QueryParams& params);
  ApiResponse Diagnoses(const QueryParams& params);
  ApiResponse Actions(const QueryParams& params);
  ApiResponse DiagnosisById(int64_t id, const QueryParams& params);
  ApiResponse WhySlow(const QueryParams& params);
  ApiResponse Metrics(const QueryParams& params);
  ApiResponse Acknowledge(int64_t id, const ApiRequest& request, const QueryParams& params);
  ApiResponse Ask(const ApiRequest& request, const QueryParams& params);
  ApiResponse Resolve(int64_t id, const ApiRequest& request, const QueryParams& params);
  ApiResponse Reevaluate(const ApiRequest& request, const QueryParams& params);

  DataProvider& provider_;
  ApiOptions options_;
  std::atomic<size_t> analyses_{0};  // why-slow/ask requests running
};

}  // namespace faultline::api
