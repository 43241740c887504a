// One BMC connection: authentication, per-BMC limits and retries on top of HttpClient.
// The collector (redfish_collector.h) walks resources through it.
//
// Auth: AuthMode::kSession POSTs SessionService/Sessions and sends X-Auth-Token; if the
// BMC has no session service (404/405/501) or stays full (503 after the retries), it
// falls back to Basic with a warning. Logout() DELETEs the session (also called by the
// destructor), so a shutdown never leaks one of the BMC's few session slots.
// Limits: at most max_in_flight requests at once, each bounded by request_timeout_ms and
// by the caller's deadline; retries with exponential back-off on timeouts, 5xx and
// connection errors (never past the deadline); a 401 on a session re-logs in once.
// Credentials stay with the BMC: every request goes to the base URL's origin (scheme,
// host, port). An absolute link (@odata.id, nextLink), a session Location or an SSE URI
// on any other origin is refused with kPermissionDenied before anything is sent, and so
// is plain http unless allow_http is set (then with a warning).
// Bodies nested deeper than kMaxBmcJsonDepth are refused before parsing (kCorrupt).
// Thread-safe: Get() may be called from several collector workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "sources/redfish/credentials.h"
#include "sources/redfish/http_client.h"

namespace faultline::redfish {

enum class AuthMode { kSession, kBasic, kNone };

struct RedfishClientOptions {
  std::string base_url;  // "https://bmc:443" (no trailing /redfish/v1)
  Credentials credentials;
  AuthMode auth = AuthMode::kSession;
  int max_in_flight = 2;  // BMCs are slow and small: a few requests at most
  int64_t request_timeout_ms = 10'000;
  int retries = 2;           // extra attempts after the first
  int64_t backoff_ms = 250;  // first back-off; doubles each retry
  int session_retries = 3;   // 503 "session limit" attempts before Basic
  // Plain http sends credentials and tokens in clear: refused unless set (lab BMCs).
  bool allow_http = false;
};

// "https://Host:443/x" -> "https://host:443" (scheme and host lower-cased, default port
// made explicit); kInvalidArgument for anything that is not http(s)://host[:port][/...]
// or that carries user info ("https://bmc@evil/"), which curl would read differently.
Result<std::string> UrlOrigin(std::string_view url);

class RedfishClient {
 public:
  RedfishClient(HttpClient& http, const Clock& clock, RedfishClientOptions options);
  ~RedfishClient();
  RedfishClient(const RedfishClient&) = delete;
  RedfishClient& operator=(const RedfishClient&) = delete;

  // Establishes auth (a no-op for kBasic/kNone). kPermissionDenied on bad credentials.
  Status Login(int64_t deadline_mono_ns);
  // GET `path` ("/redfish/v1/...", or an absolute URL on the same BMC) as JSON.
  // kNotFound for 404, kCorrupt for malformed JSON, kTimeout past the deadline.
  Result<nlohmann::json> Get(const std::string& path, int64_t deadline_mono_ns);
  // The same request, the body unparsed (for a caller that reads it as a stream:
  // collection_page.h). Errors as Get's, less kCorrupt for the JSON.
  Result<std::string> GetText(const std::string& path, int64_t deadline_mono_ns);
  // DELETEs the session, if any. Idempotent.
  void Logout();

  // The headers Get() sends (auth included); for the SSE stream.
  std::vector<std::pair<std::string, std::string>> AuthHeaders() const;
  // The absolute URL for `path` ("/redfish/v1/..." or an absolute URL), refused
  // (kPermissionDenied, naming both hosts) when it is not on the BMC's origin, and
  // (kPermissionDenied) when the BMC URL is plain http without allow_http.
  Result<std::string> ResolveUrl(const std::string& path) const;
  HttpClient& http() { return http_; }
  const Clock& clock() const { return clock_; }

  uint64_t requests() const;                // HTTP requests issued (retries included)
  std::vector<std::string> TakeWarnings();  // quirks and fallbacks since the last call
  AuthMode effective_auth() const;
  // Cancels in-flight and future requests (shutdown).
  void Cancel() { cancel_.store(true); }

 private:
  Result<HttpResponse> SendWithRetries(HttpRequest request, int64_t deadline_mono_ns);
  Result<HttpResponse> SendOnce(HttpRequest request, int64_t deadline_mono_ns);
  Status CreateSession(int64_t deadline_mono_ns);
  Status CheckScheme() const;
  void Warn(std::string warning);
  bool Acquire(int64_t deadline_mono_ns);
  void Release();

  HttpClient& http_;
  const Clock& clock_;
  RedfishClientOptions options_;
  std::atomic<bool> cancel_{false};

  mutable std::mutex mu_;
  std::condition_variable slot_free_;
  int in_flight_ = 0;
  uint64_t requests_ = 0;
  AuthMode effective_auth_;
  std::string token_;
  std::string session_uri_;
  std::vector<std::string> warnings_;
  std::string origin_;     // of base_url; empty when base_url is not a usable URL
  Status base_url_error_;  // why base_url is unusable
};

}  // namespace faultline::redfish
