#include "sources/workload/guarded_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace faultline {
namespace {

using Steady = std::chrono::steady_clock;
using TimePoint = Steady::time_point;

// How long a connection answered 503 is drained so its client can read the answer before
// the socket closes (closing with unread bytes would reset the connection).
constexpr auto kDrainTime = std::chrono::milliseconds(1000);

// cpp-httplib 0.11 listens with a backlog of 5: a burst of connections overflows it and the
// kernel makes each client past it retry its SYN a second later. Admission here is cheap,
// so a deep backlog is drained at once.
constexpr int kListenBacklog = 1024;

TimePoint After(TimePoint from, int64_t ms) { return from + std::chrono::milliseconds(std::max<int64_t>(0, ms)); }

// Waits for `events` on `fd` until `deadline` or for at most `max_wait_ms`, whichever comes
// first. False on timeout or error; true when ready (or hung up: the next call says which).
bool WaitFor(int fd, short events, TimePoint deadline, int64_t max_wait_ms) {
  const TimePoint end = std::min(deadline, After(Steady::now(), max_wait_ms));
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Steady::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

// What one non-blocking read or write did: bytes (n > 0), end of stream (n == 0), failure
// (n < 0, wait == 0), or "wait for `wait` (POLLIN or POLLOUT) and call again".
struct Io {
  ssize_t n = -1;
  short wait = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Io Read(char* buf, size_t size) = 0;
  virtual Io Write(const char* buf, size_t size) = 0;
  virtual bool Buffered() const { return false; }  // bytes already decrypted
};

class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}
  Io Read(char* buf, size_t size) override { return Done(::recv(fd_, buf, size, MSG_DONTWAIT), POLLIN); }
  Io Write(const char* buf, size_t size) override {
    return Done(::send(fd_, buf, size, MSG_DONTWAIT | MSG_NOSIGNAL), POLLOUT);
  }

 private:
  static Io Done(ssize_t n, short wait) {
    if (n >= 0) return {n, 0};
    const bool again = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    return {-1, again ? wait : short{0}};
  }
  int fd_;
};

class TlsTransport final : public Transport {
 public:
  TlsTransport(SSL_CTX* ctx, int fd) : ssl_(SSL_new(ctx)) {
    if (ssl_ != nullptr && SSL_set_fd(ssl_, fd) != 1) failed_ = true;
  }
  ~TlsTransport() override {
    if (ssl_ == nullptr) return;
    // One close_notify attempt, never after a fatal error (OpenSSL forbids it), never waited on.
    if (!failed_ && SSL_is_init_finished(ssl_)) {
      ERR_clear_error();
      SSL_shutdown(ssl_);
    }
    SSL_free(ssl_);
    ERR_clear_error();
  }
  bool usable() const { return ssl_ != nullptr && !failed_; }
  Io Handshake() { return Map(SSL_accept(ssl_)); }
  Io Read(char* buf, size_t size) override { return Map(SSL_read(ssl_, buf, Clamp(size))); }
  Io Write(const char* buf, size_t size) override { return Map(SSL_write(ssl_, buf, Clamp(size))); }
  bool Buffered() const override { return SSL_pending(ssl_) > 0; }

 private:
  static int Clamp(size_t size) { return static_cast<int>(std::min<size_t>(size, INT_MAX)); }
  // SSL_get_error reads this thread's error queue, so each call starts from an empty one.
  Io Map(int ret) {
    if (ret > 0) return {ret, 0};
    const int err = SSL_get_error(ssl_, ret);
    ERR_clear_error();
    if (err == SSL_ERROR_WANT_READ) return {-1, POLLIN};
    if (err == SSL_ERROR_WANT_WRITE) return {-1, POLLOUT};
    if (err == SSL_ERROR_ZERO_RETURN) return {0, 0};
    failed_ = true;
    return {-1, 0};
  }
  SSL* ssl_;
  bool failed_ = false;
};

// "ip", port of either end of a connected socket.
void Endpoint(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    port = ntohs(in6->sin6_port);
  }
  ip = text;
}

