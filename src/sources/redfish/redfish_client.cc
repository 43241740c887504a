#include "sources/redfish/redfish_client.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>

#include "core/time.h"
#include "parse/redfish_map.h"

namespace faultline::redfish {
namespace {

constexpr char kSessions[] = "/redfish/v1/SessionService/Sessions";

bool Retryable(const Result<HttpResponse>& r) {
  if (!r.ok()) return r.status().code() == StatusCode::kTimeout || r.status().code() == StatusCode::kUnavailable;
  return r->status >= 500 && r->status != 501;
}

Status HttpError(int status, const std::string& path) {
  const std::string what = "HTTP " + std::to_string(status) + " for " + path;
  if (status == 404) return Status(StatusCode::kNotFound, what);
  if (status == 401 || status == 403) return Status(StatusCode::kPermissionDenied, what);
  if (status == 503) return Status(StatusCode::kUnavailable, what);
  return Status(StatusCode::kUnavailable, what);
}

bool IsAbsolute(std::string_view path) {
  auto lower_prefix = [&](std::string_view p) {
    if (path.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(path[i])) != p[i]) return false;
    }
    return true;
  };
  return lower_prefix("http://") || lower_prefix("https://") || path.find("://") != std::string_view::npos;
}

}  // namespace

Result<std::string> UrlOrigin(std::string_view url) {
  const size_t colon = url.find("://");
  if (colon == std::string_view::npos) return Status(StatusCode::kInvalidArgument, "not an absolute URL");
  std::string scheme(url.substr(0, colon));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "http" && scheme != "https") {
    return Status(StatusCode::kInvalidArgument, "scheme '" + scheme.substr(0, 16) + "' is not http(s)");
  }
  std::string_view rest = url.substr(colon + 3);
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.empty()) return Status(StatusCode::kInvalidArgument, "URL without a host");
  for (char c : authority) {
    // User info or characters curl and this check could split differently.
    if (c == '@' || c == '\\' || c == ' ' || static_cast<unsigned char>(c) < 0x20) {
      return Status(StatusCode::kInvalidArgument, "URL authority with user info or odd characters");
    }
  }
  std::string host(authority), port;
  const size_t bracket = host.rfind(']');
  const size_t port_colon = host.rfind(':');
  if (port_colon != std::string::npos && (bracket == std::string::npos || port_colon > bracket)) {
    port = host.substr(port_colon + 1);
    host.resize(port_colon);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit)) {
      return Status(StatusCode::kInvalidArgument, "bad port in URL");
    }
  }
  if (host.empty()) return Status(StatusCode::kInvalidArgument, "URL without a host");
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  if (port.empty()) port = scheme == "https" ? "443" : "80";
  return scheme + "://" + host + ":" + std::to_string(std::stoi(port));
}

RedfishClient::RedfishClient(HttpClient& http, const Clock& clock, RedfishClientOptions options)
    : http_(http), clock_(clock), options_(std::move(options)), effective_auth_(options_.auth) {
  while (!options_.base_url.empty() && options_.base_url.back() == '/') options_.base_url.pop_back();
  options_.max_in_flight = std::max(1, options_.max_in_flight);
  auto origin = UrlOrigin(options_.base_url);
  if (origin.ok()) {
    origin_ = *origin;
  } else {
    base_url_error_ = Status(StatusCode::kInvalidArgument, "BMC URL '" + options_.base_url.substr(0, 128) +
                                                               "' is not usable: " + origin.status().message());
  }
  if (origin.ok() && origin_.rfind("http://", 0) == 0 && options_.allow_http) {
    warnings_.push_back(
        "plain http to the BMC allowed: credentials and session tokens cross the network "
        "unencrypted");
  }
}

