#include "api/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "daemon/log.h"
#include "sources/workload/http_server.h"

namespace faultline::api {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;

// cpp-httplib's task queue with a bound: `capacity` connections wait for the workers;
// beyond that they go to one "busy" thread (which the server answers with 503 without
// touching the provider); beyond that accepting waits for room.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t capacity, size_t busy_capacity)
      : capacity_(std::max<size_t>(1, capacity)), busy_capacity_(std::max<size_t>(1, busy_capacity)) {
    for (size_t i = 0; i < std::max<size_t>(1, threads); ++i) workers_.emplace_back([this] { Work(jobs_); });
    busy_thread_ = std::thread([this] { Work(busy_jobs_); });
  }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (jobs_.size() >= capacity_ && busy_jobs_.size() < busy_capacity_) {
      busy_jobs_.push_back(std::move(fn));
      cv_.notify_all();
      return;
    }
    room_.wait(lock, [this] { return jobs_.size() < capacity_; });
    jobs_.push_back(std::move(fn));
    cv_.notify_all();
  }

  // Queued connections still run (each closes its socket), then the threads end.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    busy_thread_.join();
  }

  bool OnBusyLane() const { return std::this_thread::get_id() == busy_id_.load(); }

 private:
  void Work(std::deque<std::function<void()>>& queue) {
    if (&queue == &busy_jobs_) busy_id_ = std::this_thread::get_id();
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue.empty() || stopping_; });
        if (queue.empty()) return;
        fn = std::move(queue.front());
        queue.pop_front();
      }
      room_.notify_one();
      fn();
    }
  }

  const size_t capacity_;
  const size_t busy_capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable room_;
  std::deque<std::function<void()>> jobs_;
  std::deque<std::function<void()>> busy_jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::thread busy_thread_;
  std::atomic<std::thread::id> busy_id_{};
};

// A path for a log line: printable, bounded, never the query.
std::string LoggedPath(const std::string& path) {
  std::string out;
  for (char c : path.substr(0, 120)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  return path.size() > 120 ? out + "..." : out;
}

// Messages for the errors cpp-httplib decides before a handler runs.
std::string TransportError(int status) {
  switch (status) {
    case 400:
      return "malformed request";
    case 404:
      return "no such route";
    case 413:
      return "request body too large";
    case 414:
      return "request URI too long";
    case 416:
      return "range not satisfiable";
    default:
      return "HTTP error " + std::to_string(status);
  }
}

bool Readable(const std::string& file) {
  std::ifstream in(file);
  return static_cast<bool>(in);
}

}  // namespace

struct Server::Impl {
  Impl(DataProvider& p, ServerOptions o, daemon::Logger* l)
      : options(std::move(o)), handler(p, options.api), logger(l) {}

  void Reply(httplib::Response& res, ApiResponse r) {
    res.status = r.status;
    for (auto& [k, v] : r.headers) res.set_header(k.c_str(), v);
    if (r.status == 401 || r.status == 403) ++unauthorized;
    if (r.body.size() <= kChunkBytes) {
      res.set_content(r.body, r.content_type.c_str());
      return;
    }
    // Large bodies go out in chunks against a deadline: a client reading slowly is cut
    // off instead of holding this worker for as long as it likes.
    auto body = std::make_shared<std::string>(std::move(r.body));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.response_deadline_ms);
    res.set_content_provider(body->size(), r.content_type.c_str(),
                             [this, body, deadline](size_t offset, size_t length, httplib::DataSink& sink) {
                               if (std::chrono::steady_clock::now() > deadline ||
                                   !sink.write(body->data() + offset, std::min(length, kChunkBytes))) {
                                 ++cut;
                                 return false;
                               }
                               return true;
                             });
  }

  // Connections the pool could not queue, and requests with too many headers, are
  // answered here without reaching the handler.
  httplib::Server::HandlerResponse PreRoute(const httplib::Request& req, httplib::Response& res) {
    if (pool != nullptr && pool.load()->OnBusyLane()) {
      ++busy;
      ApiResponse r = ApiHandler::Error(503, "server busy, retry later");
      r.headers.emplace_back("Retry-After", "1");
      Reply(res, std::move(r));
      return httplib::Server::HandlerResponse::Handled;
    }
    size_t bytes = 0;
    for (const auto& [k, v] : req.headers) bytes += k.size() + v.size() + 4;
    if (req.headers.size() > options.max_headers || bytes > options.max_header_bytes) {
      Reply(res, ApiHandler::Error(431, "request headers too large"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  void Dispatch(const httplib::Request& req, httplib::Response& res) {
    ++requests;
    ApiRequest r;
    r.method = req.method;
    r.path = req.path;
    const size_t q = req.target.find('?');
    if (q != std::string::npos) r.query = req.target.substr(q + 1);
    r.authorization = req.get_header_value("Authorization");
    r.body = req.body;
    Reply(res, handler.Handle(r));
  }

  void Configure() {
    httplib::Server& s = *server;
    const size_t threads = options.threads;
    const size_t capacity = options.queue_capacity;
    const size_t busy_capacity = options.busy_queue_capacity;
    s.new_task_queue = [this, threads, capacity, busy_capacity] {
      auto* p = new BoundedPool(threads, capacity, busy_capacity);
      pool = p;
      return p;
    };
    s.set_read_timeout(options.read_timeout_ms / 1000, (options.read_timeout_ms % 1000) * 1000);
    s.set_write_timeout(options.write_timeout_ms / 1000, (options.write_timeout_ms % 1000) * 1000);
    // One request per connection: an idle keep-alive connection would hold a worker.
    s.set_keep_alive_max_count(1);
    s.set_keep_alive_timeout(1);
    s.set_payload_max_length(options.api.max_body_bytes);
    // As in the workload endpoint: SO_REUSEADDR only (httplib's default SO_REUSEPORT would
    // let another process of the same user bind the port and read tokens).
    s.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
    });
    s.set_pre_routing_handler(
        [this](const httplib::Request& req, httplib::Response& res) { return PreRoute(req, res); });
    auto dispatch = [this](const httplib::Request& req, httplib::Response& res) { Dispatch(req, res); };
    s.Get(".*", dispatch);
    s.Post(".*", dispatch);
    s.Put(".*", dispatch);
    s.Delete(".*", dispatch);
    s.Patch(".*", dispatch);
    s.Options(".*", dispatch);
    // Errors cpp-httplib raises itself (414 URI too long, 413 body, 400 bad request line)
    // get the same JSON form as the handler's.
    s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty() || res.is_chunked_content_provider_ || res.content_length_ > 0) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      Reply(res, ApiHandler::Error(res.status, TransportError(res.status)));
      return httplib::Server::HandlerResponse::Handled;
    }));
    s.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      Reply(res, ApiHandler::Error(500, "internal error"));
    });
    s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      if (logger != nullptr) {
        logger->Debug("api: " + req.method.substr(0, 16) + " " + LoggedPath(req.path) + " " +
                      std::to_string(res.status));
      }
    });
  }

  ServerOptions options;
  ApiHandler handler;
  daemon::Logger* logger;
  std::unique_ptr<httplib::Server> server;
  std::atomic<BoundedPool*> pool{nullptr};
  std::thread thread;
  std::atomic<bool> listen_returned{false};
  bool started = false;
  bool tls = false;
  int port = 0;
  std::atomic<uint64_t> requests{0}, busy{0}, cut{0}, unauthorized{0};
};

