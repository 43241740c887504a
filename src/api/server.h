// The HTTP server for the API and /metrics (docs/api.md): ApiHandler on a cpp-httplib
// socket, hardened like the workload endpoint (sources/workload/http_server.h):
//   - listens on 127.0.0.1:9465 by default (not 9400: dcgm-exporter holds it on GPU
//     nodes); any non-loopback address needs a token and
//     Start() returns a warning to log;
//   - HTTPS when cert_file and key_file are given (cpp-httplib SSLServer);
//   - a fixed pool of worker threads with a bounded queue of accepted connections; when
//     the queue is full a connection goes to a one-thread "busy" lane that answers 503
//     at once (when that is full too, accepting waits: the kernel's backlog holds the rest);
//   - every socket read waits at most read_timeout, every write at most write_timeout,
//     and a response not fully written by response_deadline is cut, so a client that
//     stops reading holds one worker for a bounded time and never the caller (the agent);
//   - one request per connection; request line <= 8 KiB (cpp-httplib: 414), at most
//     max_headers headers of max_header_bytes in all (431), bodies <= api.max_body_bytes (413);
//   - one log line per request at debug (method, path without query, status): never a
//     header, the query or the token.
//
// Embedding (the agent, later): build a DataProvider over its live state, then
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
  size_t queue_capacity = 32;  // accepted connections waiting for a worker
  size_t busy_queue_capacity = 64;
  int64_t read_timeout_ms = 5000;
  int64_t write_timeout_ms = 5000;
  int64_t response_deadline_ms = 30000;
  size_t max_headers = 64;
  size_t max_header_bytes = 16384;
  ApiOptions api;  // includes the bearer token ("" = none)
};

struct ServerStats {
  uint64_t requests = 0;      // answered by a worker
  uint64_t busy = 0;          // answered 503 by the busy lane
  uint64_t cut = 0;           // responses cut at the deadline or a failed write
  uint64_t unauthorized = 0;  // 401 and 403
};

class Server {
 public:
  // `provider` (and `logger`, may be null) must outlive the server.
  Server(DataProvider& provider, ServerOptions options, daemon::Logger* logger);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Checks the policy, binds and starts serving. Returns warnings to log (a non-loopback
  // address). kInvalidArgument for a bad address, a missing token off loopback, or only
  // one of cert/key; kNotFound for an unreadable cert/key; kUnavailable when the address
  // cannot be bound. Nothing is bound on error. One Start per object.
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
