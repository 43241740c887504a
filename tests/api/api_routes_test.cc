// Every route of the API over HTTP on loopback, against a store filled with the incident:
// shapes (shared with the CLI's --json), paging, and the error replies.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "api_fixture.h"
#include "daemon/why_slow.h"

namespace faultline::api_test {
namespace {

class ApiRoutes : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(dir_.File("store.db"));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    incident_ = FillIncident(*store_);
  }

  api::StoreProvider Provider(bool writable = false) {
    return api::StoreProvider(*store_, {.node = kNode, .writable = writable});
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  Incident incident_;
};

TEST_F(ApiRoutes, Node) {
  auto provider = Provider();
  RunningServer server(provider, {});
  auto r = server.Client().Get("/api/v1/node");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  Json j = ParseBody(r);
  EXPECT_EQ(j["node"], kNode);
  EXPECT_EQ(j["store"]["observations"], incident_.observations);
  EXPECT_EQ(j["store"]["diagnoses"], 2);
  EXPECT_EQ(j["active_diagnosis"]["id"], incident_.diagnosis_id);
  EXPECT_EQ(j["active_diagnosis"]["fault_class"], "gpu_fell_off_bus");
  EXPECT_EQ(j["now_ns"], kT0 + 61 * kSec);  // the newest stored observation, not the wall clock
  std::set<std::string> sources;
  for (const auto& s : j["sources"]) sources.insert(s["source"].get<std::string>());
  EXPECT_EQ(sources, (std::set<std::string>{"nvml", "redfish", "sysfs", "kmsg"}));
}

// `serve` reads the agent's blind state from the store (store/agent_state.h): recorded blind,
// the node says so with the failing sources, whatever diagnosis is in force.
TEST_F(ApiRoutes, NodeShowsTheAgentsRecordedBlindness) {
  auto provider = Provider();
  RunningServer server(provider, {});
  EXPECT_EQ(ParseBody(server.Client().Get("/api/v1/node"))["blind"], false);  // nothing recorded
  AgentState blind;
  blind.blind = true;
  blind.since_ns = kT0 + 90 * kSec;
  blind.updated_ns = blind.since_ns;
  blind.sources = {
      {.source = "kmsg", .failing = true, .error = "unavailable: /dev/kmsg: Permission denied"},
      {.source = "dcgm_exporter", .failing = true, .error = "unavailable: connection refused", .last_success_ns = kT0}};
  ASSERT_TRUE(PutAgentState(*store_, kNode, blind).ok());
  Json j = ParseBody(server.Client().Get("/api/v1/node"));
  EXPECT_EQ(j["blind"], true);
  EXPECT_EQ(j["blind_since_ns"], kT0 + 90 * kSec);
  ASSERT_EQ(j["failing_sources"].size(), 2u);
  EXPECT_EQ(j["failing_sources"][0]["source"], "kmsg");
  EXPECT_EQ(j["failing_sources"][0]["error"], "unavailable: /dev/kmsg: Permission denied");
  EXPECT_EQ(j["failing_sources"][1]["source"], "dcgm-exporter");  // the API's name for it
  EXPECT_EQ(j["failing_sources"][1]["last_success_ns"], kT0);
  EXPECT_EQ(j["active_diagnosis"]["fault_class"], "gpu_fell_off_bus");  // kept; the reader is told it is blind
  // Sight back: not blind, no failing list.
  blind.blind = false;
  ASSERT_TRUE(PutAgentState(*store_, kNode, blind).ok());
  j = ParseBody(server.Client().Get("/api/v1/node"));
  EXPECT_EQ(j["blind"], false);
  EXPECT_FALSE(j.contains("failing_sources"));
  // A garbled record: unknown, never "not blind".
  ASSERT_TRUE(store_->PutCursors({{kNode, "agent", "state", "{"}}).ok());
  j = ParseBody(server.Client().Get("/api/v1/node"));
  EXPECT_TRUE(j["blind"].is_null());
  EXPECT_TRUE(j.contains("blind_error"));
}

TEST_F(ApiRoutes, DiagnosesListAndOneWithEvidenceChain) {
  auto provider = Provider();
  RunningServer server(provider, {});
  Json list = ParseBody(server.Client().Get("/api/v1/diagnoses"));
  ASSERT_EQ(list["diagnoses"].size(), 2u);
  EXPECT_EQ(list["next_cursor"], nullptr);
  EXPECT_EQ(list["diagnoses"][0]["id"], incident_.older_diagnosis_id);  // oldest first
  // The element is the CLI's Diagnosis JSON (core/json.h) plus its row id.
  Json expected = IncidentDiagnosis();
  Json got = list["diagnoses"][1];
  got.erase("id");
  EXPECT_EQ(got, expected);

  auto one = server.Client().Get("/api/v1/diagnoses/" + std::to_string(incident_.diagnosis_id));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  Json d = ParseBody(one);
  EXPECT_EQ(d["evidence"].size(), 2u);
  EXPECT_EQ(d["evidence"][0]["text"], "NVRM: Xid (PCI:0000:66:00): 79, pid=1234, GPU has fallen off the bus.");
  EXPECT_EQ(d["ruled_out"][0]["layer"], "fabric");
  EXPECT_EQ(d["explains"][0], "hw_power_brake_slowdown on gpu/3 at 10:00:30");
  ASSERT_EQ(d["actions"].size(), 1u);
  EXPECT_EQ(d["actions"][0]["action"], "reset_gpu");
  Diagnosis back;
  EXPECT_NO_THROW(back = d.get<Diagnosis>());
  EXPECT_EQ(back, IncidentDiagnosis());
}

TEST_F(ApiRoutes, UnknownIdsAndRoutesAre404Json) {
  auto provider = Provider();
  RunningServer server(provider, {});
  auto client = server.Client();
  for (const std::string path : {"/api/v1/diagnoses/999999", "/api/v1/diagnoses/0", "/api/v1/diagnoses/abc",
                                 "/api/v1/diagnoses/-1", "/api/v1/nope", "/nope", "/ui/nope.js", "/api/v2/node"}) {
    auto r = client.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    Json j = ParseBody(r);
    EXPECT_EQ(j["status"], 404) << path;
    EXPECT_TRUE(j["error"].is_string()) << path;
  }
  auto wrong = client.Post("/api/v1/node", "", "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->get_header_value("Allow"), "GET");
}

// The dashboard's page and files are served at "/" and "/ui/..." with a strict content
// security policy, and without the token (they hold no data; the API calls still need it).
TEST_F(ApiRoutes, DashboardIsServedWithoutDataOrToken) {
  auto provider = Provider();
  api::ServerOptions options;
  options.api.token = "s3cret-token";
  RunningServer server(provider, options);
  auto client = server.Client();
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("/ui/app.js"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  auto js = client.Get("/ui/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  auto data = client.Get("/api/v1/node");
  ASSERT_TRUE(data);
  EXPECT_EQ(data->status, 401);
  auto post = client.Post("/", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_NE(post->status, 200);
}

TEST_F(ApiRoutes, FindingsAndActions) {
  auto provider = Provider();
  RunningServer server(provider, {});
  Json f = ParseBody(server.Client().Get("/api/v1/findings"));
  ASSERT_EQ(f["findings"].size(), 1u);
  Json got = f["findings"][0];
  got.erase("id");
  EXPECT_EQ(got, Json(IncidentFinding()));
  Json a = ParseBody(server.Client().Get("/api/v1/actions?since=2025-11-29T10:00:00Z"));
  ASSERT_EQ(a["actions"].size(), 1u);
  EXPECT_EQ(a["actions"][0]["diagnosis_id"], incident_.diagnosis_id);
  Json none = ParseBody(server.Client().Get("/api/v1/actions?until=2025-11-29T09:00:00Z"));
  EXPECT_TRUE(none["actions"].empty());
}

TEST_F(ApiRoutes, WhySlowIsTheCliShape) {
  auto provider = Provider();
  RunningServer server(provider, {});
  auto r = server.Client().Get("/api/v1/why-slow?since=2025-11-29T09:59:00Z");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = ParseBody(r);
  // The same function and shape as `faultline why-slow --json` (cmd_why_slow.cc).
  auto answer = daemon::WhySlow(*store_, {.node = kNode, .since_ns = kT0 - 60 * kSec});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(j, daemon::WhySlowJson(kNode, *answer));
  EXPECT_NE(j["status"], "unknown");
  EXPECT_EQ(ParseBody(server.Client().Get("/api/v1/why-slow?since=nonsense"))["param"], "since");
  // No data in the window: 200 with status "unknown", never a workload answer.
  Json empty = ParseBody(server.Client().Get("/api/v1/why-slow?since=2025-11-28T00:00:00Z&until=2025-11-28T01:00:00Z"));
  EXPECT_EQ(empty["status"], "unknown");
  EXPECT_EQ(empty["primary"]["fault_class"], "none");
}

// Before the fix an open or old `since` read the whole store (every finding and up to
// 200 000 observations per request): a few requests cost the agent half a gigabyte.
TEST_F(ApiRoutes, WhySlowWindowIsBounded) {
  auto provider = Provider();
  RunningServer server(provider, {});
  auto r = server.Client().Get("/api/v1/why-slow?since=1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  Json e = ParseBody(r);
  EXPECT_EQ(e["param"], "since");
  EXPECT_NE(e["error"].get<std::string>().find("24h"), std::string::npos) << r->body;
  EXPECT_EQ(
      ParseBody(server.Client().Get("/api/v1/why-slow?since=2025-11-28T00:00:00Z&until=2025-11-29T10:00:00Z"))["param"],
      "since");  // 34 h
  // No since: the last 24 h before "now" (the newest observation here), and the answer says so.
  const int64_t now = kT0 + 61 * kSec;
  const int64_t since = now - 24 * 3600 * kSec;
  Json j = ParseBody(server.Client().Get("/api/v1/why-slow"));
  ASSERT_TRUE(j.contains("capped")) << j.dump();
  EXPECT_EQ(j["capped"], (Json{{"since_ns", since}}));
  auto answer = daemon::WhySlow(*store_, {.node = kNode, .since_ns = since});
  ASSERT_TRUE(answer.ok());
  Json expected = daemon::WhySlowJson(kNode, *answer);
  expected["capped"] = Json{{"since_ns", since}};
  EXPECT_EQ(j, expected);
}

TEST_F(ApiRoutes, WhySlowReadsAtMostMaxObservations) {
  auto provider = Provider();
  api::ServerOptions options;
  options.api.analysis.max_observations = 5;
  RunningServer server(provider, options);
  Json j = ParseBody(server.Client().Get("/api/v1/why-slow?since=2025-11-29T09:59:00Z"));
  EXPECT_EQ(j["capped"], (Json{{"observations", 5}})) << j.dump();
  auto answer = daemon::WhySlow(*store_, {.node = kNode, .since_ns = kT0 - 60 * kSec, .max_observations = 5});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->observations, 5u);
  EXPECT_EQ(j["reason"], daemon::WhySlowJson(kNode, *answer)["reason"]);
}

// A provider whose analysis waits until released: one why-slow held in flight.
class HeldProvider : public api::StoreProvider {
 public:
  using api::StoreProvider::StoreProvider;
  Result<daemon::WhySlowAnswer> WhySlow(int64_t since, int64_t until, size_t max_observations) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++entered_;
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(20), [this] { return released_; });
    }
    return api::StoreProvider::WhySlow(since, until, max_observations);
  }
  bool WaitEntered() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [this] { return entered_ > 0; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool released_ = false;
};

// Before the fix every worker could run an analysis at once, each holding the store and
// its rows: analyses now take one slot, and past it the answer is 503 at once.
TEST_F(ApiRoutes, OneAnalysisAtATimeOthers503) {
  HeldProvider provider(*store_, {.node = kNode});
  RunningServer server(provider, {});
  int first_status = 0;
  std::thread first([&] {
    auto r = server.Client().Get("/api/v1/why-slow?since=2h");
    first_status = r ? r->status : -1;
  });
  ASSERT_TRUE(provider.WaitEntered());
  auto second = server.Client().Get("/api/v1/why-slow?since=2h");
  auto ask = server.Client().Post("/api/v1/ask", R"({"question":"why is this node slow?"})", "application/json");
  auto node = server.Client().Get("/api/v1/node");  // not an analysis: served
  provider.Release();
  first.join();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 503) << second->body;
  EXPECT_EQ(second->get_header_value("Retry-After"), "1");
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->status, 503) << ask->body;
  ASSERT_TRUE(node);
  EXPECT_EQ(node->status, 200);
  EXPECT_EQ(first_status, 200);
  auto after = server.Client().Get("/api/v1/why-slow?since=2h");  // the slot is back
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(ApiRoutes, ObservationFilters) {
  auto provider = Provider();
  RunningServer server(provider, {});
  Json j = ParseBody(server.Client().Get("/api/v1/observations?layer=gpu&component=gpu%2F3&kind=ecc_sbe&limit=100"));
  ASSERT_EQ(j["observations"].size(), 6u);  // 3 samples x (total + dram location)
  for (const auto& o : j["observations"]) {
    EXPECT_EQ(o["component"]["name"], "3");
    EXPECT_EQ(o["kind"], "ecc_sbe");
    Observation back;
    EXPECT_NO_THROW(back = o.get<Observation>());
  }
  Json xid = ParseBody(server.Client().Get("/api/v1/observations?kind=xid"));
  ASSERT_EQ(xid["observations"].size(), 1u);
  EXPECT_EQ(xid["observations"][0]["code"], 79);
  Json win = ParseBody(
      server.Client().Get("/api/v1/observations?source=redfish&since=2025-11-29T10:00:30Z&until=2025-11-29T10:00:30Z"));
  EXPECT_EQ(win["observations"].size(), 5u);  // psu state, voltage, fan, two inlet sensors of one sample
}

// Pages through everything with small pages: every row exactly once, in order, even
// when a page boundary falls inside one instant (an NVML sample is 40 rows at one time).
TEST_F(ApiRoutes, PagingVisitsEveryRowOnce) {
  auto provider = Provider();
  for (size_t max_bytes : {size_t{4} << 20, size_t{1500}}) {
    api::ServerOptions options;
    options.api.max_response_bytes = max_bytes;
    RunningServer server(provider, options);
    std::vector<int64_t> ids;
    std::string cursor;
    int pages = 0;
    while (true) {
      std::string path = "/api/v1/observations?limit=7" + (cursor.empty() ? "" : "&cursor=" + cursor);
      Json j = ParseBody(server.Client().Get(path));
      ASSERT_TRUE(j.is_object()) << path;
      ASSERT_LE(j["observations"].size(), 7u);
      ASSERT_GE(j["observations"].size(), 1u);
      for (const auto& o : j["observations"]) ids.push_back(o["id"].get<int64_t>());
      ++pages;
      ASSERT_LT(pages, 1000);
      if (j["next_cursor"].is_null()) break;
      cursor = j["next_cursor"].get<std::string>();
    }
    EXPECT_EQ(ids.size(), incident_.observations) << max_bytes;
    EXPECT_EQ(std::set<int64_t>(ids.begin(), ids.end()).size(), ids.size());
    if (max_bytes < 2000) {
      EXPECT_GT(pages, static_cast<int>(incident_.observations / 7));  // the byte cap cut pages
    }
  }
}

TEST_F(ApiRoutes, RecordPaging) {
  for (int i = 0; i < 5; ++i) {
    Finding f = IncidentFinding();
    f.first_ns = kT0 + i * kSec;
    f.summary = "extra " + std::to_string(i);
    ASSERT_TRUE(store_->PutFinding(kNode, f).ok());
  }
  auto provider = Provider();
  RunningServer server(provider, {});
  std::vector<std::string> summaries;
  std::string cursor;
  while (true) {
    Json j = ParseBody(server.Client().Get("/api/v1/findings?limit=2" + (cursor.empty() ? "" : "&cursor=" + cursor)));
    for (const auto& f : j["findings"]) summaries.push_back(f["summary"]);
    if (j["next_cursor"].is_null()) break;
    cursor = j["next_cursor"];
  }
  EXPECT_EQ(summaries, (std::vector<std::string>{"extra 0", "extra 1", "extra 2", "extra 3", "extra 4", "XID 79"}));
}

TEST_F(ApiRoutes, BadParametersAre400NamingTheParameter) {
  auto provider = Provider();
  RunningServer server(provider, {});
  const std::pair<std::string, std::string> cases[] = {
      {"/api/v1/observations?limit=100000000000000000000", "limit"},
      {"/api/v1/observations?limit=5000", "limit"},
      {"/api/v1/observations?layer=%ff%fe", "layer"},
      {"/api/v1/observations?kind=DROP%20TABLE", "kind"},
      {"/api/v1/observations?cursor=1.2.3", "cursor"},
      {"/api/v1/observations?since=%zz", "since"},
      {"/api/v1/findings?component=gpu%2F3", "component"},
      {"/api/v1/node?verbose=1", "verbose"},
      {"/metrics?x=1", "x"},
      {"/api/v1/diagnoses?limit=2&limit=3", "limit"},
  };
  for (const auto& [path, param] : cases) {
    auto r = server.Client().Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << " " << r->body;
    Json j = ParseBody(r);
    EXPECT_EQ(j["param"], param) << path;
    EXPECT_EQ(j["status"], 400);
  }
}

TEST_F(ApiRoutes, TokenGuardsEveryRouteWhenSet) {
  auto provider = Provider();
  api::ServerOptions options;
  options.api.token = "tok-0123456789abcdef";
  RunningServer server(provider, options);
  auto client = server.Client();
  auto none = client.Get("/api/v1/node");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer");
  auto basic = client.Get("/metrics", {{"Authorization", "Basic dXNlcjpwYXNz"}});
  EXPECT_EQ(basic->status, 401);
  auto wrong = client.Get("/api/v1/node", {{"Authorization", "Bearer tok-0123456789abcdeX"}});
  EXPECT_EQ(wrong->status, 403);
  auto prefix = client.Get("/api/v1/node", {{"Authorization", "Bearer tok-0123456789abcdef0"}});
  EXPECT_EQ(prefix->status, 403);
  auto right = client.Get("/api/v1/node", {{"Authorization", "Bearer tok-0123456789abcdef"}});
  EXPECT_EQ(right->status, 200);
  for (const auto* r : {&none, &basic, &wrong, &prefix}) {
    EXPECT_EQ((*r)->body.find("tok-0123456789abcdef"), std::string::npos);
    EXPECT_TRUE(ParseBody(*r)["error"].is_string());
  }
  EXPECT_EQ(server.server().stats().unauthorized, 4u);
}

TEST_F(ApiRoutes, AcknowledgeNeedsTokenAndAWritableStore) {
  const std::string path = "/api/v1/diagnoses/" + std::to_string(incident_.diagnosis_id) + "/ack";
  const httplib::Headers auth{{"Authorization", "Bearer ack-token-42"}};
  {
    // No token configured: mutating routes are off.
    auto provider = Provider(/*writable=*/true);
    RunningServer server(provider, {});
    auto r = server.Client().Post(path, R"({"note":"seen"})", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 403);
    EXPECT_NE(ParseBody(r)["error"].get<std::string>().find("token"), std::string::npos);
  }
  {
    // Read-only data (faultline serve): a clear 501.
    auto provider = Provider(/*writable=*/false);
    api::ServerOptions options;
    options.api.token = "ack-token-42";
    RunningServer server(provider, options);
    auto r = server.Client().Post(path, auth, R"({"note":"seen"})", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 501);
    EXPECT_EQ(server.Client().Post(path, R"({})", "application/json")->status, 401);
  }
  {
    auto provider = Provider(/*writable=*/true);
    api::ServerOptions options;
    options.api.token = "ack-token-42";
    RunningServer server(provider, options);
    auto client = server.Client();
    EXPECT_EQ(client.Post(path, {{"Authorization", "Bearer nope"}}, "{}", "application/json")->status, 403);
    EXPECT_EQ(client.Post(path, auth, "[1,2", "application/json")->status, 400);
    EXPECT_EQ(client.Post(path, auth, R"({"note":5})", "application/json")->status, 400);
    EXPECT_EQ(client.Post(path, auth, std::string(100, '[') + std::string(100, ']'), "application/json")->status, 400);
    EXPECT_EQ(client.Post("/api/v1/diagnoses/424242/ack", auth, "{}", "application/json")->status, 404);
    EXPECT_EQ(client.Get(path, auth)->status, 405);
    auto ok = client.Post(path, auth, R"({"note":"on it"})", "application/json");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 201) << ok->body;
    Json d = ParseBody(client.Get("/api/v1/diagnoses/" + std::to_string(incident_.diagnosis_id), auth));
    ASSERT_EQ(d["actions"].size(), 2u);
    const Json& ack = d["actions"][0]["outcome"] == "acknowledged" ? d["actions"][0] : d["actions"][1];
    EXPECT_EQ(ack["outcome"], "acknowledged");
    EXPECT_EQ(ack["reason"], "on it");
    EXPECT_EQ(ack["id"], ParseBody(ok)["action_id"]);
    auto big = client.Post(path, auth, std::string(10000, ' '), "application/json");
    ASSERT_TRUE(big);
    EXPECT_EQ(big->status, 413);
  }
}

}  // namespace
}  // namespace faultline::api_test

