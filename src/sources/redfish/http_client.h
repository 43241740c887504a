// The HTTP touchpoint of the Redfish source (STYLE.md rule 4): a narrow interface with
// the libcurl implementation (curl_http_client.h) and a fake for unit tests
// (fake_http_client.h). Everything above it (auth, retries, the walk) is testable
// without a network.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace faultline::redfish {

struct HttpRequest {
  std::string method = "GET";
  std::string url;  // absolute: https://host:port/redfish/v1/...
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int64_t timeout_ms = 10'000;  // whole request (Send) or whole stream (Stream)
  // Set by another thread to abandon the request early (shutdown); may be null.
  const std::atomic<bool>* cancel = nullptr;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Contract for implementations:
//  - Any HTTP status is a successful Send (the caller interprets 4xx/5xx).
//  - Failures: kTimeout (deadline or stalled peer), kUnavailable (connect/TLS/reset,
//    cancelled), kCorrupt (truncated body, body over the size limit).
//  - Thread-safe: several requests may run at once.
//  - Never logs headers or bodies (they carry credentials and tokens).
class HttpClient {
 public:
  virtual ~HttpClient() = default;
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
  // Streams a response body (Server-Sent Events): `on_data` gets each chunk as it
  // arrives and returns false to stop. Returns the final HTTP status (0 when none), or
  // an error when the stream broke. A stream that ends on its own is not an error.
  virtual Result<int> Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data) = 0;
};

}  // namespace faultline::redfish