// The request as cpp-httplib reads it, under this connection's deadlines and byte cap.
class GuardedStream final : public httplib::Stream {
 public:
  GuardedStream(int fd, Transport& transport, const GuardedServerOptions& options, TimePoint first_byte,
                TimePoint request_end)
      : fd_(fd), t_(transport), o_(options), first_byte_(first_byte), request_end_(request_end) {}
  using httplib::Stream::write;  // the (text) overloads cpp-httplib writes headers through

  bool is_readable() const override {
    return begin_ < end_ || t_.Buffered() || WaitFor(fd_, POLLIN, ReadDeadline(), o_.read_timeout_ms);
  }
  bool is_writable() const override { return WaitFor(fd_, POLLOUT, TimePoint::max(), o_.write_timeout_ms); }

  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_ && !Fill()) return eof_ ? 0 : -1;
    const size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buf_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    while (true) {
      const Io io = t_.Write(ptr, size);
      if (io.n > 0) return io.n;
      if (io.wait == 0) return -1;
      if (!WaitFor(fd_, io.wait, TimePoint::max(), o_.write_timeout_ms)) {
        timed_out_ = true;
        return -1;
      }
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Endpoint(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Endpoint(fd_, false, ip, port); }
  // cpp-httplib 0.11 answers 500 to a socket number select() cannot take; this stream
  // waits with poll(), so such a number is reported as 0 (as its own in-memory streams do).
  socket_t socket() const override { return fd_ < FD_SETSIZE ? fd_ : 0; }

  bool timed_out() const { return timed_out_; }

 private:
  // Before the first byte the idle deadline holds as well.
  TimePoint ReadDeadline() const { return received_ == 0 ? first_byte_ : request_end_; }

  bool Fill() {
    if (received_ >= o_.max_request_bytes) return false;
    const size_t want = std::min(sizeof buf_, o_.max_request_bytes - received_);
    while (true) {
      const Io io = t_.Read(buf_, want);
      if (io.n > 0) {
        begin_ = 0;
        end_ = static_cast<size_t>(io.n);
        received_ += end_;
        return true;
      }
      eof_ = io.n == 0;
      if (io.n == 0 || io.wait == 0) return false;
      if (!WaitFor(fd_, io.wait, ReadDeadline(), o_.read_timeout_ms)) {
        timed_out_ = true;
        return false;
      }
    }
  }

  int fd_;
  Transport& t_;
  const GuardedServerOptions& o_;
  TimePoint first_byte_;
  TimePoint request_end_;
  char buf_[4096];
  size_t begin_ = 0;
  size_t end_ = 0;
  size_t received_ = 0;
  bool eof_ = false;
  bool timed_out_ = false;
};

// cpp-httplib's accept loop hands each socket to process_and_close_socket through its task
// queue; with this queue running jobs inline, that call happens on the accepting thread and
// (overridden below) only admits the socket.
class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

class Engine final : public httplib::Server {
 public:
  explicit Engine(std::function<void(int)> admit) : admit_(std::move(admit)) {}
  bool Process(httplib::Stream& stream) {
    bool closed = false;
    return process_request(stream, /*close_connection=*/true, closed, nullptr);
  }
  int Listener() const { return svr_sock_; }
  // cpp-httplib's stop() only closes a socket it is accepting on.
  void CloseUnserved() {
    const socket_t s = svr_sock_.exchange(INVALID_SOCKET);
    if (s != INVALID_SOCKET) ::close(s);
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    admit_(sock);
    return true;
  }
  std::function<void(int)> admit_;
};

std::optional<BoundAddress> Bound(int listener) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return std::nullopt;
  BoundAddress b;
  Endpoint(listener, false, b.ip, b.port);
  if (ss.ss_family == AF_INET) {
    b.loopback = (ntohl(reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr.s_addr) >> 24) == 127;
  } else if (ss.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr;
    b.loopback = IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  return b;
}

bool Readable(const std::string& file) { return static_cast<bool>(std::ifstream(file)); }

