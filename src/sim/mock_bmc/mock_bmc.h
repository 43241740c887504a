// A mock Redfish BMC: a real HTTP(S) server on loopback that serves a DMTF mockup tree,
// mutates it along a scenario timeline, and injects the faults real BMCs show (slow
// answers, 500/503, session limits, malformed or truncated bodies, huge bodies, stalls).
// Tests of the Redfish client and the node simulator run it in-process; the CLI runs it by
// hand (`faultline mock-bmc`). See docs/mock-bmc.md for the scenario file format.
//
// Contract:
//  - Start() binds, loads the whole mockup into memory, and returns once the server
//    accepts connections. Errors (missing mockup, bad scenario, bind failure, a
//    non-loopback bind without allow_non_loopback, TLS setup) are returned as a Status.
//  - Every public method is thread-safe and may be called while requests are in flight.
//  - Stop() is idempotent, wakes stalled and streaming (SSE) requests, and returns once
//    the server threads have exited; the destructor calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace faultline::sim {

// Everything the mock BMC can be told at start. Defaults suit an always-on unit test:
// HTTPS with a freshly generated self-signed certificate, an ephemeral loopback port,
// authentication required with the credentials below.
struct MockBmcOptions {
  // Root of a DMTF mockup: either `<dir>/redfish/v1/.../index.json` or, as the DMTF
  // public mockups do, the service root's index.json directly at `<dir>/index.json`.
  std::string mockup_dir;
  // Optional scenario file (JSON or YAML, see scenario.h); empty = static tree.
  std::string scenario_file;

  // Loopback by default. Any other address is refused unless allow_non_loopback is set.
  std::string bind_address = "127.0.0.1";
  bool allow_non_loopback = false;
  int port = 0;  // 0 = ephemeral; read the real one from port()

  bool tls = true;
  // PEM certificate and key. Both empty with tls = true: a self-signed pair (CN and SAN
  // localhost, 127.0.0.1, ::1) is generated at start into a private temporary directory,
  // removed on Stop(); its certificate is what ca_cert_path() returns.
  std::string cert_path;
  std::string key_path;

  std::string username = "admin";
  std::string password = "mockpassword";
  // When true, every resource except /redfish, /redfish/v1 (service root), $metadata,
  // odata and POST .../Sessions needs a valid X-Auth-Token or Basic credentials (401 else).
  bool auth_required = true;
  int max_sessions = 8;  // POST .../Sessions beyond this answers 503 (iDRAC behaviour)

  // Server-driven paging: a collection with more Members than this is served in pages of
  // this size with @odata.nextLink (`?$skip=N`). 0 = whole collections unless the client
  // asks with $top/$skip. A nextLink already in the mockup is always served as-is.
  int page_size = 0;

  // Add ServerSentEventUri to an EventService that lacks one (the stream is always served
  // at /redfish/v1/EventService/SSE and at any ServerSentEventUri the mockup declares).
  bool advertise_sse = false;

  // Scenario seconds per wall-clock second, counted from Start(). 0 = scenario time moves
  // only through AdvanceTo() (what deterministic tests use).
  double time_scale = 0.0;
  // Monotonic clock for scenario time and latency; nullptr = the system clock. Not owned;
  // must outlive the MockBmc.
  const Clock* clock = nullptr;

  int worker_threads = 16;              // concurrent connections (SSE streams and stalls hold one each)
  int keep_alive_timeout_s = 2;         // idle keep-alive connections close after this (bounds Stop())
  uint64_t max_request_body = 1 << 20;  // larger request bodies are refused with 413
};

// Runtime fault injection. A fault matches requests whose path (no query) matches
// path_glob ('*' matches any run of characters, including '/'), then fires on every
// every_nth-th match (1 = each), at most `times` times (-1 = unlimited). The body faults
// (malformed, truncated, huge) apply to GET requests whose normal answer is a 200.
enum class FaultKind {
  kLatency,        // delay the answer by `latency` (then answer normally)
  kStatus,         // answer `status` (500, 503, ...) with a Redfish error body
  kMalformedJson,  // a 200 whose JSON body has a syntax error
  kTruncatedBody,  // a 200 whose Content-Length promises more than is sent; connection closed
  kHugeBody,       // a 200 with a valid JSON body of body_bytes, streamed in small chunks
  kStall,          // never answer until ReleaseStalled() or Stop()
};

