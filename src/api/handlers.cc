#include "api/handlers.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "api/diagnosis_view.h"
#include "core/json.h"
#include "dashboard/dashboard.h"
#include "sources/workload/http_server.h"

namespace faultline::api {
namespace {

constexpr std::string_view kPrefix = "/api/v1/";
constexpr std::string_view kDiagnosesPrefix = "/api/v1/diagnoses/";

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

ApiResponse JsonReply(const Json& j, int status = 200) { return ApiResponse{status, "application/json", Dump(j), {}}; }

int StatusFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kPermissionDenied:
      return 405;
    default:
      return 500;
  }
}

ApiResponse Failed(const Status& s) { return ApiHandler::Error(StatusFor(s), s.message()); }

// `blind` (false when the agent recorded nothing: it never found itself blind), and while
// blind `blind_since_ns` and the failing sources with their errors. An unreadable record is
// `blind: null` with `blind_error`: the node's health is then unknown, never "not blind".
void AddSight(Json& j, const Result<std::optional<AgentState>>& sight) {
  if (!sight.ok()) {
    j["blind"] = nullptr;
    j["blind_error"] = sight.status().message();
    return;
  }
  const bool blind = sight->has_value() && (*sight)->blind;
  j["blind"] = blind;
  if (!blind) return;
  j["blind_since_ns"] = (*sight)->since_ns;
  Json failing = Json::array();
  for (const SourceSight& s : (*sight)->sources) {
    if (!s.failing) continue;
    std::string name = s.source;  // the agent's names use '_' where the API's use '-' (dcgm-exporter)
    std::replace(name.begin(), name.end(), '_', '-');
    Json e{{"source", name}, {"error", s.error}};
    if (s.last_success_ns) e["last_success_ns"] = *s.last_success_ns;
    failing.push_back(e);
  }
  j["failing_sources"] = failing;
}

int64_t Since(int64_t v) { return v != 0 ? v : std::numeric_limits<int64_t>::min(); }
int64_t Until(int64_t v) { return v != 0 ? v : std::numeric_limits<int64_t>::max(); }

bool After(int64_t time_ns, int64_t id, const std::optional<PageCursor>& cursor) {
  if (!cursor) return true;
  return time_ns > cursor->time_ns || (time_ns == cursor->time_ns && id > cursor->id);
}

// A page of rows as a JSON array text: at most `limit` rows and about `max_bytes`
// (at least one row), and the cursor after the last row taken when more remain.
struct Page {
  std::string items = "[";
  size_t count = 0;
  std::optional<PageCursor> next;
};

template <typename T, typename TimeOf>
Page BuildPage(const std::vector<Row<T>>& rows, size_t limit, size_t max_bytes, bool more_stored, TimeOf time_of) {
  Page page;
  for (const Row<T>& row : rows) {
    if (page.count == limit) break;
    Json j = row.value;
    j["id"] = row.id;
    std::string text = Dump(j);
    if (page.count > 0 && page.items.size() + text.size() + 1 > max_bytes) break;
    if (page.count > 0) page.items += ",";
    page.items += text;
    ++page.count;
    page.next = PageCursor{time_of(row.value), row.id};
  }
  page.items += "]";
  if (page.count == rows.size() && !more_stored) page.next.reset();
  return page;
}

std::string PageBody(const std::string& node, std::string_view key, const Page& page, size_t limit, bool truncated) {
  Json head{{"node", node}, {"limit", limit}, {"count", page.count}};
  head["next_cursor"] = page.next ? Json(FormatCursor(*page.next)) : Json(nullptr);
  if (truncated) head["truncated"] = true;
  std::string body = Dump(head);
  body.pop_back();  // '}'
  body += ",\"" + std::string(key) + "\":" + page.items + "}";
  return body;
}

// One of the max_concurrent_analyses slots, held for the life of the object when taken.
class AnalysisSlot {
 public:
  AnalysisSlot(std::atomic<size_t>& in_use, size_t max) : in_use_(in_use) {
    size_t n = in_use_.load();
    while (n < max && !in_use_.compare_exchange_weak(n, n + 1)) {
    }
    held_ = n < max;
  }
  ~AnalysisSlot() {
    if (held_) --in_use_;
  }
  AnalysisSlot(const AnalysisSlot&) = delete;
  AnalysisSlot& operator=(const AnalysisSlot&) = delete;
  bool held() const { return held_; }

 private:
  std::atomic<size_t>& in_use_;
  bool held_ = false;
};

