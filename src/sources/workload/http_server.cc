#include "sources/workload/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>

#include <charconv>
#include <cstdlib>
#include <mutex>

#include "parse/text.h"
#include "sources/redfish/credentials.h"
#include "sources/workload/queue.h"

namespace faultline {
namespace {

constexpr size_t kMaxTokenBytes = 4096;

bool IsLoopbackHost(const std::string& host) {
  // An IPv4 literal in 127.0.0.0/8 (inet_pton: the dotted quad only, so "127.evil.example"
  // is a name), ::1, and the name every resolver maps to them. Any other name may resolve
  // to a routable address, so it counts as "not loopback".
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return host == "::1" || host == "localhost";
}

Result<int> ParsePort(std::string_view text, std::string_view whole, std::string_view what) {
  int port = -1;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || port < 0 || port > 65535) {
    return Status(StatusCode::kInvalidArgument, std::string(what) + " listen address \"" +
                                                    std::string(whole.substr(0, 80)) +
                                                    "\": expected HOST:PORT with a port 0..65535");
  }
  return port;
}

// Compares without an early exit, so the time taken does not tell how much matched.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

Result<std::string> CheckToken(std::string token, const std::string& where, std::string_view what) {
  token = std::string(Trim(token));
  if (token.empty()) return Status(StatusCode::kInvalidArgument, std::string(what) + " token in " + where + " is empty");
  for (char c : token) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
      return Status(StatusCode::kInvalidArgument,
                    std::string(what) + " token in " + where + " has blanks or control characters");
    }
  }
  return token;
}

}  // namespace

Result<ListenAddress> ParseListenAddress(std::string_view text, std::string_view what) {
  text = Trim(text);
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || (text.front() != '[' && text.find(':') != colon)) {
    // A bare port, or an unbracketed IPv6 address (ambiguous: refused below).
    if (colon != std::string_view::npos) {
      return Status(StatusCode::kInvalidArgument, std::string(what) + " listen address \"" +
                                                      std::string(text.substr(0, 80)) +
                                                      "\": write IPv6 addresses as [ADDR]:PORT");
    }
    auto port = ParsePort(text, text, what);
    if (!port.ok()) return port.status();
    return ListenAddress{"127.0.0.1", *port, true};
  }
  std::string host(text.substr(0, colon));
  auto port = ParsePort(text.substr(colon + 1), text, what);
  if (!port.ok()) return port.status();
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";  // ":9464": loopback by default
  return ListenAddress{host, *port, IsLoopbackHost(host)};
}

Result<std::vector<std::string>> CheckListenPolicy(const ListenAddress& address, bool has_token) {
  if (address.loopback) return std::vector<std::string>{};
  const std::string where = address.host + ":" + std::to_string(address.port);
  if (!has_token) {
    return Status(StatusCode::kInvalidArgument,
                  "workload endpoint on " + where +
                      " is not loopback: set a bearer token (workload.token_file or workload.token_env) or listen on "
                      "127.0.0.1");
  }
  return std::vector<std::string>{"workload endpoint listens on " + where +
                                  " (not loopback): reachable from the network, bearer token required"};
}

Result<std::vector<std::string>> CheckBoundPolicy(const BoundAddress& bound, bool has_token, std::string_view what,
                                                  std::string_view hint) {
  if (bound.loopback) return std::vector<std::string>{};
  const std::string where =
      (bound.ip.find(':') != std::string::npos ? "[" + bound.ip + "]" : bound.ip) + ":" + std::to_string(bound.port);
  if (!has_token) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(what) + " bound to " + where + ", which is not a loopback address: " + std::string(hint));
  }
  return std::vector<std::string>{std::string(what) + " listens on " + where +
                                  " (not loopback): reachable from the network, bearer token required"};
}

Result<std::string> LoadBearerToken(const std::string& file, const std::string& env_var, std::string_view what) {
  if (!file.empty()) {
    // The messages of the shared reader name the file and the fault, never its content.
    auto line = redfish::ReadPasswordFile(file);
    if (!line.ok()) return Status(line.status().code(), std::string(what) + " token: " + line.status().message());
    if (line->size() > kMaxTokenBytes)
      return Status(StatusCode::kInvalidArgument, std::string(what) + " token file " + file + " is too large");
    return CheckToken(*line, "file " + file, what);
  }
  if (!env_var.empty()) {
    const char* v = std::getenv(env_var.c_str());
    if (v == nullptr)
      return Status(StatusCode::kNotFound,
                    "environment variable " + env_var + " (" + std::string(what) + " token) is not set");
    if (std::string_view(v).size() > kMaxTokenBytes) {
      return Status(StatusCode::kInvalidArgument, std::string(what) + " token in $" + env_var + " is too large");
    }
    return CheckToken(v, "$" + env_var, what);
  }
  return std::string();
}

bool BearerTokenMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kBearer = "Bearer ";
  if (token.empty() || authorization.size() <= kBearer.size() || !StartsWith(authorization, kBearer)) return false;
  return SameSecret(authorization.substr(kBearer.size()), token);
}

namespace {

GuardedServerOptions GuardOptions(const WorkloadServerOptions& o) {
  GuardedServerOptions g;
  g.threads = o.threads;
  g.queue_capacity = o.connection_queue;
  g.busy_capacity = o.busy_connections;
  g.idle_timeout_ms = o.idle_timeout_ms;
  g.request_timeout_ms = o.request_timeout_ms;
  g.read_timeout_ms = o.read_timeout_ms;
  g.write_timeout_ms = o.write_timeout_ms;
  // The request line and headers (cpp-httplib caps each line at 8 KiB), then the body.
  g.max_request_bytes = 64 * 1024 + o.http.max_body_bytes;
  g.busy_body = R"({"error":"server busy, retry later"})";
  return g;
}

}  // namespace

