// A cpp-httplib server that slow, idle or hostile clients cannot hold: the transport under
// the workload endpoint (http_server.h) and the HTTP API (api/server.h).
//
// Why not cpp-httplib's own loop: Debian bookworm ships 0.11.4, whose timeouts bound each
// read, not a request (a client sending a byte every few seconds holds a worker for ever),
// whose thread pool queues accepted connections without bound, and which reads headers
// without counting them. Here cpp-httplib parses and routes; this class accepts, admits
// and times out:
//   - admission: `threads` workers serve one request per connection; `queue_capacity`
//     accepted connections wait for them. Past that a plain-HTTP connection is answered
//     503 (busy_body, Retry-After) at once by the accepting thread without being read, and
//     one closer thread drains it briefly so the client can read the answer (at most
//     `busy_capacity` at once; past that, and always for TLS, it is closed at once).
//     Accepting never waits for a worker, and the listen backlog is 1024 (cpp-httplib's is 5).
//   - deadlines, counted from accept: the first byte within idle_timeout, the whole request
//     (TLS handshake, request line, headers, body) within request_timeout; each wait for
//     more bytes at most read_timeout, each write at most write_timeout. A connection that
//     waited in the queue past its deadline is closed by the worker that reaches it unless
//     its request has already arrived (queueing is the server's delay, not the client's).
//   - at most max_request_bytes read from one connection: past that the request fails
//     (cpp-httplib answers 400 or closes).
//   - TLS (cert_file and key_file) through OpenSSL, TLS 1.2 or newer, under the same deadlines.
//   - Bind() reports the address actually bound after name resolution, so callers decide
//     "loopback" from the socket (CheckBoundPolicy in http_server.h), never from the name.
//
// Routes and hooks are set on http() before Serve(); its task queue, socket options and
// timeouts belong to this class and must not be changed.
//
// Thread-safety: http(), Bind, Serve and Stop from one thread; stats() from any.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace faultline {

struct GuardedServerOptions {
  size_t threads = 4;
  size_t queue_capacity = 32;  // accepted connections waiting for a worker
  size_t busy_capacity = 64;   // connections answered 503 and being drained
  int64_t idle_timeout_ms = 2000;
  int64_t request_timeout_ms = 10000;
  int64_t read_timeout_ms = 5000;
  int64_t write_timeout_ms = 5000;
  size_t max_request_bytes = 64 * 1024;
  std::string busy_body = R"({"error":"server busy, retry later","status":503})";  // JSON
  int retry_after_s = 1;
  std::string cert_file;  // both set: HTTPS
  std::string key_file;
};

struct GuardedServerStats {
  uint64_t connections = 0;  // handed to a worker
  uint64_t busy = 0;         // answered 503 without a worker
  uint64_t dropped = 0;      // closed unanswered: the closer full, or TLS while busy
  uint64_t timed_out = 0;    // closed at a deadline (idle, request, read or write)
};

// Where a listening socket is bound, read back from the socket.
struct BoundAddress {
  std::string ip;  // numeric: "127.0.0.1", "::1", "0.0.0.0"
  int port = 0;
  bool loopback = false;  // 127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104
};

// A Host header naming this machine's loopback: "localhost", an IPv4 literal in 127.0.0.0/8
// or "[::1]", each with an optional ":port". Names that merely start with "127." do not
// count. A server without a token answers only these, so a DNS-rebinding page (whose
// requests carry its own host name) cannot read it.
bool IsLoopbackHostHeader(std::string_view host);
// A request's Origin header allows it on a server without a token: absent (curl, scripts,
// the agent's own clients send none) or a loopback origin ("http://127.0.0.1:9465", the
// dashboard's own page). A browser sends its page's origin with every cross-site POST, so a
// page on any other site cannot plant a workload report or start an analysis (CSRF), which
// the Host check alone allows: such a request's Host is loopback. "null" is refused.
bool IsAllowedOrigin(std::string_view origin);

class GuardedHttpServer {
 public:
  explicit GuardedHttpServer(GuardedServerOptions options);
  ~GuardedHttpServer();  // Stop()
  GuardedHttpServer(const GuardedHttpServer&) = delete;
  GuardedHttpServer& operator=(const GuardedHttpServer&) = delete;

  httplib::Server& http();

  // Loads the certificate and key when set, then resolves and binds host:port (port 0: a
  // free one) and returns what the socket is bound to. kNotFound for an unreadable
  // cert/key, kInvalidArgument for an unusable pair or only one of them, kUnavailable when
  // nothing can be bound. Nothing stays bound on error. `what` names the server in messages.
  Result<BoundAddress> Bind(const std::string& host, int port, std::string_view what);
  // Starts accepting and serving on its own threads; returns once the accept loop runs.
  Status Serve(std::string_view what);
  // Stops accepting, lets each worker finish its connection (bounded by the deadlines),
  // closes queued and draining connections, joins the threads; releases a socket bound
  // but never served. Idempotent.
  void Stop();
  bool running() const;
  bool tls() const;
  GuardedServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
