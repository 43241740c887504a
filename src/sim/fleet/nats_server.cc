#include "sim/fleet/nats_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// Runs in the forked child before exec: only async-signal-safe calls, since the parent
// may have other threads (a test's publisher) holding locks the child would inherit.
[[noreturn]] void ExecChild(char* const* argv, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took hold
  const int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    ::dup2(null_fd, 0);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    if (null_fd > 2) ::close(null_fd);
  }
  ::execv(argv[0], argv);
  ::_exit(127);
}

// Waits up to `seconds` for the child to exit; true once reaped.
bool ReapWithin(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int st = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (::waitpid(pid, &st, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

std::string FindNatsServer() {
  for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

bool LoopbackPortAccepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const sockaddr_in a = Loopback(port);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

NatsServerProcess::NatsServerProcess(NatsServerOptions options) : options_(std::move(options)) {
  port_ = options_.port > 0 ? options_.port : FreeLoopbackPort();
}

NatsServerProcess::~NatsServerProcess() { Kill(); }

std::vector<std::string> NatsServerProcess::Args(const std::string& binary) const {
  const std::string home = options_.dir + "/" + options_.name;
  std::vector<std::string> args = {binary,       "-a", "127.0.0.1",   "-p", std::to_string(port_), "-js", "-sd",
                                   home + "/js", "-n", options_.name, "-l", home + "/server.log"};
  if (options_.cluster_port > 0) {
    args.insert(args.end(), {"--cluster_name", options_.cluster_name, "--cluster",
                             "nats://127.0.0.1:" + std::to_string(options_.cluster_port), "--routes", options_.routes,
                             "--no_advertise=true"});
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  return args;
}

Status NatsServerProcess::Start() {
  if (pid_ > 0) return Status::Ok();
  const std::string binary = FindNatsServer();
  if (binary.empty()) return Status(StatusCode::kNotFound, "nats-server is not installed");
  if (port_ == 0) return Status(StatusCode::kUnavailable, "no free loopback port");
  std::error_code ec;
  fs::create_directories(options_.dir + "/" + options_.name, ec);
  if (ec) return Status(StatusCode::kIoError, "cannot create " + options_.dir + ": " + ec.message());
  std::vector<std::string> args = Args(binary);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status(StatusCode::kUnavailable, "cannot start nats-server (fork failed)");
  if (pid == 0) ExecChild(argv.data(), parent);
  pid_ = pid;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.start_timeout_s);
  while (!LoopbackPortAccepts(port_)) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      return Status(StatusCode::kUnavailable,
                    "nats-server exited at start (see " + options_.dir + "/" + options_.name + "/server.log)");
    }
    if (std::chrono::steady_clock::now() > end) {
      Kill();
      return Status(StatusCode::kUnavailable, "nats-server did not accept connections on " + url());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Ok();
}

void NatsServerProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
}

void NatsServerProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  if (ReapWithin(pid_, 5)) {
    pid_ = -1;
    return;
  }
  Kill();
}

Result<std::unique_ptr<LocalNatsServer>> LocalNatsServer::Start(const std::string& parent) {
  std::string tmpl = (fs::path(parent) / "faultline-nats-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Status(StatusCode::kIoError, "cannot create a directory in " + parent);
  std::unique_ptr<LocalNatsServer> s(new LocalNatsServer());
  s->dir_ = tmpl;  // removed by the destructor, also when the start fails below
  NatsServerOptions o;
  o.dir = tmpl;
  s->process_ = std::make_unique<NatsServerProcess>(o);
  if (Status st = s->process_->Start(); !st.ok()) return st;
  return s;
}

LocalNatsServer::~LocalNatsServer() {
  if (process_) process_->Stop();
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace faultline::sim