struct WorkloadHttpServer::Impl {
  Impl(WorkloadServerOptions o, const Clock& c)
      : options(std::move(o)), clock(c), queue(options.queue_capacity), guard(GuardOptions(options)) {}

  void Count(const HttpReply& reply) {
    std::lock_guard<std::mutex> lock(mu);
    switch (reply.outcome) {
      case WorkloadOutcome::kAccepted:
        ++stats.accepted;
        stats.reports += reply.reports;
        break;
      case WorkloadOutcome::kMalformed:
        ++stats.malformed;
        break;
      case WorkloadOutcome::kUnauthorized:
        ++stats.unauthorized;
        break;
      case WorkloadOutcome::kOtherNode:
        ++stats.other_node;
        break;
      case WorkloadOutcome::kTooLarge:
        ++stats.too_large;
        break;
      case WorkloadOutcome::kUnavailable:
        ++stats.unavailable;
        break;
    }
  }

  bool Authorized(const httplib::Request& req) const {
    return options.token.empty() || BearerTokenMatches(req.get_header_value("Authorization"), options.token);
  }

  // Without a token the endpoint is loopback only, and a page that rebinds its own name to
  // 127.0.0.1 still sends that name as Host: only loopback names are answered.
  httplib::Server::HandlerResponse CheckHost(const httplib::Request& req, httplib::Response& res) {
    const bool cross_site = !IsAllowedOrigin(req.get_header_value("Origin"));
    if (!options.token.empty() || (!cross_site && IsLoopbackHostHeader(req.get_header_value("Host")))) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const bool missing = !req.has_header("Host");
    res.status = cross_site ? 403 : missing ? 400 : 421;
    const char* error =
        cross_site ? "without a token this endpoint takes no report from another site's page (Origin is not loopback)"
        : missing  ? "a Host header is required"
                   : "without a token this endpoint answers only a loopback Host (127.0.0.1, localhost, [::1])";
    res.set_content(std::string(R"({"error":")") + error + "\"}", "application/json");
    std::lock_guard<std::mutex> lock(mu);
    ++stats.misdirected;
    return httplib::Server::HandlerResponse::Handled;
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    HttpReply reply;
    if (!Authorized(req)) {
      reply = {401, R"({"error":"missing or wrong bearer token"})", WorkloadOutcome::kUnauthorized, 0};
      res.set_header("WWW-Authenticate", "Bearer");
    } else {
      reply = HandleWorkloadPost(req.body, options.http, clock,
                                 [this](std::vector<Observation> obs) { return queue.Push(std::move(obs)); });
    }
    Count(reply);
    res.status = reply.status;
    res.set_content(reply.body, "application/json");
  }

  void Configure() {
    httplib::Server& server = guard.http();
    server.set_payload_max_length(options.http.max_body_bytes);
    server.set_pre_routing_handler(
        [this](const httplib::Request& req, httplib::Response& res) { return CheckHost(req, res); });
    server.Post(options.http.path, [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
  }

  WorkloadServerOptions options;
  const Clock& clock;
  ObservationQueue queue;
  GuardedHttpServer guard;
  bool started = false;
  int port = 0;
  mutable std::mutex mu;
  WorkloadServerStats stats;
};

WorkloadHttpServer::WorkloadHttpServer(WorkloadServerOptions options, const Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}

WorkloadHttpServer::~WorkloadHttpServer() { Stop(); }

Result<std::vector<std::string>> WorkloadHttpServer::Start() {
  Impl& m = *impl_;
  // httplib's server cannot be restarted: one Start per object.
  if (m.started) return Status(StatusCode::kInvalidArgument, "workload endpoint already started");
  auto address = ParseListenAddress(m.options.listen);
  if (!address.ok()) return address.status();
  const bool has_token = !m.options.token.empty();
  auto warnings = CheckListenPolicy(*address, has_token);
  if (!warnings.ok()) return warnings.status();
  m.started = true;
  m.Configure();
  auto bound = m.guard.Bind(address->host, address->port, "workload");
  if (!bound.ok()) return bound.status();
  // A name that read as loopback but bound elsewhere is caught here (with a token, the
  // name check above already warned about anything that is not loopback by name).
  auto policy =
      CheckBoundPolicy(*bound, has_token, "workload endpoint",
                       "set a bearer token (workload.token_file or workload.token_env) or listen on 127.0.0.1");
  if (!policy.ok()) {
    m.guard.Stop();
    return policy.status();
  }
  if (address->loopback) warnings->insert(warnings->end(), policy->begin(), policy->end());
  if (Status s = m.guard.Serve("workload"); !s.ok()) return s;
  m.port = bound->port;
  return warnings;
}

void WorkloadHttpServer::Stop() { impl_->guard.Stop(); }

bool WorkloadHttpServer::running() const { return impl_->guard.running(); }

int WorkloadHttpServer::port() const { return impl_->port; }

std::vector<Observation> WorkloadHttpServer::Drain() { return impl_->queue.Drain(); }

WorkloadServerStats WorkloadHttpServer::stats() const {
  WorkloadServerStats out;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    out = impl_->stats;
  }
  const GuardedServerStats guard = impl_->guard.stats();
  out.busy = guard.busy;
  out.timed_out = guard.timed_out;
  return out;
}

}  // namespace faultline
