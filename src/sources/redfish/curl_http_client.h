// libcurl implementation of HttpClient. One easy handle per request (no shared state,
// so concurrent requests need no locking). TLS verification is on unless `insecure`.
#pragma once

#include <string>

#include "sources/redfish/http_client.h"

namespace faultline::redfish {

struct CurlOptions {
  std::string ca_file;    // PEM bundle to trust instead of the system store (--ca)
  bool insecure = false;  // skip certificate and host verification (--insecure)
  int64_t connect_timeout_ms = 5'000;
  size_t max_body_bytes = 32u << 20;  // BMC resources are KBs; a larger body is hostile
};

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(CurlOptions options);
  Result<HttpResponse> Send(const HttpRequest& request) override;
  Result<int> Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data) override;

 private:
  CurlOptions options_;
};

}  // namespace faultline::redfish