Status RedfishClient::CheckScheme() const {
  if (!base_url_error_.ok()) return base_url_error_;
  if (origin_.rfind("http://", 0) == 0 && !options_.allow_http) {
    return Status(StatusCode::kPermissionDenied,
                  "refusing plain http to the BMC (" + origin_ +
                      "): credentials would cross the network unencrypted; use https, or allow it explicitly "
                      "(--allow-http / redfish.allow_http)");
  }
  return Status::Ok();
}

Result<std::string> RedfishClient::ResolveUrl(const std::string& path) const {
  if (Status st = CheckScheme(); !st.ok()) return st;
  if (!IsAbsolute(path)) return options_.base_url + (path.empty() || path[0] != '/' ? "/" : "") + path;
  auto origin = UrlOrigin(path);
  if (!origin.ok() || *origin != origin_) {
    return Status(StatusCode::kPermissionDenied, "refusing to send BMC credentials to '" + path.substr(0, 160) +
                                                     "': not the BMC's host (" + origin_ + ")" +
                                                     (origin.ok() ? "" : ": " + origin.status().message()));
  }
  return path;
}

RedfishClient::~RedfishClient() { Logout(); }

std::vector<std::pair<std::string, std::string>> RedfishClient::AuthHeaders() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, std::string>> h = {{"Accept", "application/json"}, {"OData-Version", "4.0"}};
  if (effective_auth_ == AuthMode::kSession && !token_.empty()) {
    h.emplace_back("X-Auth-Token", token_);
  } else if (effective_auth_ == AuthMode::kBasic && !options_.credentials.empty()) {
    h.emplace_back("Authorization", BasicAuthHeader(options_.credentials));
  }
  return h;
}

void RedfishClient::Warn(std::string warning) {
  std::lock_guard<std::mutex> lock(mu_);
  warnings_.push_back(std::move(warning));
}

std::vector<std::string> RedfishClient::TakeWarnings() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(warnings_, {});
}

uint64_t RedfishClient::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

AuthMode RedfishClient::effective_auth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return effective_auth_;
}

bool RedfishClient::Acquire(int64_t deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (in_flight_ >= options_.max_in_flight) {
    const int64_t left = deadline - clock_.MonotonicNs();
    if (left <= 0 || cancel_.load()) return false;
    slot_free_.wait_for(lock, std::chrono::nanoseconds(std::min<int64_t>(left, 50 * kNsPerMs)));
  }
  ++in_flight_;
  ++requests_;
  return true;
}

void RedfishClient::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
  }
  slot_free_.notify_one();
}

Result<HttpResponse> RedfishClient::SendOnce(HttpRequest request, int64_t deadline) {
  if (cancel_.load()) return Status(StatusCode::kUnavailable, "cancelled");
  if (!Acquire(deadline)) return Status(StatusCode::kTimeout, "deadline reached waiting for a request slot");
  const int64_t left_ms = (deadline - clock_.MonotonicNs()) / kNsPerMs;
  request.timeout_ms = std::max<int64_t>(1, std::min(options_.request_timeout_ms, left_ms));
  request.cancel = &cancel_;
  Result<HttpResponse> r = http_.Send(request);
  Release();
  return r;
}

Result<HttpResponse> RedfishClient::SendWithRetries(HttpRequest request, int64_t deadline) {
  int64_t backoff_ms = options_.backoff_ms;
  for (int attempt = 0;; ++attempt) {
    Result<HttpResponse> r = SendOnce(request, deadline);
    if (!Retryable(r) || attempt >= options_.retries || cancel_.load()) return r;
    if (clock_.MonotonicNs() + backoff_ms * kNsPerMs >= deadline) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms *= 2;
  }
}