namespace faultline::api_test {
namespace {

// POST /api/v1/ask: the assistant's offline answer over the stored incident, writing nothing;
// a retriever's passages cited as runbook sections; bad bodies are 400 naming "question".
class FixedRetriever final : public assistant::Retriever {
 public:
  Result<std::vector<assistant::KbHit>> Search(std::string_view, size_t) const override {
    return std::vector<assistant::KbHit>{{.doc_id = "runbook/gpu_fell_off_bus#safe-actions",
                                          .kind = "runbook",
                                          .title = "GPU fell off the bus",
                                          .section = "Safe actions",
                                          .path = "runbooks/gpu_fell_off_bus.md",
                                          .text = "Drain the node, then reboot it.",
                                          .score = 1}};
  }
};

TEST_F(ApiRoutes, AskAnswersFromTheStoreWithEvidenceAndRunbooksAndWritesNothing) {
  FixedRetriever kb;
  api::StoreProvider provider(*store_, {.node = kNode, .retriever = &kb});
  RunningServer server(provider, {});
  const auto before = store_->Stats();
  auto r = server.Client().Post("/api/v1/ask", R"({"question":"why is this node slow?"})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json j = ParseBody(r);
  EXPECT_EQ(j["mode"], "offline");
  EXPECT_NE(r->body.find("gpu_fell_off_bus"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("runbook/gpu_fell_off_bus#safe-actions"), std::string::npos) << r->body;
  EXPECT_EQ(store_->Stats()->actions, before->actions);
}

TEST_F(ApiRoutes, AskRefusesBadBodiesAndOtherMethods) {
  auto provider = Provider();
  RunningServer server(provider, {});
  const std::vector<std::string> bodies{"",  "[]", "{}", R"({"question":""})", R"({"question":42})", "{\"question\":",
                                       R"({"question":")" + std::string(2000, 'x') + R"("})"};
  for (const std::string& body : bodies) {
    auto r = server.Client().Post("/api/v1/ask", body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << body.substr(0, 40);
    EXPECT_EQ(ParseBody(r)["param"], "question") << body.substr(0, 40);
  }
  auto big = server.Client().Post("/api/v1/ask", std::string(5000, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  auto get = server.Client().Get("/api/v1/ask");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
}

}  // namespace
}  // namespace faultline::api_test