// ":1234" (1 to 5 digits).
bool PortSuffix(std::string_view s) {
  if (s.size() < 2 || s.size() > 6 || s.front() != ':') return false;
  return std::all_of(s.begin() + 1, s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsLocalhostName(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "localhost" || lower == "localhost.";
}

struct Conn {
  int fd = -1;
  TimePoint accepted;
};

struct Draining {
  int fd = -1;
  TimePoint until;
};

}  // namespace

bool IsLoopbackHostHeader(std::string_view host) {
  // inet_pton reads a C string: "127.0.0.1\0.evil.example" would pass as its first part.
  if (host.find('\0') != std::string_view::npos) return false;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && !PortSuffix(rest)) return false;
    in6_addr a{};
    return ::inet_pton(AF_INET6, std::string(host.substr(1, close - 1)).c_str(), &a) == 1 && IN6_IS_ADDR_LOOPBACK(&a);
  }
  const size_t colon = host.rfind(':');
  if (colon != std::string_view::npos) {
    if (!PortSuffix(host.substr(colon))) return false;
    host = host.substr(0, colon);
  }
  if (IsLocalhostName(host)) return true;
  // inet_pton takes only the dotted quad ("127.1" and names are refused).
  in_addr a{};
  return ::inet_pton(AF_INET, std::string(host).c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

bool IsAllowedOrigin(std::string_view origin) {
  if (origin.empty()) return true;
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (origin.substr(0, scheme.size()) != scheme) continue;
    const std::string_view authority = origin.substr(scheme.size());
    return authority.find_first_of("/@?#") == std::string_view::npos && IsLoopbackHostHeader(authority);
  }
  return false;  // "null" (a sandboxed or file: page) and anything else
}

struct GuardedHttpServer::Impl {
  explicit Impl(GuardedServerOptions o) : options(std::move(o)), http([this](int fd) { Admit(fd); }) {
    options.threads = std::max<size_t>(1, options.threads);
    http.new_task_queue = [] { return new InlineQueue; };
    // SO_REUSEADDR only: cpp-httplib's default also sets SO_REUSEPORT, with which another
    // process of the same user could bind the same port and receive requests (and tokens).
    http.set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
    });
    busy_response = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(options.busy_body.size()) +
                    "\r\nRetry-After: " + std::to_string(options.retry_after_s) + "\r\nConnection: close\r\n\r\n" +
                    options.busy_body;
  }
  ~Impl() {
    if (ctx != nullptr) SSL_CTX_free(ctx);
  }

  Status LoadTls(std::string_view what);
  void Admit(int fd);
  void Refuse(int fd);
  void Work();
  void ServeConnection(const Conn& c);
  std::unique_ptr<Transport> OpenTransport(int fd, TimePoint deadline);
  void DrainLoop();
  void DrainStep(std::vector<Draining>& mine);
  void StopThreads();

  size_t Capacity() const { return options.threads + options.queue_capacity; }

  GuardedServerOptions options;
  Engine http;
  std::string busy_response;
  SSL_CTX* ctx = nullptr;
  bool bound = false;
  std::thread acceptor;
  std::atomic<bool> listen_returned{false};

  std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable drain_cv;
  std::deque<Conn> queue;          // guarded by mu
  size_t active = 0;               // guarded by mu: connections a worker is serving
  std::vector<Draining> to_drain;  // guarded by mu: handed to the closer
  size_t draining = 0;             // guarded by mu: handed and not yet closed
  bool stopping = false;           // guarded by mu
  std::vector<std::thread> workers;
  std::thread closer;

  std::atomic<uint64_t> connections{0}, busy{0}, dropped{0}, timed_out{0};
};

