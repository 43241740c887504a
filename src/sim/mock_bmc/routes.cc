// The mock BMC's HTTP handlers: Redfish GET over the resource tree, sessions, SSE, and
// the per-request fault decisions taken before routing.
#include <chrono>
#include <string>

#include "sim/mock_bmc/mock_bmc_impl.h"
#include "sim/mock_bmc/paging.h"
#include "sim/mock_bmc/redfish_error.h"

namespace faultline::sim {
namespace {

using nlohmann::json;
using HR = httplib::Server::HandlerResponse;

constexpr char kSubmitTestEvent[] = "/Actions/EventService.SubmitTestEvent";

bool IsPublic(const std::string& method, const std::string& path) {
  if (method == "POST" && path == kSessionsUri) return true;
  return path == "/redfish" || path == "/redfish/v1" || path == "/redfish/v1/$metadata" || path == "/redfish/v1/odata";
}

json SessionResource(const Session& s) {
  return {{"@odata.type", "#Session.v1_6_0.Session"},
          {"@odata.id", std::string(kSessionsUri) + "/" + s.id},
          {"Id", s.id},
          {"Name", "User Session"},
          {"UserName", s.user}};
}

void Unauthorized(httplib::Response& res) {
  res.set_header("WWW-Authenticate", "Basic realm=\"faultline-mock-bmc\"");
  SendError(res, 401, "NoValidSession", "There is no valid session established with the implementation.");
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

void SendJson(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_header("OData-Version", "4.0");
  res.set_content(body, "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& key, const std::string& message) {
  SendJson(res, status, RedfishErrorBody(key, message));
}

Status MockBmc::Impl::CreateServer() {
  if (options.tls) {
    server = std::make_unique<httplib::SSLServer>(options.cert_path.c_str(), options.key_path.c_str());
  } else {
    server = std::make_unique<httplib::Server>();
  }
  if (!server->is_valid()) return Status(StatusCode::kInvalidArgument, "mock BMC: TLS certificate/key unusable");
  const size_t workers = static_cast<size_t>(options.worker_threads);
  server->new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  server->set_keep_alive_timeout(options.keep_alive_timeout_s);
  // A sweep is hundreds of small requests on one connection: without TCP_NODELAY each
  // answer (headers and body written separately) waits out a delayed ACK (~40 ms).
  server->set_tcp_nodelay(true);
  server->set_keep_alive_max_count(1000);
  server->set_read_timeout(5, 0);
  server->set_write_timeout(5, 0);
  server->set_payload_max_length(options.max_request_body);
  // httplib's default also sets SO_REUSEPORT, which would let a second server share a fixed
  // port silently; keep only SO_REUSEADDR so a clash is a bind error.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
  });
  InstallRoutes();
  if (options.port == 0) {
    port = server->bind_to_any_port(host);
  } else {
    port = server->bind_to_port(host, options.port) ? options.port : -1;
  }
  if (port <= 0) {
    return Status(StatusCode::kUnavailable, "mock BMC: cannot bind " + host + ":" + std::to_string(options.port));
  }
  return Status::Ok();
}

void MockBmc::Impl::InstallRoutes() {
  server->set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return PreRoute(req, res); });
  server->Get(".*", [this](const httplib::Request& req, httplib::Response& res) { HandleGet(req, res); });
  server->Post(".*", [this](const httplib::Request& req, httplib::Response& res) { HandlePost(req, res); });
  server->Delete(".*", [this](const httplib::Request& req, httplib::Response& res) { HandleDelete(req, res); });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    SendError(res, 405, "GeneralError", "The mock BMC does not implement this method.");
  };
  server->Patch(".*", not_allowed);
  server->Put(".*", not_allowed);
  server->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    SendError(res, 500, "InternalError", "The request failed due to an internal service error.");
  });
}