struct Fault {
  FaultKind kind = FaultKind::kStatus;
  std::string path_glob = "*";
  int status = 503;
  int every_nth = 1;
  int times = -1;
  std::chrono::milliseconds latency{0};
  uint64_t body_bytes = 100ull * 1024 * 1024;
  std::string method;  // empty = any method; else "GET", "POST", ...
};

// One Redfish event pushed to SSE subscribers (wrapped in an Event payload with Events[]).
struct BmcEvent {
  std::string message_id;  // e.g. "ResourceEvent.1.0.ResourceErrorsDetected"
  std::vector<std::string> message_args;
  std::string severity = "Warning";  // MessageSeverity: OK, Warning, Critical
  std::string message;               // optional human text
  std::string origin;                // OriginOfCondition @odata.id; empty = omitted
  std::string timestamp;             // EventTimestamp; empty = now (ISO 8601, UTC)
};

struct SessionInfo {
  std::string id;
  std::string user;
  std::string odata_id;  // Location of the session resource
};

class MockBmc {
 public:
  static Result<std::unique_ptr<MockBmc>> Start(const MockBmcOptions& options);
  ~MockBmc();
  MockBmc(const MockBmc&) = delete;
  MockBmc& operator=(const MockBmc&) = delete;

  void Stop();

  int port() const;
  // "https://127.0.0.1:PORT" (or http://); IPv6 binds are bracketed.
  std::string base_url() const;
  // PEM certificate a client passes as its CA (--ca); empty without TLS.
  std::string ca_cert_path() const;

  // --- Counters (for "requests per sweep") ---
  uint64_t total_requests() const;
  uint64_t requests_for(const std::string& path) const;  // path without query
  std::map<std::string, uint64_t> request_counts() const;
  // Distinct client ports requests came from: the connections used, so a client that
  // keeps its connections alive shows few for many requests.
  uint64_t connections_seen() const;
  void ResetCounters();

  // --- Sessions ---
  std::vector<SessionInfo> open_sessions() const;
  uint64_t sessions_created() const;
  uint64_t sessions_deleted() const;
  void SetMaxSessions(int max_sessions);

  // --- Fault injection ---
  void AddFault(const Fault& fault);
  void ClearFaults();
  // Latency added to every request (0 = none); same as a kLatency fault on "*".
  void SetLatency(std::chrono::milliseconds latency);
  // Answers every request stalled so far (with its normal answer) and lets new ones pass
  // until the next stall fault fires.
  void ReleaseStalled();
  // Requests currently held by a stall fault (lets a test wait until its request arrived).
  int stalled_requests() const;

  // --- Events (SSE) ---
  // Assigns the next event id, keeps it for Last-Event-ID replay and wakes subscribers.
  uint64_t PushEvent(const BmcEvent& event);
  int sse_subscribers() const;
  std::string last_sse_filter() const;  // the $filter of the latest SSE request

  // --- Scenario and state ---
  // Applies every scenario step due at or before `seconds` (ramps are interpolated).
  // Time only moves forward; an earlier time is ignored.
  void AdvanceTo(double seconds);
  double scenario_time() const;
  // Steps that failed when applied (e.g. a pointer into a scalar), oldest first.
  std::vector<std::string> scenario_errors() const;
  // Generic state edits (what the scenario and the node simulator use).
  // `resource` is a URI like /redfish/v1/Chassis/1U/Thermal; `pointer` a JSON pointer;
  // whose parent must exist; `json_value` a JSON text ("\"Absent\"", "12.5", "{...}").
  Status SetValue(const std::string& resource, const std::string& pointer, const std::string& json_value);
  // Appends a member (JSON object text) to a collection such as .../LogServices/SEL/Entries;
  // fills Id, @odata.id (and Created when absent) and creates the member resource.
  Result<std::string> AppendMember(const std::string& collection, const std::string& member_json);
  // The current JSON text of a resource (NotFound if absent).
  Result<std::string> ResourceJson(const std::string& resource) const;

  struct Impl;

 private:
  explicit MockBmc(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes a self-signed EC P-256 certificate (`cert.pem`, CA:TRUE, SAN localhost,
// 127.0.0.1, ::1, valid from an hour ago for `valid_days`) and its key (`key.pem`, mode
// 0600) into `dir`, which must exist. Test-time generation only: nothing is committed.
struct CertPaths {
  std::string cert_path;
  std::string key_path;
};
Result<CertPaths> GenerateSelfSignedCert(const std::string& dir, int valid_days = 2);

}  // namespace faultline::sim
