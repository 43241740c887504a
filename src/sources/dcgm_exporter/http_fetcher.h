// The HTTP touchpoint of the dcgm-exporter source, behind a narrow interface (STYLE.md
// rule 4) so tests can drive the source with canned bodies and the real client can be
// tested against a loopback server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace faultline {

struct HttpGetOptions {
  int64_t timeout_ms = 5000;  // whole request, connect included
  int64_t connect_timeout_ms = 2000;
  size_t max_bytes = 16u << 20;  // body cap; a larger body fails with kCorrupt
  bool verify_tls = true;        // peer and host name; only an explicit operator choice turns it off
  std::string ca_file;           // extra CA bundle (PEM); empty = system store
};

class HttpFetcher {
 public:
  virtual ~HttpFetcher() = default;
  // GETs `url` and returns the body of a 200 answer. Errors: kInvalidArgument (not an
  // http/https URL), kTimeout, kUnavailable (connect/TLS failure, non-200 status),
  // kCorrupt (body over max_bytes). Never follows redirects: the source reads only
  // the URL the operator gave.
  virtual Result<std::string> Get(const std::string& url, const HttpGetOptions& options) = 0;
};

// libcurl implementation. Each Get uses its own easy handle, so one instance may be
// used from several threads. libcurl's global init runs on first use (curl_easy_init
// does it); a program that also uses curl elsewhere should call curl_global_init at
// start-up, before threads exist.
class CurlHttpFetcher final : public HttpFetcher {
 public:
  Result<std::string> Get(const std::string& url, const HttpGetOptions& options) override;
};

}  // namespace faultline