HR MockBmc::Impl::PreRoute(const httplib::Request& req, httplib::Response& res) {
  const std::string path = ResourceTree::Canonical(req.path);
  std::unique_lock<std::mutex> lock(mu);
  ++total_requests;
  ++counts[path];
  client_ports.insert(req.remote_port);
  FaultPlan plan = faults.Decide(req.method, path);
  if (plan.latency.count() > 0) {
    // Time out against the clock of the wait, not the scenario clock: latency is real time.
    cv.wait_for(lock, plan.latency, [this] { return stopping; });
  }
  if (stopping) {
    SendError(res, 503, "ServiceTemporarilyUnavailable", "The mock BMC is shutting down.");
    return HR::Handled;
  }
  if (!plan.action) return HR::Unhandled;
  const Fault& f = *plan.action;
  switch (f.kind) {
    case FaultKind::kStall: {
      ++stalled;
      const uint64_t generation = release_generation;
      cv.wait(lock, [&] { return stopping || release_generation != generation; });
      --stalled;
      if (!stopping) return HR::Unhandled;
      SendError(res, 503, "ServiceTemporarilyUnavailable", "The mock BMC is shutting down.");
      return HR::Handled;
    }
    case FaultKind::kStatus:
      if (f.status == 503) res.set_header("Retry-After", "1");
      SendError(res, f.status, f.status == 503 ? "ServiceTemporarilyUnavailable" : "InternalError",
                "Injected fault: HTTP " + std::to_string(f.status) + ".");
      return HR::Handled;
    case FaultKind::kLatency:
      return HR::Unhandled;
    default:
      // Body faults need the normal answer first; they apply to GET only.
      if (req.method != "GET") return HR::Unhandled;
      lock.unlock();
      HandleGet(req, res);
      ApplyBodyFault(f, res);
      return HR::Handled;
  }
}

void MockBmc::Impl::HandleGet(const httplib::Request& req, httplib::Response& res) {
  const std::string path = ResourceTree::Canonical(req.path);
  if (path == "/redfish") {
    SendJson(res, 200, R"({"v1":"/redfish/v1/"})");
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!IsPublic("GET", path) && !Authorized(req)) return Unauthorized(res);
  }
  for (const std::string& uri : sse_uris) {
    if (path == uri) return ServeSse(req, res);
  }
  ServeCollectionOrResource(path, req, res);
}

void MockBmc::Impl::ServeCollectionOrResource(const std::string& path, const httplib::Request& req,
                                              httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu);
  if (path == kSessionsUri && tree.Find(path) != nullptr) {
    // Live sessions replace whatever the mockup lists.
    json doc = tree.Find(path)->doc;
    doc["Members"] = json::array();
    for (const Session& s : sessions.Open()) doc["Members"].push_back({{"@odata.id", path + "/" + s.id}});
    doc["Members@odata.count"] = doc["Members"].size();
    return SendJson(res, 200, DumpJson(doc));
  }
  const std::string session_prefix = std::string(kSessionsUri) + "/";
  if (path.rfind(session_prefix, 0) == 0) {
    const Session* s = sessions.ById(path.substr(session_prefix.size()));
    if (s != nullptr) return SendJson(res, 200, DumpJson(SessionResource(*s)));
  }
  const Resource* r = tree.Find(path);
  if (r == nullptr) {
    return SendError(res, 404, "ResourceNotFound", "The requested resource " + path + " was not found.");
  }
  if (!r->is_json) {
    res.status = 200;
    res.set_content(r->raw, r->content_type);
    return;
  }
  PageRequest page;
  page.page_size = static_cast<size_t>(options.page_size);
  if (req.has_param("$skip") || req.has_param("$top")) {
    auto skip = req.has_param("$skip") ? ParseQueryCount(req.get_param_value("$skip")) : std::optional<size_t>(0);
    auto top = req.has_param("$top") ? ParseQueryCount(req.get_param_value("$top")) : std::optional<size_t>();
    if (!skip || (req.has_param("$top") && !top)) {
      return SendError(res, 400, "QueryParameterValueTypeError", "$skip and $top take a non-negative integer.");
    }
    page.skip = *skip;
    page.top = top;
  }
  SendJson(res, 200, DumpJson(PageCollection(r->doc, path, page)));
}

