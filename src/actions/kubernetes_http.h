// The HTTP touchpoint of the Kubernetes actuator: one request to the API server through
// the shared libcurl client (redfish::CurlHttpClient), with the bearer token and/or the
// client certificate, the configured trust (CA file, CA PEM data or, when explicitly
// configured, no verification), https only for an https server, no redirects and a
// whole-request timeout. Never logs; the token is only ever placed in the Authorization
// header.
#pragma once

#include <cstdint>
#include <string>

#include "actions/kube_config.h"
#include "core/status.h"

namespace faultline::actions {

struct KubeHttpResponse {
  int status = 0;
  std::string body;
};

struct KubeHttpLimits {
  int64_t timeout_ms = 10'000;
  int64_t connect_timeout_ms = 5'000;
  size_t max_body_bytes = 64u << 20;
};

// `path` starts with "/" and is appended to config.server. Any HTTP status is a success
// here; failures are kTimeout, kUnavailable (connect, TLS, reset, a scheme not allowed)
// and kCorrupt (body over the limit or truncated); kInvalidArgument / kNotFound when the
// token or certificate files cannot be read.
Result<KubeHttpResponse> KubeRequest(const KubeConfig& config, const KubeHttpLimits& limits, const std::string& method,
                                     const std::string& path, const std::string& content_type, const std::string& body);

}  // namespace faultline::actions
