// The workload HTTP endpoint as a running server: binds, serves POST <path> (http.h) on
// its own threads, and queues what it accepts until Drain(). Hardened for a port that
// user jobs (and anyone else on the network) can reach:
//   - binds loopback unless told otherwise; a port alone (":9464") means 127.0.0.1;
//   - any other address needs a bearer token and Start() returns a warning to log;
//   - with a token set, every request needs "Authorization: Bearer <token>" (401 else);
//     the token comes from a file or an environment variable and never appears in any
//     message, log line or reply;
//   - slow clients are timed out: each read waits at most read_timeout, so a client that
//     sends half a request and stalls is dropped and its thread freed; connections are
//     not kept alive between requests; a fixed number of worker threads;
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
#include "sources/workload/http.h"

namespace faultline {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "::1", "0.0.0.0", a name
  int port = 0;      // 0: any free port (tests)
  bool loopback = false;
};

// "127.0.0.1:9464", "[::1]:9464", "localhost:9464", "0.0.0.0:9464", and ":9464" or
// "9464" (loopback). kInvalidArgument for anything else (no port, port out of range).
// `what` names the endpoint in messages (shared with the HTTP API, api/server.h).
Result<ListenAddress> ParseListenAddress(std::string_view text, std::string_view what = "workload");

// The bind policy: loopback is fine; anything else needs a token (kInvalidArgument
// naming the address, never the token) and yields a warning to log.
Result<std::vector<std::string>> CheckListenPolicy(const ListenAddress& address, bool has_token);

// The bearer token: from `file` (first line, surrounding blanks removed) when set, else
// from the environment variable `env_var` when set, else "" (no token). An unreadable,
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
  int64_t read_timeout_ms = 5000;
  int64_t write_timeout_ms = 5000;
  size_t threads = 4;
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