ApiResponse AnalysisBusy() {
  ApiResponse r = ApiHandler::Error(503, "another analysis (why-slow or ask) is running; retry later");
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

// What the bounds cut from the question asked: the start put on an open window, and the
// observation cap when the window held more (only its newest rows were analysed).
void AddCapped(Json& j, const AnalysisWindow& window, size_t observations, const AnalysisLimits& limits) {
  Json capped = Json::object();
  if (window.since_defaulted) capped["since_ns"] = window.since_ns;
  if (limits.max_observations > 0 && observations >= limits.max_observations) {
    capped["observations"] = limits.max_observations;
  }
  if (!capped.empty()) j["capped"] = capped;
}

}  // namespace

ApiHandler::ApiHandler(DataProvider& provider, ApiOptions options)
    : provider_(provider), options_(std::move(options)) {}

ApiResponse ApiHandler::Error(int status, std::string_view message, std::string_view param) {
  Json j{{"error", std::string(message)}, {"status", status}};
  if (!param.empty()) j["param"] = std::string(param);
  return JsonReply(j, status);
}

// The dashboard's static files (src/dashboard): public code with no data in it, so served
// without the token (the page asks for it when the API answers 401); a strict content
// security policy keeps the page to its own script and this server.
static std::optional<ApiResponse> DashboardAsset(const ApiRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") return std::nullopt;
  auto asset = dashboard::Find(request.path);
  if (!asset) return std::nullopt;
  ApiResponse r;
  r.content_type = std::string(asset->content_type);
  r.body = std::string(asset->body);
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                         "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Cache-Control", "no-cache");
  return r;
}

namespace {
constexpr size_t kMaxQuestionBytes = 1024;
}  // namespace

ApiResponse ApiHandler::Handle(const ApiRequest& request) {
  if (auto asset = DashboardAsset(request)) return *asset;
  if (!options_.token.empty() && !BearerTokenMatches(request.authorization, options_.token)) {
    const bool bearer = request.authorization.rfind("Bearer ", 0) == 0 && request.authorization.size() > 7;
    ApiResponse r =
        bearer ? Error(403, "wrong bearer token") : Error(401, "this server needs \"Authorization: Bearer <token>\"");
    if (!bearer) r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  }
  QueryParams params;
  if (auto e = ParseQueryString(request.query, params, options_.query)) return Error(400, e->message, e->param);
  try {
    return Route(request, params);
  } catch (const std::exception& e) {
    // A bug must cost one request, never the server (or the agent it runs in).
    return Error(500, std::string("internal error: ") + e.what());
  }
}

ApiResponse ApiHandler::Route(const ApiRequest& request, const QueryParams& params) {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  auto only = [&](bool allowed, std::string_view allow, auto&& fn) -> ApiResponse {
    if (!allowed) {
      ApiResponse r = Error(
          405, "method " + request.method.substr(0, 16) + " not allowed here (allowed: " + std::string(allow) + ")");
      r.headers.emplace_back("Allow", std::string(allow));
      return r;
    }
    return fn();
  };
  if (path == "/metrics") return only(get, "GET", [&] { return Metrics(params); });
  if (path.rfind(kPrefix, 0) != 0) return Error(404, "no such route (see /api/v1/node, /metrics)");
  const std::string_view rest = std::string_view(path).substr(kPrefix.size());
  if (rest == "node") return only(get, "GET", [&] { return Node(params); });
  if (rest == "observations") return only(get, "GET", [&] { return Observations(params); });
  if (rest == "findings") return only(get, "GET", [&] { return Findings(params); });
  if (rest == "diagnoses") return only(get, "GET", [&] { return Diagnoses(params); });
  if (rest == "actions") return only(get, "GET", [&] { return Actions(params); });
  if (rest == "why-slow") return only(get, "GET", [&] { return WhySlow(params); });
  if (rest == "ask") return only(request.method == "POST", "POST", [&] { return Ask(request, params); });
  if (rest == "policy/evaluate") {
    return only(request.method == "POST", "POST", [&] { return Reevaluate(request, params); });
  }
  if (path.rfind(kDiagnosesPrefix, 0) == 0) {
    std::string_view tail = std::string_view(path).substr(kDiagnosesPrefix.size());
    auto ends = [&tail](std::string_view suffix) {
      if (tail.size() <= suffix.size() || tail.substr(tail.size() - suffix.size()) != suffix) return false;
      tail.remove_suffix(suffix.size());
      return true;
    };
    const bool ack = ends("/ack");
    const bool resolve = !ack && ends("/resolve");
    auto id = ParseRowId(tail);
    if (!id) return Error(404, "no such diagnosis id (ids are positive integers from /api/v1/diagnoses)");
    if (ack) return only(request.method == "POST", "POST", [&] { return Acknowledge(*id, request, params); });
    if (resolve) return only(request.method == "POST", "POST", [&] { return Resolve(*id, request, params); });
    return only(get, "GET", [&] { return DiagnosisById(*id, params); });
  }
  return Error(404, "no such route (see docs/api.md)");
}

