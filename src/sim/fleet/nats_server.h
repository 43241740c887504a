// A real `nats-server -js` process on loopback, started by the project for its tests, the
// fleet simulator and the fleet benchmarks (never a production path: agents and `faultline
// fleet` connect to a server the site runs).
//
// The child's stdin/stdout/stderr go to /dev/null (it logs to <dir>/<name>/server.log), so a
// test process that dies leaves no pipe open that keeps ctest waiting; and the child gets
// SIGKILL when the thread that started it exits (PR_SET_PDEATHSIG), so a crashed test
// leaves no server behind. Start it from a thread that outlives it (the test body, main).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace faultline::sim {

// The nats-server binary from the usual install places; "" when it is not installed.
std::string FindNatsServer();
// A port the kernel just handed out on 127.0.0.1 (free unless someone grabs it meanwhile);
// 0 when none could be had.
int FreeLoopbackPort();
// True when something accepts TCP connections on 127.0.0.1:port.
bool LoopbackPortAccepts(int port);

struct NatsServerOptions {
  std::string dir;            // the server's JetStream store and log go under dir/name
  std::string name = "nats";  // server name (-n), also its subdirectory
  int port = 0;               // 0: a free loopback port, picked once and kept across restarts
  int cluster_port = 0;       // > 0: joins a cluster on this route port
  std::string routes;         // comma-separated nats://127.0.0.1:PORT route URLs
  std::string cluster_name = "faultline";
  std::vector<std::string> extra_args;
  double start_timeout_s = 20;  // how long Start waits for the client port
};

// One nats-server process. Start() after Kill() comes back at the same URL with the same
// store, which is how tests crash and restart a server.
class NatsServerProcess {
 public:
  explicit NatsServerProcess(NatsServerOptions options);
  ~NatsServerProcess();  // Kill()
  NatsServerProcess(const NatsServerProcess&) = delete;
  NatsServerProcess& operator=(const NatsServerProcess&) = delete;

  // Spawns it (when not running) and waits until its client port accepts. kNotFound when
  // nats-server is not installed, kUnavailable when it did not come up.
  Status Start();
  // SIGKILL and reap: what a crash looks like (no lame-duck mode, no flush).
  void Kill();
  // SIGTERM, then SIGKILL after a few seconds: a clean shutdown.
  void Stop();

  int port() const { return port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  bool running() const { return pid_ > 0; }

 private:
  std::vector<std::string> Args(const std::string& binary) const;

  NatsServerOptions options_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A NatsServerProcess in a fresh directory made under `parent`, stopped and its directory
// removed on destruction (the fleet simulator's and benchmarks' server).
class LocalNatsServer {
 public:
  static Result<std::unique_ptr<LocalNatsServer>> Start(const std::string& parent);
  ~LocalNatsServer();
  LocalNatsServer(const LocalNatsServer&) = delete;
  LocalNatsServer& operator=(const LocalNatsServer&) = delete;
  std::string url() const { return process_->url(); }

 private:
  LocalNatsServer() = default;
  std::string dir_;
  std::unique_ptr<NatsServerProcess> process_;
};

}  // namespace faultline::sim
