#include "sources/workload/http_server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include "parse/text.h"
#include "sources/workload/queue.h"

namespace faultline {
namespace {

constexpr size_t kMaxTokenBytes = 4096;

bool IsLoopbackHost(std::string_view host) {
  // 127.0.0.0/8, ::1 and the name every resolver maps to them. Any other name may
  // resolve to a routable address, so it counts as "not loopback".
  return StartsWith(host, "127.") || host == "::1" || host == "localhost";
}

Result<int> ParsePort(std::string_view text, std::string_view whole, std::string_view what) {
  int port = -1;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || port < 0 || port > 65535) {
    return Status(StatusCode::kInvalidArgument, std::string(what) + " listen address \"" +
                                                    std::string(whole.substr(0, 80)) +
                                                    "\": expected HOST:PORT with a port 0..65535");
  }
  return port;
}

// Compares without an early exit, so the time taken does not tell how much matched.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

Result<std::string> CheckToken(std::string token, const std::string& where, std::string_view what) {
  token = std::string(Trim(token));
  if (token.empty()) return Status(StatusCode::kInvalidArgument, std::string(what) + " token in " + where + " is empty");
  for (char c : token) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
      return Status(StatusCode::kInvalidArgument,
                    std::string(what) + " token in " + where + " has blanks or control characters");
    }
  }
  return token;
}

}  // namespace

Result<ListenAddress> ParseListenAddress(std::string_view text, std::string_view what) {
  text = Trim(text);
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || (text.front() != '[' && text.find(':') != colon)) {
    // A bare port, or an unbracketed IPv6 address (ambiguous: refused below).
    if (colon != std::string_view::npos) {
      return Status(StatusCode::kInvalidArgument, std::string(what) + " listen address \"" +
                                                      std::string(text.substr(0, 80)) +
                                                      "\": write IPv6 addresses as [ADDR]:PORT");
    }
    auto port = ParsePort(text, text, what);
    if (!port.ok()) return port.status();
    return ListenAddress{"127.0.0.1", *port, true};
  }
  std::string host(text.substr(0, colon));
  auto port = ParsePort(text.substr(colon + 1), text, what);
  if (!port.ok()) return port.status();
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";  // ":9464": loopback by default
  return ListenAddress{host, *port, IsLoopbackHost(host)};
}

Result<std::vector<std::string>> CheckListenPolicy(const ListenAddress& address, bool has_token) {
  if (address.loopback) return std::vector<std::string>{};
  const std::string where = address.host + ":" + std::to_string(address.port);
  if (!has_token) {
    return Status(StatusCode::kInvalidArgument,
                  "workload endpoint on " + where +
                      " is not loopback: set a bearer token (workload.token_file or workload.token_env) or listen on "
                      "127.0.0.1");
  }
  return std::vector<std::string>{"workload endpoint listens on " + where +
                                  " (not loopback): reachable from the network, bearer token required"};
}

Result<std::string> LoadBearerToken(const std::string& file, const std::string& env_var, std::string_view what) {
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Status(StatusCode::kNotFound, "cannot read " + std::string(what) + " token file " + file);
    std::string text(kMaxTokenBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxTokenBytes)
      return Status(StatusCode::kInvalidArgument, std::string(what) + " token file " + file + " is too large");
    return CheckToken(text.substr(0, text.find('\n')), "file " + file, what);
  }
  if (!env_var.empty()) {
    const char* v = std::getenv(env_var.c_str());
    if (v == nullptr)
      return Status(StatusCode::kNotFound,
                    "environment variable " + env_var + " (" + std::string(what) + " token) is not set");
    if (std::string_view(v).size() > kMaxTokenBytes) {
      return Status(StatusCode::kInvalidArgument, std::string(what) + " token in $" + env_var + " is too large");
    }
    return CheckToken(v, "$" + env_var, what);
  }
  return std::string();
}

bool BearerTokenMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kBearer = "Bearer ";
  if (token.empty() || authorization.size() <= kBearer.size() || !StartsWith(authorization, kBearer)) return false;
  return SameSecret(authorization.substr(kBearer.size()), token);
}

struct WorkloadHttpServer::Impl {
  Impl(WorkloadServerOptions o, const Clock& c) : options(std::move(o)), clock(c), queue(options.queue_capacity) {}

