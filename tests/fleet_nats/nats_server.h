// Test fixture: real nats-server processes with JetStream on loopback (127.0.0.1 only,
// launched by sim/fleet/nats_server.h), each on a free port with its own store directory
// under a per-test temp dir, killed when the fixture ends. Tests call SkipWithoutNatsServer() first so they skip
// cleanly where nats-server is not installed (scripts/deps.sh --test installs it).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fleet/nats/client.h"
#include "sim/fleet/nats_server.h"

namespace faultline::fleet::nats::testing {

using sim::FindNatsServer;
using sim::FreeLoopbackPort;

#define SKIP_WITHOUT_NATS_SERVER()                                                               \
  do {                                                                                           \
    if (::faultline::sim::FindNatsServer().empty()) GTEST_SKIP() << "nats-server not installed"; \
  } while (0)

// Polls `done` every 50 ms for up to `seconds`; true once it held. (A bound on waiting
// for an external process, not an assertion on speed.)
inline bool WaitUntil(const std::function<bool()>& done, double seconds = 20) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// A per-test directory, removed at the end.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("faultline-nats-" + std::string(info ? info->name() : "x") + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// One nats-server process (sim/fleet/nats_server.h); Start() reports a start failure as a
// test failure.
class NatsServer {
 public:
  NatsServer(std::string dir, std::string name, std::vector<std::string> extra_args = {}, int cluster_port = 0,
             std::string routes = "")
      : process_(Options(std::move(dir), std::move(name), std::move(extra_args), cluster_port, std::move(routes))) {}

  int port() const { return process_.port(); }
  std::string url() const { return process_.url(); }
  bool running() const { return process_.running(); }
  bool Start() {
    const Status st = process_.Start();
    if (!st.ok()) ADD_FAILURE() << st.ToString();
    return st.ok();
  }
  void Kill() { process_.Kill(); }

 private:
  static sim::NatsServerOptions Options(std::string dir, std::string name, std::vector<std::string> extra_args,
                                        int cluster_port, std::string routes) {
    sim::NatsServerOptions o;
    o.dir = std::move(dir);
    o.name = std::move(name);
    o.extra_args = std::move(extra_args);
    o.cluster_port = cluster_port;
    o.routes = std::move(routes);
    o.cluster_name = "faultline-test";
    return o;
  }
  sim::NatsServerProcess process_;
};

// Three servers routed to each other, JetStream clustered (replicas up to 3).
class NatsCluster {
 public:
  explicit NatsCluster(const std::string& dir) {
    std::vector<int> cluster_ports;
    for (int i = 0; i < 3; ++i) cluster_ports.push_back(FreeLoopbackPort());
    std::string routes;
    for (int p : cluster_ports) routes += (routes.empty() ? "" : ",") + ("nats://127.0.0.1:" + std::to_string(p));
    for (int i = 0; i < 3; ++i) {
      servers_.push_back(std::make_unique<NatsServer>(dir, "n" + std::to_string(i + 1), std::vector<std::string>{},
                                                      cluster_ports[i], routes));
    }
  }
  bool Start() {
    for (auto& s : servers_) {
      if (!s->Start()) return false;
    }
    return true;
  }
  NatsServer& server(size_t i) { return *servers_.at(i); }
  std::vector<std::string> urls() const {
    std::vector<std::string> out;
    for (const auto& s : servers_) out.push_back(s->url());
    return out;
  }

 private:
  std::vector<std::unique_ptr<NatsServer>> servers_;
};

inline ConnectOptions OptionsFor(std::vector<std::string> urls) {
  ConnectOptions o;
  o.urls = std::move(urls);
  o.connect_timeout_ns = 1'000'000'000;
  o.reconnect_wait_ns = 100'000'000;
  o.request_timeout_ns = 3'000'000'000;
  return o;
}

// Connects, retrying while the server(s) come up; null (and a test failure) when not.
inline std::unique_ptr<Connection> ConnectOrFail(const ConnectOptions& o, double seconds = 20) {
  std::unique_ptr<Connection> c;
  Status last;
  WaitUntil(
      [&] {
        auto r = Connection::Connect(o);
        if (!r.ok()) {
          last = r.status();
          return false;
        }
        c = std::move(r).value();
        return true;
      },
      seconds);
  if (!c) ADD_FAILURE() << "no connection: " << last.ToString();
  return c;
}

// EnsureStream, retried while a fresh cluster elects its JetStream leader.
inline Result<StreamState> EnsureStreamRetrying(Connection& c, const StreamConfig& config, double seconds = 30) {
  Result<StreamState> r = Status(StatusCode::kUnavailable, "not tried");
  WaitUntil(
      [&] {
        r = c.EnsureStream(config);
        return r.ok();
      },
      seconds);
  return r;
}

}  // namespace faultline::fleet::nats::testing