ApiResponse ApiHandler::Node(const QueryParams& params) {
  if (auto e = ExpectNoParams(params)) return Error(400, e->message, e->param);
  auto now = provider_.NowNs();
  if (!now.ok()) return Failed(now.status());
  auto stats = provider_.StoreStatistics();
  if (!stats.ok()) return Failed(stats.status());
  auto active = provider_.ActiveDiagnosis();
  if (!active.ok()) return Failed(active.status());
  auto sources = provider_.Sources(*now - options_.metrics.window_ns);
  if (!sources.ok()) return Failed(sources.status());
  Json j{{"node", provider_.Node()}, {"api_version", "v1"}, {"now_ns", *now}};
  j["store"] = Json{{"observations", stats->observations},    {"findings", stats->findings},
                    {"diagnoses", stats->diagnoses},          {"actions", stats->actions},
                    {"used_bytes", stats->used_bytes},        {"file_bytes", stats->file_bytes},
                    {"schema_version", stats->schema_version}};
  if (active->has_value()) {
    Json d = (*active)->value;
    d["id"] = (*active)->id;
    j["active_diagnosis"] = d;
  } else {
    j["active_diagnosis"] = nullptr;
  }
  Json list = Json::array();
  for (const SourceHealth& s : *sources) {
    Json e{{"source", ToString(s.source)}};
    if (s.up) e["up"] = *s.up;
    if (s.last_success_ns) e["last_success_ns"] = *s.last_success_ns;
    if (s.errors) e["errors"] = *s.errors;
    if (s.error) e["error"] = *s.error;
    list.push_back(e);
  }
  j["sources"] = list;
  AddSight(j, provider_.Sight());
  return JsonReply(j);
}

ApiResponse ApiHandler::Observations(const QueryParams& params) {
  auto now = provider_.NowNs();
  if (!now.ok()) return Failed(now.status());
  ObservationsRequest req;
  if (auto e = ParseObservationsRequest(params, *now, options_.page, req)) return Error(400, e->message, e->param);
  ObservationQuery q;
  q.layer = req.layer;
  q.component = req.component;
  q.kind = req.kind;
  q.source = req.source;
  q.since_ns = Since(req.since_ns);
  q.until_ns = Until(req.until_ns);
  if (req.cursor) q.since_ns = std::max(q.since_ns, req.cursor->time_ns);
  // Rows sharing the cursor's instant (one NVML sample is hundreds) are read again and
  // stepped past; read more when they fill the fetch, up to the scan cap.
  size_t extra = req.cursor ? 256 : 0;
  std::vector<Row<Observation>> rows;
  bool more_stored = false;
  while (true) {
    q.limit = req.limit + 1 + extra;
    auto got = provider_.Observations(q);
    if (!got.ok()) return Failed(got.status());
    more_stored = got->rows.size() + got->bad_rows.size() >= q.limit;
    rows.clear();
    for (auto& row : got->rows) {
      if (After(row.value.time_ns, row.id, req.cursor)) rows.push_back(std::move(row));
    }
    if (rows.size() > req.limit || !more_stored || q.limit >= options_.max_observation_scan) break;
    extra = std::min(options_.max_observation_scan, extra * 4 + 1024);
  }
  if (rows.empty() && more_stored) {
    return Error(503, "more than " + std::to_string(options_.max_observation_scan) +
                          " observations share one instant; narrow the query (kind, component)");
  }
  const Page page = BuildPage(rows, req.limit, options_.max_response_bytes, more_stored,
                              [](const Observation& o) { return o.time_ns; });
  return ApiResponse{200, "application/json", PageBody(provider_.Node(), "observations", page, req.limit, false), {}};
}