Status GuardedHttpServer::Impl::LoadTls(std::string_view what) {
  if (options.cert_file.empty() && options.key_file.empty()) return Status::Ok();
  if (options.cert_file.empty() || options.key_file.empty()) {
    return Status(StatusCode::kInvalidArgument, std::string(what) + ": HTTPS needs both a certificate and a key");
  }
  for (const std::string& f : {options.cert_file, options.key_file}) {
    if (!Readable(f)) return Status(StatusCode::kNotFound, "cannot read " + f);
  }
  ctx = SSL_CTX_new(TLS_server_method());
  // An encrypted key fails here instead of prompting on the terminal.
  if (ctx != nullptr) SSL_CTX_set_default_passwd_cb(ctx, [](char*, int, int, void*) { return 0; });
  const bool ok = ctx != nullptr && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
                  SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) == 1 &&
                  SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) == 1 &&
                  SSL_CTX_check_private_key(ctx) == 1;
  ERR_clear_error();
  if (!ok) {
    if (ctx != nullptr) SSL_CTX_free(ctx);
    ctx = nullptr;
    return Status(StatusCode::kInvalidArgument,
                  "cannot use certificate " + options.cert_file + " with key " + options.key_file);
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  return Status::Ok();
}

// On the accepting thread: queue the connection for a worker, or answer it 503 now.
void GuardedHttpServer::Impl::Admit(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!stopping && active + queue.size() < Capacity()) {
      queue.push_back(Conn{fd, Steady::now()});
      work_cv.notify_one();
      return;
    }
  }
  Refuse(fd);
}

// A fresh socket's send buffer is empty, so the short answer goes out without waiting.
// TLS cannot be answered without a handshake, which would take this thread: closed.
void GuardedHttpServer::Impl::Refuse(int fd) {
  const bool answered = ctx == nullptr && ::send(fd, busy_response.data(), busy_response.size(),
                                                 MSG_DONTWAIT | MSG_NOSIGNAL) == ssize_t(busy_response.size());
  if (!answered) {
    ++dropped;
    ::close(fd);
    return;
  }
  ++busy;
  ::shutdown(fd, SHUT_WR);
  std::lock_guard<std::mutex> lock(mu);
  if (stopping || draining >= options.busy_capacity) {
    ::close(fd);
    return;
  }
  ++draining;
  to_drain.push_back(Draining{fd, Steady::now() + kDrainTime});
  drain_cv.notify_one();
}

void GuardedHttpServer::Impl::Work() {
  while (true) {
    Conn c;
    {
      std::unique_lock<std::mutex> lock(mu);
      work_cv.wait(lock, [this] { return stopping || !queue.empty(); });
      if (stopping) return;
      c = queue.front();
      queue.pop_front();
      ++active;
    }
    ServeConnection(c);
    std::lock_guard<std::mutex> lock(mu);
    --active;
  }
}

void GuardedHttpServer::Impl::ServeConnection(const Conn& c) {
  ++connections;
  const TimePoint request_end = After(c.accepted, options.request_timeout_ms);
  const TimePoint first_byte = std::min(request_end, After(c.accepted, options.idle_timeout_ms));
  // Null when a TLS handshake failed or ran out of time: nothing to answer.
  std::unique_ptr<Transport> transport = OpenTransport(c.fd, first_byte);
  if (transport != nullptr) {
    GuardedStream stream(c.fd, *transport, options, first_byte, request_end);
    try {
      http.Process(stream);
    } catch (...) {
      // A handler's exception costs its request, never the worker thread.
    }
    if (stream.timed_out()) ++timed_out;
    transport.reset();  // TLS close_notify before the socket goes
  }
  ::shutdown(c.fd, SHUT_RDWR);
  ::close(c.fd);
}

std::unique_ptr<Transport> GuardedHttpServer::Impl::OpenTransport(int fd, TimePoint deadline) {
  if (ctx == nullptr) return std::make_unique<PlainTransport>(fd);
  auto tls = std::make_unique<TlsTransport>(ctx, fd);
  while (tls->usable()) {
    const Io io = tls->Handshake();
    if (io.n > 0) return tls;
    if (io.wait == 0 || !WaitFor(fd, io.wait, deadline, options.read_timeout_ms)) break;
  }
  return nullptr;
}

// The closer: reads and discards what busy connections still send until each closes its
// end or its drain time is up, then closes it.
void GuardedHttpServer::Impl::DrainLoop() {
  std::vector<Draining> mine;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu);
      drain_cv.wait(lock, [&] { return stopping || !mine.empty() || !to_drain.empty(); });
      mine.insert(mine.end(), to_drain.begin(), to_drain.end());
      to_drain.clear();
      if (stopping) break;
    }
    const size_t before = mine.size();
    DrainStep(mine);
    std::lock_guard<std::mutex> lock(mu);
    draining -= before - mine.size();
  }
  for (const Draining& d : mine) ::close(d.fd);
}

