#include "api/server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>

#include "daemon/log.h"
#include "sources/workload/guarded_http_server.h"
#include "sources/workload/http_server.h"

namespace faultline::api {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;

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

// The request line (cpp-httplib: 8 KiB) with slack for the line ends between headers.
constexpr size_t kRequestLineBytes = 16 * 1024;

GuardedServerOptions GuardOptions(const ServerOptions& o) {
  GuardedServerOptions g;
  g.threads = o.threads;
  g.queue_capacity = o.queue_capacity;
  g.busy_capacity = o.busy_queue_capacity;
  g.idle_timeout_ms = o.idle_timeout_ms;
  g.request_timeout_ms = o.request_timeout_ms;
  g.read_timeout_ms = o.read_timeout_ms;
  g.write_timeout_ms = o.write_timeout_ms;
  // Past the caps PreRoute and cpp-httplib check (431, 413) nothing is read at all, so an
  // endless stream of headers cannot grow the request in memory.
  g.max_request_bytes = kRequestLineBytes + 2 * o.max_header_bytes + o.api.max_body_bytes;
  g.busy_body = ApiHandler::Error(503, "server busy, retry later").body;
  g.cert_file = o.cert_file;
  g.key_file = o.key_file;
  return g;
}

}  // namespace

struct Server::Impl {
  Impl(DataProvider& p, ServerOptions o, daemon::Logger* l)
      : options(std::move(o)), handler(p, options.api), logger(l), guard(GuardOptions(options)) {}

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

  // Without a token the server listens on loopback only, and a page that rebinds its own
  // name to 127.0.0.1 still sends that name as Host: only loopback names are answered.
  bool MisdirectedHost(const httplib::Request& req, httplib::Response& res) {
    if (!options.api.token.empty()) return false;
    if (!IsAllowedOrigin(req.get_header_value("Origin"))) {
      ++misdirected;
      Reply(res, ApiHandler::Error(403,
                                   "this server has no token and answers no request from another site's page "
                                   "(Origin is not a loopback origin)"));
      return true;
    }
    if (IsLoopbackHostHeader(req.get_header_value("Host"))) return false;
    ++misdirected;
    Reply(res, req.has_header("Host")
                   ? ApiHandler::Error(421,
                                       "this server has no token and answers only requests to a loopback "
                                       "name (Host: localhost, 127.0.0.1 or [::1])")
                   : ApiHandler::Error(400, "a Host header is required"));
    return true;
  }

  // Requests to a name other than loopback (no token) and requests with too many headers
  // are answered here without reaching the handler.
  httplib::Server::HandlerResponse PreRoute(const httplib::Request& req, httplib::Response& res) {
    if (MisdirectedHost(req, res)) return httplib::Server::HandlerResponse::Handled;
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
    httplib::Server& s = guard.http();
    s.set_payload_max_length(options.api.max_body_bytes);
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
  GuardedHttpServer guard;
  bool started = false;
  int port = 0;
  std::atomic<uint64_t> requests{0}, cut{0}, unauthorized{0}, misdirected{0};
};

namespace {

constexpr std::string_view kTokenHint = "give a bearer token file (--token-file) or listen on 127.0.0.1";

// The checks made before anything is bound: the name, the token, the cert/key pair.
Status CheckBeforeBind(const ServerOptions& options, const ListenAddress& address) {
  if (!address.loopback && options.api.token.empty()) {
    return Status(StatusCode::kInvalidArgument, "api server on " + address.host + ":" + std::to_string(address.port) +
                                                    " is not loopback: " + std::string(kTokenHint));
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Status(StatusCode::kInvalidArgument, "HTTPS needs both a certificate (--cert) and a key (--key)");
  }
  return Status::Ok();
}

}  // namespace

Server::Server(DataProvider& provider, ServerOptions options, daemon::Logger* logger)
    : impl_(std::make_unique<Impl>(provider, std::move(options), logger)) {}

Server::~Server() { Stop(); }

Result<std::vector<std::string>> Server::Start() {
  Impl& m = *impl_;
  if (m.started) return Status(StatusCode::kInvalidArgument, "api server already started");
  auto address = ParseListenAddress(m.options.listen, "api");
  if (!address.ok()) return address.status();
  if (Status s = CheckBeforeBind(m.options, *address); !s.ok()) return s;
  m.started = true;
  m.Configure();
  auto bound = m.guard.Bind(address->host, address->port, "api");
  if (!bound.ok()) return bound.status();
  // What counts is where the name bound: "localhost" mapped to 0.0.0.0 listens everywhere.
  auto warnings = CheckBoundPolicy(*bound, !m.options.api.token.empty(), "api server", kTokenHint);
  if (!warnings.ok()) {
    m.guard.Stop();
    return warnings.status();
  }
  if (!bound->loopback && !m.guard.tls()) {
    warnings->push_back("api server without TLS: the token and data cross the network in clear");
  }
  if (Status s = m.guard.Serve("api"); !s.ok()) return s;
  m.port = bound->port;
  return warnings;
}

void Server::Stop() { impl_->guard.Stop(); }

int Server::port() const { return impl_->port; }
bool Server::tls() const { return impl_->guard.tls(); }

ServerStats Server::stats() const {
  const GuardedServerStats guard = impl_->guard.stats();
  return ServerStats{.requests = impl_->requests.load(),
                     .busy = guard.busy,
                     .cut = impl_->cut.load(),
                     .unauthorized = impl_->unauthorized.load(),
                     .misdirected = impl_->misdirected.load(),
                     .dropped = guard.dropped,
                     .timed_out = guard.timed_out};
}

}  // namespace faultline::api