namespace {

// Findings, diagnoses and actions: the store filters by overlap with the window only, so
// the page is cut here by (sort time, id) after the cursor.
template <typename T, typename List, typename TimeOf>
ApiResponse RecordPage(DataProvider& provider, const ApiOptions& options, const QueryParams& params,
                       std::string_view key, List list, TimeOf time_of) {
  auto now = provider.NowNs();
  if (!now.ok()) return Failed(now.status());
  RecordsRequest req;
  if (auto e = ParseRecordsRequest(params, *now, options.page, req))
    return ApiHandler::Error(400, e->message, e->param);
  RecordQuery q;
  q.since_ns = Since(req.since_ns);
  q.until_ns = Until(req.until_ns);
  q.limit = options.max_record_scan;
  auto got = list(q);
  if (!got.ok()) return Failed(got.status());
  const bool truncated = got->rows.size() + got->bad_rows.size() >= q.limit;
  std::vector<Row<T>> rows;
  for (auto& row : got->rows) {
    if (After(time_of(row.value), row.id, req.cursor)) rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const Row<T>& a, const Row<T>& b) {
    return std::pair(time_of(a.value), a.id) < std::pair(time_of(b.value), b.id);
  });
  const Page page = BuildPage(rows, req.limit, options.max_response_bytes, false, time_of);
  return ApiResponse{200, "application/json", PageBody(provider.Node(), key, page, req.limit, truncated), {}};
}

}  // namespace

ApiResponse ApiHandler::Findings(const QueryParams& params) {
  return RecordPage<Finding>(
      provider_, options_, params, "findings", [this](const RecordQuery& q) { return provider_.Findings(q); },
      [](const Finding& f) { return f.first_ns; });
}

ApiResponse ApiHandler::Diagnoses(const QueryParams& params) {
  return RecordPage<Diagnosis>(
      provider_, options_, params, "diagnoses", [this](const RecordQuery& q) { return provider_.Diagnoses(q); },
      [](const Diagnosis& d) { return d.first_ns; });
}

ApiResponse ApiHandler::Actions(const QueryParams& params) {
  return RecordPage<ActionRecord>(
      provider_, options_, params, "actions", [this](const RecordQuery& q) { return provider_.Actions(q); },
      [](const ActionRecord& a) { return a.time_ns; });
}

ApiResponse ApiHandler::DiagnosisById(int64_t id, const QueryParams& params) {
  if (auto e = ExpectNoParams(params)) return Error(400, e->message, e->param);
  auto found = provider_.DiagnosisById(id);
  if (!found.ok()) return Failed(found.status());
  if (!*found) return Error(404, "no diagnosis " + std::to_string(id) + " for node " + provider_.Node());
  Json j = (*found)->value;
  j["id"] = id;
  j["node"] = provider_.Node();
  // What was done about it: the actions recorded against this diagnosis.
  RecordQuery q;
  q.limit = options_.max_record_scan;
  auto actions = provider_.Actions(q);
  if (!actions.ok()) return Failed(actions.status());
  Json list = Json::array();
  for (const auto& row : actions->rows) {
    if (row.value.diagnosis_id != id) continue;
    Json a = row.value;
    a["id"] = row.id;
    list.push_back(a);
  }
  j["actions"] = list;
  // For the dashboard: what happens next, step by step, and which readings show the fault.
  j["plan"] = PlanJson(provider_.Node(), (*found)->value, actions->rows);
  Json kinds = Json::array();
  for (ObsKind k : SignalKinds((*found)->value.fault_class)) kinds.push_back(std::string(ToString(k)));
  j["signal"] = Json{{"component", (*found)->value.component.Id()}, {"kinds", kinds}};
  return JsonReply(j);
}

ApiResponse ApiHandler::WhySlow(const QueryParams& params) {
  auto now = provider_.NowNs();
  if (!now.ok()) return Failed(now.status());
  WhySlowRequest req;
  if (auto e = ParseWhySlowRequest(params, *now, req)) return Error(400, e->message, e->param);
  auto window = BoundAnalysisWindow(req.since_ns, req.until_ns, *now, options_.analysis);
  if (!window.ok()) return Error(400, window.status().message(), "since");
  AnalysisSlot slot(analyses_, options_.max_concurrent_analyses);
  if (!slot.held()) return AnalysisBusy();
  auto answer = provider_.WhySlow(window->since_ns, window->until_ns, options_.analysis.max_observations);
  if (!answer.ok()) {
    if (answer.status().code() == StatusCode::kInvalidArgument) return Error(400, answer.status().message(), "since");
    return Failed(answer.status());
  }
  // The shape of `faultline why-slow --json`; no data for the node in the window is
  // 200 with "status": "unknown" (the CLI's exit 3), never a workload answer.
  Json j = daemon::WhySlowJson(provider_.Node(), *answer);
  AddCapped(j, *window, answer->observations, options_.analysis);
  return JsonReply(j);
}

ApiResponse ApiHandler::Metrics(const QueryParams& params) {
  if (auto e = ExpectNoParams(params)) return Error(400, e->message, e->param);
  auto text = RenderMetrics(provider_, options_.metrics);
  if (!text.ok()) return Failed(text.status());
  return ApiResponse{200, "text/plain; version=0.0.4; charset=utf-8", std::move(*text), {}};
}