void GuardedHttpServer::Impl::DrainStep(std::vector<Draining>& mine) {
  std::vector<pollfd> fds;
  for (const Draining& d : mine) fds.push_back(pollfd{d.fd, POLLIN, 0});
  ::poll(fds.data(), fds.size(), 50);
  const TimePoint now = Steady::now();
  char scratch[4096];
  for (size_t i = fds.size(); i-- > 0;) {
    bool done = now >= mine[i].until;
    if (!done && fds[i].revents != 0) {
      ssize_t n;
      while ((n = ::recv(fds[i].fd, scratch, sizeof scratch, MSG_DONTWAIT)) > 0) {
      }
      done = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    if (!done) continue;
    ::close(mine[i].fd);
    mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void GuardedHttpServer::Impl::StopThreads() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  work_cv.notify_all();
  drain_cv.notify_all();
  for (std::thread& t : workers) t.join();
  workers.clear();
  if (closer.joinable()) closer.join();
  for (const Conn& c : queue) ::close(c.fd);
  queue.clear();
}

GuardedHttpServer::GuardedHttpServer(GuardedServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

GuardedHttpServer::~GuardedHttpServer() { Stop(); }

httplib::Server& GuardedHttpServer::http() { return impl_->http; }

Result<BoundAddress> GuardedHttpServer::Bind(const std::string& host, int port, std::string_view what) {
  Impl& m = *impl_;
  if (m.bound) return Status(StatusCode::kInvalidArgument, std::string(what) + ": already bound");
  if (Status s = m.LoadTls(what); !s.ok()) return s;
  const int got = port == 0 ? m.http.bind_to_any_port(host) : (m.http.bind_to_port(host, port) ? port : -1);
  const std::string where = host + ":" + std::to_string(port);
  if (got <= 0) return Status(StatusCode::kUnavailable, std::string(what) + ": cannot listen on " + where);
  m.bound = true;
  ::listen(m.http.Listener(), kListenBacklog);  // a second listen() only resizes the backlog
  auto address = Bound(m.http.Listener());
  if (!address) {
    Stop();
    return Status(StatusCode::kUnavailable, std::string(what) + ": cannot read the address bound for " + where);
  }
  return *address;
}

Status GuardedHttpServer::Serve(std::string_view what) {
  Impl& m = *impl_;
  if (!m.bound || m.acceptor.joinable()) {
    return Status(StatusCode::kInvalidArgument, std::string(what) + ": Serve needs one Bind first");
  }
  for (size_t i = 0; i < m.options.threads; ++i) m.workers.emplace_back([&m] { m.Work(); });
  m.closer = std::thread([&m] { m.DrainLoop(); });
  m.acceptor = std::thread([&m] {
    m.http.listen_after_bind();
    m.listen_returned = true;
  });
  // cpp-httplib's stop() does nothing until the accept loop runs: wait for it, so a Stop()
  // right after Serve() cannot leave the thread in accept().
  while (!m.http.is_running() && !m.listen_returned) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!m.http.is_running()) {
    Stop();
    return Status(StatusCode::kUnavailable, std::string(what) + ": the server stopped at once");
  }
  return Status::Ok();
}

void GuardedHttpServer::Stop() {
  Impl& m = *impl_;
  if (m.acceptor.joinable()) {
    m.http.stop();
    m.acceptor.join();  // no Admit after this
  }
  m.http.CloseUnserved();
  m.bound = false;
  m.StopThreads();
}

bool GuardedHttpServer::running() const { return impl_->acceptor.joinable() && impl_->http.is_running(); }

bool GuardedHttpServer::tls() const { return impl_->ctx != nullptr; }

GuardedServerStats GuardedHttpServer::stats() const {
  return GuardedServerStats{impl_->connections.load(), impl_->busy.load(), impl_->dropped.load(),
                            impl_->timed_out.load()};
}

}  // namespace faultline