Server::Server(DataProvider& provider, ServerOptions options, daemon::Logger* logger)
    : impl_(std::make_unique<Impl>(provider, std::move(options), logger)) {}

Server::~Server() { Stop(); }

Result<std::vector<std::string>> Server::Start() {
  Impl& m = *impl_;
  if (m.started) return Status(StatusCode::kInvalidArgument, "api server already started");
  auto address = ParseListenAddress(m.options.listen, "api");
  if (!address.ok()) return address.status();
  std::vector<std::string> warnings;
  if (!address->loopback) {
    const std::string where = address->host + ":" + std::to_string(address->port);
    if (m.options.api.token.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "api server on " + where +
                        " is not loopback: give a bearer token file (--token-file) or listen "
                        "on 127.0.0.1");
    }
    warnings.push_back("api server listens on " + where +
                       " (not loopback): reachable from the network, bearer token required on every route");
  }
  if (m.options.cert_file.empty() != m.options.key_file.empty()) {
    return Status(StatusCode::kInvalidArgument, "HTTPS needs both a certificate (--cert) and a key (--key)");
  }
  if (!m.options.cert_file.empty()) {
    for (const std::string& f : {m.options.cert_file, m.options.key_file}) {
      if (!Readable(f)) return Status(StatusCode::kNotFound, "cannot read " + f);
    }
    auto ssl = std::make_unique<httplib::SSLServer>(m.options.cert_file.c_str(), m.options.key_file.c_str());
    if (!ssl->is_valid()) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot use certificate " + m.options.cert_file + " with key " + m.options.key_file);
    }
    m.server = std::move(ssl);
    m.tls = true;
  } else {
    if (!address->loopback) warnings.push_back("api server without TLS: the token and data cross the network in clear");
    m.server = std::make_unique<httplib::Server>();
  }
  m.started = true;
  m.Configure();
  m.port = address->port == 0 ? m.server->bind_to_any_port(address->host)
                              : (m.server->bind_to_port(address->host, address->port) ? address->port : -1);
  if (m.port <= 0) return Status(StatusCode::kUnavailable, "api: cannot listen on " + m.options.listen);
  m.thread = std::thread([&m] {
    m.server->listen_after_bind();
    m.listen_returned = true;
  });
  // httplib's stop() does nothing until the accept loop runs: wait for it (as the workload
  // endpoint does), so Stop() right after Start() cannot leave the thread in accept().
  while (!m.server->is_running() && !m.listen_returned) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!m.server->is_running()) {
    m.thread.join();
    return Status(StatusCode::kUnavailable, "api: the server on " + m.options.listen + " stopped at once");
  }
  return warnings;
}

void Server::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server->stop();
  impl_->thread.join();
  impl_->pool = nullptr;
}

int Server::port() const { return impl_->port; }
bool Server::tls() const { return impl_->tls; }

ServerStats Server::stats() const {
  return ServerStats{impl_->requests.load(), impl_->busy.load(), impl_->cut.load(), impl_->unauthorized.load()};
}

}  // namespace faultline::api