  void Count(const HttpReply& reply) {
    std::lock_guard<std::mutex> lock(mu);
    switch (reply.outcome) {
      case WorkloadOutcome::kAccepted:
        ++stats.accepted;
        stats.reports += reply.reports;
        break;
      case WorkloadOutcome::kMalformed:
        ++stats.malformed;
        break;
      case WorkloadOutcome::kUnauthorized:
        ++stats.unauthorized;
        break;
      case WorkloadOutcome::kOtherNode:
        ++stats.other_node;
        break;
      case WorkloadOutcome::kTooLarge:
        ++stats.too_large;
        break;
      case WorkloadOutcome::kUnavailable:
        ++stats.unavailable;
        break;
    }
  }

  bool Authorized(const httplib::Request& req) const {
    return options.token.empty() || BearerTokenMatches(req.get_header_value("Authorization"), options.token);
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    HttpReply reply;
    if (!Authorized(req)) {
      reply = {401, R"({"error":"missing or wrong bearer token"})", WorkloadOutcome::kUnauthorized, 0};
      res.set_header("WWW-Authenticate", "Bearer");
    } else {
      reply = HandleWorkloadPost(req.body, options.http, clock,
                                 [this](std::vector<Observation> obs) { return queue.Push(std::move(obs)); });
    }
    Count(reply);
    res.status = reply.status;
    res.set_content(reply.body, "application/json");
  }

  void Configure() {
    const size_t threads = std::max<size_t>(1, options.threads);
    server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server.set_read_timeout(options.read_timeout_ms / 1000, (options.read_timeout_ms % 1000) * 1000);
    server.set_write_timeout(options.write_timeout_ms / 1000, (options.write_timeout_ms % 1000) * 1000);
    // One request per connection: an idle keep-alive connection would hold a worker.
    server.set_keep_alive_max_count(1);
    server.set_keep_alive_timeout(1);
    server.set_payload_max_length(options.http.max_body_bytes);
    // httplib's default also sets SO_REUSEPORT: another process of the same user could then
    // bind the same port and receive reports (and tokens), and bind(port 0) may hand two
    // servers one port. Keep only SO_REUSEADDR so a clash is a bind error.
    server.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
    });
    server.Post(options.http.path, [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
  }

  WorkloadServerOptions options;
  const Clock& clock;
  ObservationQueue queue;
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> listen_returned{false};
  bool started = false;
  int port = 0;
  mutable std::mutex mu;
  WorkloadServerStats stats;
};

WorkloadHttpServer::WorkloadHttpServer(WorkloadServerOptions options, const Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}

WorkloadHttpServer::~WorkloadHttpServer() { Stop(); }

Result<std::vector<std::string>> WorkloadHttpServer::Start() {
  // httplib's server cannot be restarted: one Start per object.
  if (impl_->started) return Status(StatusCode::kInvalidArgument, "workload endpoint already started");
  auto address = ParseListenAddress(impl_->options.listen);
  if (!address.ok()) return address.status();
  auto warnings = CheckListenPolicy(*address, !impl_->options.token.empty());
  if (!warnings.ok()) return warnings.status();
  impl_->started = true;
  impl_->Configure();
  const std::string where = impl_->options.listen;
  if (address->port == 0) {
    impl_->port = impl_->server.bind_to_any_port(address->host);
  } else {
    impl_->port = impl_->server.bind_to_port(address->host, address->port) ? address->port : -1;
  }
  if (impl_->port <= 0) return Status(StatusCode::kUnavailable, "workload: cannot listen on " + where);
  impl_->thread = std::thread([this] {
    impl_->server.listen_after_bind();
    impl_->listen_returned = true;
  });
  // httplib's stop() does nothing until the accept loop is running: wait for it, so a
  // Stop() right after Start() cannot leave the thread in accept() forever.
  while (!impl_->server.is_running() && !impl_->listen_returned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!impl_->server.is_running()) {
    impl_->thread.join();
    return Status(StatusCode::kUnavailable, "workload: the server on " + where + " stopped at once");
  }
  return warnings;
}

void WorkloadHttpServer::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

bool WorkloadHttpServer::running() const { return impl_->thread.joinable() && impl_->server.is_running(); }

int WorkloadHttpServer::port() const { return impl_->port; }

std::vector<Observation> WorkloadHttpServer::Drain() { return impl_->queue.Drain(); }

WorkloadServerStats WorkloadHttpServer::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

}  // namespace faultline
