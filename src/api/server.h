// The HTTP server for the API and /metrics (docs/api.md): ApiHandler on the guarded
// cpp-httplib server the workload endpoint uses too (sources/workload/guarded_http_server.h):
//   - listens on 127.0.0.1:9465 by default (not 9400: dcgm-exporter holds it on GPU
//     nodes); whether it is loopback is decided on the address actually bound, and
//     anything else needs a token and Start() returns a warning to log;
//   - without a token, only requests whose Host is a loopback name (localhost, 127.x.y.z,
//     [::1], any port) are answered: 421 otherwise, 400 without a Host, so a DNS-rebinding
//     page cannot read the node's telemetry;
//   - HTTPS when cert_file and key_file are given (OpenSSL, TLS 1.2 or newer);
//   - `threads` workers and a queue of `queue_capacity` accepted connections; past that a
//     connection is answered 503 + Retry-After at once without being read (up to
//     `busy_queue_capacity` being drained; past that, closed unanswered). Accepting never
//     waits;
//   - a request's first byte must arrive within idle_timeout and the whole request within
//     request_timeout of accept; every wait for bytes is at most read_timeout, every write
//     at most write_timeout, and a response not fully written by response_deadline is cut,
//     so a slow, idle or non-reading client holds one worker for a bounded time and never
//     the caller (the agent);
//   - one request per connection; request line <= 8 KiB (cpp-httplib: 414), at most
//     max_headers headers of max_header_bytes in all (431), bodies <= api.max_body_bytes
//     (413), and no more than those bytes read from a connection;
//   - one log line per request at debug (method, path without query, status): never a
//     header, the query or the token.
//
// Embedding (the agent): build a DataProvider over its live state, then
//   api::Server server(provider, options, &logger); auto warnings = server.Start(); ...
//   server.Stop();
// Start() returns at once; requests run on the server's own threads.
//
// Thread-safety: Start/Stop from one thread; stats() from any.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/handlers.h"
#include "api/provider.h"
#include "core/status.h"

namespace faultline::daemon {
class Logger;
}

namespace faultline::api {

struct ServerOptions {
  std::string listen = "127.0.0.1:9465";
  std::string cert_file;  // both set: HTTPS
  std::string key_file;
  size_t threads = 4;
  size_t queue_capacity = 32;          // accepted connections waiting for a worker
  size_t busy_queue_capacity = 64;     // connections answered 503 and being drained
  int64_t idle_timeout_ms = 2000;      // the request's first byte, from accept
  int64_t request_timeout_ms = 10000;  // the whole request, from accept
  int64_t read_timeout_ms = 5000;
  int64_t write_timeout_ms = 5000;
  int64_t response_deadline_ms = 30000;
  size_t max_headers = 64;
  size_t max_header_bytes = 16384;
  ApiOptions api;  // includes the bearer token ("" = none)
};

struct ServerStats {
  uint64_t requests = 0;      // answered by a worker
  uint64_t busy = 0;          // answered 503 at accept: no worker free
  uint64_t cut = 0;           // responses cut at the deadline or a failed write
  uint64_t unauthorized = 0;  // 401 and 403
  uint64_t misdirected = 0;   // 400/421: no token, and a Host that is not a loopback name
  uint64_t dropped = 0;       // connections closed unanswered (every busy slot taken)
  uint64_t timed_out = 0;     // connections closed at a deadline (idle, slow or stalled)
};

class Server {
 public:
  // `provider` (and `logger`, may be null) must outlive the server.
  Server(DataProvider& provider, ServerOptions options, daemon::Logger* logger);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Checks the policy, binds, checks the bound address and starts serving. Returns
  // warnings to log (a non-loopback address). kInvalidArgument for a bad address, a missing
  // token off loopback (by name, or once bound), or only one of cert/key; kNotFound for an
  // unreadable cert/key; kUnavailable when the address cannot be bound. Nothing is bound on
  // error. One Start per object.
  Result<std::vector<std::string>> Start();
  // Stops accepting, finishes requests in flight (bounded by the timeouts), joins. Idempotent.
  void Stop();
  int port() const;  // the bound port (useful with port 0)
  bool tls() const;
  ServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline::api
