// Test fixture: real nats-server processes with JetStream on loopback (127.0.0.1 only),
// each on a free port with its own store directory under a per-test temp dir, killed
// when the fixture ends. Tests call SkipWithoutNatsServer() first so they skip cleanly
// where nats-server is not installed (scripts/deps.sh --test installs it).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fleet/nats/client.h"

extern char** environ;

namespace faultline::fleet::nats::testing {

inline std::string FindNatsServer() {
  for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

#define SKIP_WITHOUT_NATS_SERVER()                                                                                \
  do {                                                                                                            \
    if (::faultline::fleet::nats::testing::FindNatsServer().empty()) GTEST_SKIP() << "nats-server not installed"; \
  } while (0)

// A port the kernel just handed out on 127.0.0.1 (free unless someone grabs it meanwhile).
inline int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

inline bool PortAccepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

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

// One nats-server process. Start() picks the ports on first use and keeps them, so a
// Restart() comes back at the same URL with the same JetStream store.
class NatsServer {
 public:
  NatsServer(std::string dir, std::string name, std::vector<std::string> extra_args = {})
      : dir_(std::move(dir)), name_(std::move(name)), extra_(std::move(extra_args)) {
    port_ = FreeLoopbackPort();
    std::filesystem::create_directories(dir_ + "/" + name_);
  }
  ~NatsServer() { Kill(); }
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  bool running() const { return pid_ > 0; }
  void set_cluster(int cluster_port, std::string routes) {
    cluster_port_ = cluster_port;
    routes_ = std::move(routes);
  }

  // Starts it and waits until its client port accepts; false when it did not come up.
  bool Start() {
    if (pid_ > 0) return true;
    std::vector<std::string> args = {FindNatsServer(),
                                     "-a",
                                     "127.0.0.1",
                                     "-p",
                                     std::to_string(port_),
                                     "-js",
                                     "-sd",
                                     dir_ + "/" + name_ + "/js",
                                     "-n",
                                     name_,
                                     "-l",
                                     dir_ + "/" + name_ + "/server.log"};
    if (cluster_port_ > 0) {
      args.insert(args.end(),
                  {"--cluster_name", "faultline-test", "--cluster", "nats://127.0.0.1:" + std::to_string(cluster_port_),
                   "--routes", routes_, "--no_advertise=true"});
    }
    args.insert(args.end(), extra_.begin(), extra_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return false;
    pid_ = pid;
    return WaitUntil([this] { return PortAccepts(port_); });
  }

  // SIGKILL: what a crash looks like (no lame-duck, no flush).
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = 0;
  }

  bool Restart() {
    Kill();
    return Start();
  }

 private:
  std::string dir_;
  std::string name_;
  std::vector<std::string> extra_;
  int port_ = 0;
  int cluster_port_ = 0;
  std::string routes_;
  pid_t pid_ = 0;
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
      servers_.push_back(std::make_unique<NatsServer>(dir, "n" + std::to_string(i + 1)));
      servers_.back()->set_cluster(cluster_ports[i], routes);
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