Status RedfishClient::CreateSession(int64_t deadline) {
  auto url = ResolveUrl(kSessions);
  if (!url.ok()) return url.status();
  HttpRequest req;
  req.method = "POST";
  req.url = *url;
  req.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
  req.body = nlohmann::json{{"UserName", options_.credentials.user}, {"Password", options_.credentials.password}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  int64_t backoff_ms = options_.backoff_ms;
  for (int attempt = 0;; ++attempt) {
    Result<HttpResponse> r = SendOnce(req, deadline);
    if (!r.ok()) return r.status();
    const int code = r->status;
    if (code == 200 || code == 201) {
      std::string token = r->Header("x-auth-token");
      if (token.empty()) return Status(StatusCode::kCorrupt, "session created without X-Auth-Token");
      std::string location = r->Header("location");
      if (auto where = ResolveUrl(location); !location.empty() && !where.ok()) {
        // Logout would DELETE there with the token: keep the token, drop the Location.
        Warn("session Location is not on the BMC's host; it is not used (" + where.status().message() +
             "); the session will expire on the BMC instead of being deleted");
        location.clear();
      }
      std::lock_guard<std::mutex> lock(mu_);
      token_ = token;
      session_uri_ = location;
      effective_auth_ = AuthMode::kSession;
      return Status::Ok();
    }
    if (code == 401 || code == 403) return Status(StatusCode::kPermissionDenied, "BMC refused the credentials");
    // 503: the BMC's session table is full (iDRAC); wait for a slot to free up.
    if (code == 503 && attempt + 1 < options_.session_retries &&
        clock_.MonotonicNs() + backoff_ms * kNsPerMs < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      backoff_ms *= 2;
      continue;
    }
    return HttpError(code, kSessions);
  }
}

Status RedfishClient::Login(int64_t deadline) {
  if (Status st = CheckScheme(); !st.ok()) return st;
  if (options_.auth != AuthMode::kSession) return Status::Ok();
  Status st = CreateSession(deadline);
  if (st.ok() || st.code() == StatusCode::kPermissionDenied || st.code() == StatusCode::kTimeout) return st;
  Warn("session login failed (" + st.message() + "); falling back to Basic auth");
  std::lock_guard<std::mutex> lock(mu_);
  effective_auth_ = AuthMode::kBasic;
  return Status::Ok();
}

Result<nlohmann::json> RedfishClient::Get(const std::string& path, int64_t deadline) {
  auto body = GetText(path, deadline);
  if (!body.ok()) return body.status();
  auto j = ParseBmcJson(*body);
  if (!j.ok()) return Status(StatusCode::kCorrupt, j.status().message() + " at " + path);
  return j;
}

Result<std::string> RedfishClient::GetText(const std::string& path, int64_t deadline) {
  auto url = ResolveUrl(path);
  if (!url.ok()) return url.status();
  HttpRequest req;
  req.url = *url;
  req.headers = AuthHeaders();
  Result<HttpResponse> r = SendWithRetries(req, deadline);
  if (r.ok() && r->status == 401 && effective_auth() == AuthMode::kSession) {
    // The session expired or the BMC restarted: log in again once.
    Warn("session rejected; logging in again");
    if (CreateSession(deadline).ok()) {
      req.headers = AuthHeaders();
      r = SendWithRetries(req, deadline);
    }
  }
  if (!r.ok()) return Status(r.status().code(), r.status().message() + " (" + path + ")");
  if (r->status != 200) return HttpError(r->status, path);
  return std::move(r->body);
}

void RedfishClient::Logout() {
  std::string uri, token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uri = std::exchange(session_uri_, "");
    token = std::exchange(token_, "");
  }
  if (uri.empty() || token.empty()) return;
  auto url = ResolveUrl(uri);
  if (!url.ok()) return;  // checked at login; never send the token elsewhere
  HttpRequest req;
  req.method = "DELETE";
  req.url = *url;
  req.headers = {{"X-Auth-Token", token}};
  req.timeout_ms = options_.request_timeout_ms;
  // Best effort (the BMC expires sessions on its own too), but a BMC has few session slots:
  // one more try when the first fails, since a kept-alive connection the BMC closed while
  // idle (or one a cancelled sweep left) fails the first request sent on it.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto r = http_.Send(req);
    if (r.ok() && (r->status < 500 || r->status >= 600)) return;
  }
}

}  // namespace faultline::redfish
