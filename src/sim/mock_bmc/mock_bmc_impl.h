// Internal to the mock BMC: the state behind MockBmc and its HTTP handlers. One mutex
// guards all mutable state; one condition variable wakes everything that waits on it
// (SSE streams for new events, stalled and delayed requests and the scenario ticker for
// Stop() / ReleaseStalled()).
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "sim/mock_bmc/event_log.h"
#include "sim/mock_bmc/fault_injector.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "sim/mock_bmc/resource_tree.h"
#include "sim/mock_bmc/scenario.h"
#include "sim/mock_bmc/sessions.h"

namespace faultline::sim {

inline constexpr char kSessionsUri[] = "/redfish/v1/SessionService/Sessions";
inline constexpr char kDefaultSseUri[] = "/redfish/v1/EventService/SSE";

struct MockBmc::Impl final : public ScenarioTarget {
  explicit Impl(const MockBmcOptions& opts)
      : options(opts),
        clock(opts.clock ? opts.clock : &system_clock),
        sessions(opts.username, opts.password, opts.max_sessions) {}

  // --- set once by Start(), read-only afterwards ---
  MockBmcOptions options;
  SystemClock system_clock;
  const Clock* clock;
  std::unique_ptr<httplib::Server> server;
  std::thread listen_thread;
  std::thread ticker_thread;
  int port = 0;
  std::string host;
  std::string temp_dir;  // generated certificate, removed on Stop()
  std::string ca_cert;
  int64_t start_mono_ns = 0;
  std::vector<std::string> sse_uris;

  // --- guarded by mu ---
  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool stopped = false;
  ResourceTree tree;
  SessionTable sessions;
  EventLog events;
  FaultInjector faults;
  std::optional<ScenarioPlayer> player;
  double scenario_now = 0;
  std::vector<std::string> scenario_errors;
  uint64_t total_requests = 0;
  std::map<std::string, uint64_t> counts;
  std::set<int> client_ports;  // the loopback ports requests came from: one per connection
  uint64_t release_generation = 0;
  int stalled = 0;
  int sse_subscribers = 0;
  std::string last_filter;

  // ScenarioTarget: called with mu held.
  Status Set(const std::string& resource, const std::string& pointer, const nlohmann::json& value) override;
  Result<nlohmann::json> Get(const std::string& resource, const std::string& pointer) const override;
  Status Append(const std::string& collection, const nlohmann::json& member) override;
  void Emit(const BmcEvent& event) override;

  std::string NowIso() const;
  void AdvanceLocked(double seconds);  // mu held
  void TickerLoop();

  // HTTP side (routes.cc).
  Status CreateServer();
  void InstallRoutes();
  httplib::Server::HandlerResponse PreRoute(const httplib::Request& req, httplib::Response& res);
  void HandleGet(const httplib::Request& req, httplib::Response& res);
  void HandlePost(const httplib::Request& req, httplib::Response& res);
  void HandleDelete(const httplib::Request& req, httplib::Response& res);
  bool Authorized(const httplib::Request& req) const;  // mu held
  void ServeSse(const httplib::Request& req, httplib::Response& res);
  void ServeCollectionOrResource(const std::string& path, const httplib::Request& req, httplib::Response& res);
};

// Response helpers shared by the handlers.
void SendJson(httplib::Response& res, int status, const std::string& body);
void SendError(httplib::Response& res, int status, const std::string& key, const std::string& message);

// Replaces a 200 answer with the fault's broken variant (malformed, truncated, huge).
void ApplyBodyFault(const Fault& fault, httplib::Response& res);

}  // namespace faultline::sim
