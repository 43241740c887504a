// The workload HTTP endpoint as a running server: binds, serves POST <path> (http.h) on
// its own threads, and queues what it accepts until Drain(). Hardened for a port that
// user jobs (and anyone else on the network) can reach:
//   - binds loopback unless told otherwise; a port alone (":9464") means 127.0.0.1;
//   - any other address needs a bearer token and Start() returns a warning to log;
//   - with a token set, every request needs "Authorization: Bearer <token>" (401 else);
//     the token comes from a file or an environment variable and never appears in any
//     message, log line or reply;
//   - without a token, only requests whose Host is a loopback name are answered (421
//     otherwise, 400 without one), so a DNS-rebinding page cannot post reports;
//   - slow and idle clients cannot hold it (guarded_http_server.h): the request's first
//     byte must come within idle_timeout and the whole request within request_timeout;
//     `threads` workers and `connection_queue` waiting connections, past which a
//     connection is answered 503 at once; one request per connection;
//   - the loopback decision is made again on the address actually bound (a name that
//     resolves elsewhere is refused without a token);
//   - bodies above max_body_bytes are refused (413) before they are read;
//   - reports for another node are refused (403) and counted.
//
// Thread-safety: Start/Stop from one thread; Drain and stats from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "sources/workload/guarded_http_server.h"
#include "sources/workload/http.h"

namespace faultline {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "::1", "0.0.0.0", a name
  int port = 0;      // 0: any free port (tests)
  // What the text claims: an IPv4 literal in 127.0.0.0/8, "::1" or "localhost". Only a
  // first check: where the name really binds decides (CheckBoundPolicy).
  bool loopback = false;
};

// "127.0.0.1:9464", "[::1]:9464", "localhost:9464", "0.0.0.0:9464", and ":9464" or
// "9464" (loopback). kInvalidArgument for anything else (no port, port out of range).
// `what` names the endpoint in messages (shared with the HTTP API, api/server.h).
Result<ListenAddress> ParseListenAddress(std::string_view text, std::string_view what = "workload");

// The bind policy: loopback is fine; anything else needs a token (kInvalidArgument
// naming the address, never the token) and yields a warning to log.
Result<std::vector<std::string>> CheckListenPolicy(const ListenAddress& address, bool has_token);

// The same policy on the address a server actually bound (GuardedHttpServer::Bind), which
// is the one that counts: not loopback without a token is kInvalidArgument naming `what`
// ("workload endpoint", "api server") and ending with `hint` (how to set a token); with a
// token, a warning to log.
Result<std::vector<std::string>> CheckBoundPolicy(const BoundAddress& bound, bool has_token, std::string_view what,
                                                  std::string_view hint);

// The bearer token: from `file` (first line, surrounding blanks removed) when set, else
// from the environment variable `env_var` when set, else "" (no token). The file is read
// as every secret is (redfish::ReadPasswordFile): a regular file that group and others
// cannot access (mode 0600 or stricter; kPermissionDenied otherwise). An unreadable,
// empty or oversized (> 4 KiB) file, a token with control characters or an unset
// variable is an error naming the file/variable; the token itself is never in a message.
Result<std::string> LoadBearerToken(const std::string& file, const std::string& env_var,
                                    std::string_view what = "workload");

// True when `authorization` is "Bearer <token>" with exactly `token` (non-empty), compared
// in constant time so the time taken does not tell how much matched.
bool BearerTokenMatches(std::string_view authorization, std::string_view token);

struct WorkloadServerOptions {
  std::string listen = "127.0.0.1:9464";
  WorkloadHttpOptions http;  // path, this node, body and report caps
  std::string token;         // "" = no token (loopback only)
  int64_t idle_timeout_ms = 2000;      // the request's first byte, from accept
  int64_t request_timeout_ms = 10000;  // the whole request, from accept
  int64_t read_timeout_ms = 5000;      // each wait for more bytes
  int64_t write_timeout_ms = 5000;
  size_t threads = 4;
  size_t connection_queue = 16;    // accepted connections waiting for a worker; past it 503
  size_t busy_connections = 64;    // 503s being drained; past it closed unanswered
  size_t queue_capacity = 100000;  // observations waiting for Drain()
};

// Counters since Start (requests, by outcome).
struct WorkloadServerStats {
  uint64_t accepted = 0;      // requests delivered
  uint64_t reports = 0;       // reports in them
  uint64_t malformed = 0;     // 400
  uint64_t unauthorized = 0;  // 401
  uint64_t other_node = 0;    // 403: reports for another node
  uint64_t too_large = 0;     // 413 decided by the handler (too many reports)
  uint64_t unavailable = 0;   // 503: queue full
  uint64_t misdirected = 0;   // 400/421: no token, and a Host that is not a loopback name
  uint64_t busy = 0;          // 503: no worker free (answered without reading the request)
  uint64_t timed_out = 0;     // connections closed at a deadline (idle, slow or stalled)
};

class WorkloadHttpServer {
 public:
  // `clock` must outlive the server.
  WorkloadHttpServer(WorkloadServerOptions options, const Clock& clock);
  ~WorkloadHttpServer();
  WorkloadHttpServer(const WorkloadHttpServer&) = delete;
  WorkloadHttpServer& operator=(const WorkloadHttpServer&) = delete;

  // Checks the policy, binds and starts serving. Returns the warnings to log (a
  // non-loopback address). kInvalidArgument for a bad address or a missing token,
  // kUnavailable when the address cannot be bound. Nothing is bound on error.
  Result<std::vector<std::string>> Start();
  // Stops accepting, finishes requests in flight, joins the threads. Idempotent.
  void Stop();
  bool running() const;
  int port() const;  // the bound port (useful with port 0)

  std::vector<Observation> Drain();
  WorkloadServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