bool MockBmc::Impl::Authorized(const httplib::Request& req) const {
  if (!options.auth_required) return true;
  return sessions.TokenValid(req.get_header_value("X-Auth-Token")) ||
         sessions.BasicValid(req.get_header_value("Authorization"));
}

void MockBmc::Impl::HandlePost(const httplib::Request& req, httplib::Response& res) {
  const std::string path = ResourceTree::Canonical(req.path);
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  std::lock_guard<std::mutex> lock(mu);
  if (path == kSessionsUri) {
    if (!body.is_object() || !body.contains("UserName") || !body["UserName"].is_string() ||
        !body.contains("Password") || !body["Password"].is_string()) {
      return SendError(res, 400, "PropertyMissing", "UserName and Password are required strings.");
    }
    Result<Session> s = sessions.Create(body["UserName"].get<std::string>(), body["Password"].get<std::string>());
    if (!s.ok() && s.status().code() == StatusCode::kUnavailable) {
      return SendError(res, 503, "SessionLimitExceeded",
                       "The session establishment failed due to the number of simultaneous sessions exceeding "
                       "the limit of the implementation.");
    }
    if (!s.ok()) return Unauthorized(res);
    res.set_header("X-Auth-Token", s->token);
    res.set_header("Location", path + "/" + s->id);
    return SendJson(res, 201, DumpJson(SessionResource(*s)));
  }
  if (!Authorized(req)) return Unauthorized(res);
  if (EndsWith(path, kSubmitTestEvent)) {
    BmcEvent ev;
    ev.message_id = body.value("MessageId", std::string("TestEvent.1.0.TestEvent"));
    ev.severity = body.value("MessageSeverity", std::string("OK"));
    Emit(ev);
    res.status = 204;
    return;
  }
  if (tree.Find(path) == nullptr) {
    return SendError(res, 404, "ResourceNotFound", "The requested resource " + path + " was not found.");
  }
  SendError(res, 405, "GeneralError", "The mock BMC does not implement POST on " + path + ".");
}

void MockBmc::Impl::HandleDelete(const httplib::Request& req, httplib::Response& res) {
  const std::string path = ResourceTree::Canonical(req.path);
  std::lock_guard<std::mutex> lock(mu);
  if (!Authorized(req)) return Unauthorized(res);
  const std::string prefix = std::string(kSessionsUri) + "/";
  if (path.rfind(prefix, 0) == 0 && sessions.Delete(path.substr(prefix.size()))) {
    res.status = 204;
    return;
  }
  if (path.rfind(prefix, 0) == 0 || tree.Find(path) == nullptr) {
    return SendError(res, 404, "ResourceNotFound", "The requested resource " + path + " was not found.");
  }
  SendError(res, 405, "GeneralError", "The mock BMC does not implement DELETE on " + path + ".");
}

void MockBmc::Impl::ServeSse(const httplib::Request& req, httplib::Response& res) {
  // Last-Event-ID that does not parse is treated as absent (replay everything kept).
  uint64_t last_id = 0;
  const std::string header = req.get_header_value("Last-Event-ID");
  if (auto n = ParseQueryCount(header.substr(0, 9)); n && header.size() <= 9) last_id = *n;
  {
    std::lock_guard<std::mutex> lock(mu);
    last_filter = req.get_param_value("$filter");
    ++sse_subscribers;
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, last_id](size_t, httplib::DataSink& sink) mutable {
        std::vector<std::pair<uint64_t, std::string>> batch;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait_for(lock, std::chrono::seconds(1), [&] { return stopping || events.last_id() > last_id; });
          if (stopping) return false;
          batch = events.After(last_id);
        }
        // A comment line when idle: keeps proxies open and notices a vanished client.
        if (batch.empty()) return sink.write(": keep-alive\n\n", 14);
        for (const auto& [id, payload] : batch) {
          const std::string msg = "id: " + std::to_string(id) + "\ndata: " + payload + "\n\n";
          if (!sink.write(msg.data(), msg.size())) return false;
          last_id = id;
        }
        return true;
      },
      [this](bool) {
        std::lock_guard<std::mutex> lock(mu);
        --sse_subscribers;
      });
}

}  // namespace faultline::sim