ApiResponse ApiHandler::Acknowledge(int64_t id, const ApiRequest& request, const QueryParams& params) {
  if (options_.token.empty()) {
    return Error(403, "mutating endpoints are disabled: start the server with a token file (--token-file)");
  }
  if (auto e = ExpectNoParams(params)) return Error(400, e->message, e->param);
  if (request.body.size() > options_.max_body_bytes) return Error(413, "body too large");
  std::string note;
  if (!request.body.empty()) {
    if (JsonNestingDepth(request.body) > 8) return Error(400, "body nests too deeply", "body");
    const Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/false);
    auto it = body.is_object() ? body.find("note") : body.end();
    if (body.is_discarded() || !body.is_object() || (it != body.end() && !it->is_string())) {
      return Error(400, "body must be a JSON object, optionally with a string \"note\"", "body");
    }
    if (it != body.end()) note = it->get<std::string>();
  }
  auto row = provider_.Acknowledge(id, note);
  if (!row.ok()) {
    if (row.status().code() == StatusCode::kNotFound) return Error(404, row.status().message());
    if (row.status().code() == StatusCode::kPermissionDenied) return Error(501, row.status().message());
    return Failed(row.status());
  }
  return JsonReply(Json{{"acknowledged", id}, {"action_id", *row}}, 201);
}

// Mutating: the token is required (configured and matched), like the acknowledgement.
ApiResponse ApiHandler::Resolve(int64_t id, const ApiRequest& request, const QueryParams& params) {
  if (options_.token.empty()) {
    return Error(403, "mutating endpoints are disabled: start the server with a token file (--token-file)");
  }
  if (auto e = ExpectNoParams(params)) return Error(400, e->message, e->param);
  if (request.body.size() > options_.max_body_bytes) return Error(413, "body too large");
  if (JsonNestingDepth(request.body) > 8) return Error(400, "body nests too deeply", "body");
  const Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/false);
  auto it = body.is_object() ? body.find("fixed_by") : body.end();
  if (body.is_discarded() || it == body.end() || !it->is_string() || it->get<std::string>().empty()) {
    return Error(400, "body must be a JSON object with a non-empty string \"fixed_by\" (what was done)", "fixed_by");
  }
  auto done = provider_.Resolve(id, it->get<std::string>());
  if (!done.ok()) {
    if (done.status().code() == StatusCode::kNotFound) return Error(404, done.status().message());
    if (done.status().code() == StatusCode::kPermissionDenied) return Error(501, done.status().message());
    return Failed(done.status());
  }
  return JsonReply(*done);
}

ApiResponse ApiHandler::Reevaluate(const ApiRequest& request, const QueryParams& params) {
  if (options_.token.empty()) {
    return Error(403, "mutating endpoints are disabled: start the server with a token file (--token-file)");
  }
  if (auto e = ExpectNoParams(params)) return Error(400, e->message, e->param);
  if (request.body.size() > options_.max_body_bytes) return Error(413, "body too large");
  if (Status s = provider_.Reevaluate(); !s.ok()) {
    if (s.code() == StatusCode::kPermissionDenied) return Error(501, s.message());
    return Failed(s);
  }
  return JsonReply(Json{{"evaluation_requested", true}}, 202);
}

// A question is a read: open where GET routes are (no token configured, loopback), and
// behind the token otherwise (Handle checked it). Bounded: the body, the question's size.
ApiResponse ApiHandler::Ask(const ApiRequest& request, const QueryParams& params) {
  if (auto e = ExpectNoParams(params)) return Error(400, e->message, e->param);
  if (request.body.size() > options_.max_body_bytes) return Error(413, "body too large");
  if (JsonNestingDepth(request.body) > 8) return Error(400, "body nests too deeply", "body");
  const Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/false);
  auto it = body.is_object() ? body.find("question") : body.end();
  if (body.is_discarded() || it == body.end() || !it->is_string() || it->get<std::string>().empty()) {
    return Error(400, "body must be a JSON object with a non-empty string \"question\"", "question");
  }
  const std::string question = it->get<std::string>();
  if (question.size() > kMaxQuestionBytes) return Error(400, "question longer than 1024 bytes", "question");
  AnalysisSlot slot(analyses_, options_.max_concurrent_analyses);
  if (!slot.held()) return AnalysisBusy();
  auto answer = provider_.Ask(question, options_.analysis);
  if (!answer.ok()) {
    if (answer.status().code() == StatusCode::kUnsupported) return Error(501, answer.status().message());
    return Failed(answer.status());
  }
  return JsonReply(*answer);
}

}  // namespace faultline::api
