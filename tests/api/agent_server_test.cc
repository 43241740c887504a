// The API served by the agent itself ([server] listen, docs/api.md "In the agent"): the
// agent's live source health and evaluation latency in /metrics and /api/v1/node,
// acknowledgements stored in its store, [server] config errors naming the key, and the
// real `faultline agent` binary serving on a free loopback port.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/agent_provider.h"
#include "api_fixture.h"
#include "daemon/agent.h"
#include "daemon/config.h"
#include "faultline_process.h"

namespace faultline::api_test {
namespace {

constexpr char kFellOffBus[] =
    "[  103.000001] NVRM: Xid (PCI:0000:b5:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

daemon::AgentConfig Config(const TempDir& dir) {
  daemon::AgentConfig c;
  c.agent.node = "node7";
  c.agent.store_path = dir.File("store.db");
  c.kmsg.path = dir.File("kern.log");
  c.nvml.enabled = false;
  c.sysfs.enabled = false;
  return c;
}

class AgentServer : public ::testing::Test {
 protected:
  AgentServer() : clock_(kT0, 150 * kSec), logger_(log_, daemon::LogLevel::kDebug, clock_) {}
  // An agent run once over `config`, served on 127.0.0.1:0 with token "t0k"; with
  // `own_reader`, the API reads through a read-only connection of its own (as `faultline
  // agent` runs it).
  void Serve(const daemon::AgentConfig& config, bool own_reader = false) {
    auto agent = daemon::Agent::Create(config, clock_, logger_);
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    agent_ = std::move(agent).value();
    ASSERT_TRUE(agent_->RunOnce().ok());  // a source that fails is not an agent error
    if (own_reader) {
      StoreOptions read_only;
      read_only.read_only = true;
      auto reader = Store::Open(config.agent.store_path, read_only);
      ASSERT_TRUE(reader.ok()) << reader.status().ToString();
      reader_ = std::move(reader).value();
    }
    provider_ = std::make_unique<api::AgentProvider>(*agent_, clock_, reader_.get());
    api::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.api.token = "t0k";
    server_ = std::make_unique<api::Server>(*provider_, options, &logger_);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (agent_) (void)agent_->Stop();
  }
  std::string Get(const std::string& path) {
    httplib::Client client("127.0.0.1", server_->port());
    auto res = client.Get(path.c_str(), {{"Authorization", "Bearer t0k"}});
    EXPECT_TRUE(res) << path;
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << path << ": " << res->body;
    return res->body;
  }

  TempDir dir_;
  FakeClock clock_;
  std::ostringstream log_;
  daemon::Logger logger_;
  std::unique_ptr<daemon::Agent> agent_;
  std::unique_ptr<Store> reader_;
  std::unique_ptr<api::AgentProvider> provider_;
  std::unique_ptr<api::Server> server_;
};

TEST_F(AgentServer, MetricsCarryLiveSourceHealthAndTheEvaluationLatencyHistogram) {
  daemon::AgentConfig config = Config(dir_);
  Write(config.kmsg.path, kFellOffBus);
  Serve(config);
  const std::string metrics = Get("/metrics");
  EXPECT_NE(metrics.find("faultline_source_up{node=\"node7\",source=\"kmsg\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("faultline_source_errors_total{node=\"node7\",source=\"kmsg\"} 0"), std::string::npos);
  EXPECT_NE(metrics.find("# TYPE faultline_evaluation_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(metrics.find("faultline_evaluation_duration_seconds_bucket{node=\"node7\",le=\"+Inf\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("faultline_evaluation_duration_seconds_count{node=\"node7\"} 1"), std::string::npos);
  const std::string node = Get("/api/v1/node");
  EXPECT_NE(node.find("gpu_fell_off_bus"), std::string::npos) << node;
  EXPECT_NE(node.find("\"up\":true"), std::string::npos) << node;
  EXPECT_NE(node.find("\"blind\":false"), std::string::npos) << node;
  EXPECT_NE(metrics.find("faultline_agent_blind{node=\"node7\"} 0"), std::string::npos);
}

TEST_F(AgentServer, AFailingSourceIsDownWithItsErrorsCounted) {
  daemon::AgentConfig config = Config(dir_);
  config.kmsg.path = dir_.File("no-such-dir/kern.log");
  Serve(config);
  const std::string metrics = Get("/metrics");
  EXPECT_NE(metrics.find("faultline_source_up{node=\"node7\",source=\"kmsg\"} 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("faultline_source_errors_total{node=\"node7\",source=\"kmsg\"} 1"), std::string::npos)
      << metrics;
}

// Every source failing: the node and /metrics say the agent is blind, name the source and
// its error, and no "none" diagnosis was stored to read as healthy.
TEST_F(AgentServer, EverySourceFailingIsBlindInTheNodeAndTheMetrics) {
  daemon::AgentConfig config = Config(dir_);
  config.kmsg.path = dir_.File("no-such-dir/kern.log");
  config.ethernet.enabled = false;  // else the host's own interfaces are read
  Serve(config);
  const Json node = Json::parse(Get("/api/v1/node"));
  EXPECT_EQ(node["blind"], true) << node.dump();
  EXPECT_EQ(node["blind_since_ns"], kT0);
  ASSERT_EQ(node["failing_sources"].size(), 1u) << node.dump();
  EXPECT_EQ(node["failing_sources"][0]["source"], "kmsg");
  EXPECT_FALSE(node["failing_sources"][0]["error"].get<std::string>().empty());
  ASSERT_EQ(node["sources"].size(), 1u);
  EXPECT_EQ(node["sources"][0]["up"], false);
  EXPECT_EQ(node["sources"][0]["error"], node["failing_sources"][0]["error"]);
  EXPECT_TRUE(node["active_diagnosis"].is_null()) << node.dump();  // no "none" to read as healthy
  const std::string metrics = Get("/metrics");
  EXPECT_NE(metrics.find("faultline_agent_blind{node=\"node7\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("faultline_agent_blind_since_timestamp_seconds{node=\"node7\"}"), std::string::npos);
  EXPECT_NE(metrics.find("faultline_source_up{node=\"node7\",source=\"kmsg\"} 0"), std::string::npos);
  // The remediation worker's counters (RunOnce is synchronous: nothing queued).
  EXPECT_NE(metrics.find("faultline_remediation_decisions_total{node=\"node7\"} 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("faultline_remediation_worker_calls_total{node=\"node7\",outcome=\"dropped\"} 0"),
            std::string::npos);
  EXPECT_NE(metrics.find("faultline_remediation_worker_queue_max{node=\"node7\"} 0"), std::string::npos);
}

TEST_F(AgentServer, AnAcknowledgementIsStoredInTheAgentsStore) {
  daemon::AgentConfig config = Config(dir_);
  Write(config.kmsg.path, kFellOffBus);
  Serve(config);
  auto active = agent_->store().LatestDiagnosis("node7");
  ASSERT_TRUE(active.ok() && active->has_value());
  httplib::Client client("127.0.0.1", server_->port());
  auto res = client.Post(("/api/v1/diagnoses/" + std::to_string((*active)->id) + "/ack").c_str(),
                         {{"Authorization", "Bearer t0k"}}, R"({"note":"on it"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201) << res->body;
  auto actions = agent_->store().ListActions(RecordQuery{.node = "node7"});
  ASSERT_TRUE(actions.ok());
  bool acked = false;
  for (const auto& row : actions->rows) acked = acked || row.value.outcome == "acknowledged";
  EXPECT_TRUE(acked);
}

// Before the fix every API read took the lock of the agent's own connection, the one its
// pipeline commits through, for as long as the query ran. Now the API reads through its
// own (WAL lets it read beside the writer) and writes through the agent's: shown by closing
// the agent's store, after which reads still answer and only a write fails.
TEST_F(AgentServer, ReadsGoThroughTheServersOwnConnection) {
  daemon::AgentConfig config = Config(dir_);
  Write(config.kmsg.path, kFellOffBus);
  Serve(config, /*own_reader=*/true);
  auto active = agent_->store().LatestDiagnosis("node7");
  ASSERT_TRUE(active.ok() && active->has_value());
  const std::string ack = "/api/v1/diagnoses/" + std::to_string((*active)->id) + "/ack";
  httplib::Client client("127.0.0.1", server_->port());
  const httplib::Headers auth{{"Authorization", "Bearer t0k"}};
  auto first = client.Post(ack.c_str(), auth, R"({"note":"on it"})", "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 201) << first->body;
  // Written through the agent's connection, read back through the server's.
  EXPECT_NE(Get("/api/v1/actions").find("acknowledged"), std::string::npos);
  ASSERT_TRUE(agent_->Stop().ok());  // closes the agent's store
  EXPECT_NE(Get("/api/v1/observations?limit=5").find("\"count\":"), std::string::npos);
  EXPECT_NE(Get("/api/v1/node").find("gpu_fell_off_bus"), std::string::npos);
  auto second = client.Post(ack.c_str(), auth, R"({"note":"again"})", "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 503) << second->body;
}

TEST_F(AgentServer, ResolveClosesTheIncidentOnceAndReevaluateIsAccepted) {
  daemon::AgentConfig config = Config(dir_);
  Write(config.kmsg.path, kFellOffBus);
  Serve(config);
  auto active = agent_->store().LatestDiagnosis("node7");
  ASSERT_TRUE(active.ok() && active->has_value());
  const std::string path = "/api/v1/diagnoses/" + std::to_string((*active)->id) + "/resolve";
  httplib::Client client("127.0.0.1", server_->port());
  const httplib::Headers auth{{"Authorization", "Bearer t0k"}};
  auto bad = client.Post(path.c_str(), auth, R"({"note":"x"})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("fixed_by"), std::string::npos);
  auto unknown = client.Post("/api/v1/diagnoses/999999/resolve", auth, R"({"fixed_by":"x"})", "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  auto first = client.Post(path.c_str(), auth, R"({"fixed_by":"reseated GPU b5"})", "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  const Json j = Json::parse(first->body);
  EXPECT_EQ(j["resolved"], (*active)->id);
  EXPECT_EQ(j["already_resolved"], false);
  EXPECT_EQ(j["resumed"], false);  // dry run: faultline never drained it, so nothing to resume
  auto again = client.Post(path.c_str(), auth, R"({"fixed_by":"reseated GPU b5"})", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(Json::parse(again->body)["already_resolved"], true);
  auto rows = agent_->store().ListActions(RecordQuery{.node = "node7"});
  ASSERT_TRUE(rows.ok());
  int resolved = 0;
  for (const auto& r : rows->rows) {
    auto st = r.value.attrs.find("state");
    if (st != r.value.attrs.end() && st->second == "resolved") ++resolved;
  }
  EXPECT_EQ(resolved, 1);
  auto eval = client.Post("/api/v1/policy/evaluate", auth, "", "application/json");
  ASSERT_TRUE(eval);
  EXPECT_EQ(eval->status, 202) << eval->body;
  auto anonymous = client.Post("/api/v1/policy/evaluate", "", "application/json");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
}

// The agent's [assistant] knowledge base answers its /api/v1/ask too, also with the
// incident notes off: the answer cites the runbook section written here.
TEST_F(AgentServer, AskCitesTheAgentsKnowledgeBase) {
  daemon::AgentConfig config = Config(dir_);
  Write(config.kmsg.path, kFellOffBus);
  const std::string kb = dir_.File("kb");
  std::filesystem::create_directories(kb + "/runbooks");
  Write(kb + "/runbooks/offbus.md",
        "---\nkind: runbook\nclass: gpu_fell_off_bus\ncodes: xid:79\n---\n# Lost GPU on the bus\n\n"
        "## Steps for the bench\nPower-cycle the sled and check the riser seating twice.\n");
  config.assistant.kb_dir = kb;
  config.assistant.index_dir = dir_.File("kb-index");
  config.assistant.incident_notes = false;
  Serve(config);
  ASSERT_NE(agent_->knowledge_base(), nullptr) << log_.str();
  httplib::Client client("127.0.0.1", server_->port());
  auto r = client.Post("/api/v1/ask", {{"Authorization", "Bearer t0k"}}, R"({"question":"why did GPU b5 go away?"})",
                       "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("runbook/offbus#steps-for-the-bench"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("riser seating twice"), std::string::npos) << r->body;
}

TEST(AgentServerReadOnly, ResolveAndReevaluateNeedTheAgent) {
  TempDir dir;
  auto store = Store::Open(dir.File("store.db"));
  ASSERT_TRUE(store.ok());
  api::StoreProvider provider(**store, {.node = "node7"});
  api::ApiHandler handler(provider, api::ApiOptions{.token = "t0k"});
  const std::string auth = "Bearer t0k";
  EXPECT_EQ(handler.Handle({"POST", "/api/v1/policy/evaluate", "", auth, ""}).status, 501);
  EXPECT_EQ(handler.Handle({"POST", "/api/v1/diagnoses/1/resolve", "", auth, R"({"fixed_by":"x"})"}).status, 501);
  EXPECT_EQ(handler.Handle({"GET", "/api/v1/policy/evaluate", "", auth, ""}).status, 405);
}

TEST(AgentServerConfig, ServerKeysAreCheckedAndNamed) {
  auto ok = daemon::ParseAgentConfig("[server]\nlisten = \"127.0.0.1:9465\"\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->server.listen, "127.0.0.1:9465");
  auto open = daemon::ParseAgentConfig("[server]\nlisten = \"0.0.0.0:9465\"\n");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("server.listen"), std::string::npos) << open.status().ToString();
  auto bad = daemon::ParseAgentConfig("[server]\nlisten = \"no-port\"\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("server.listen"), std::string::npos);
  auto half = daemon::ParseAgentConfig("[server]\nlisten = \"127.0.0.1:1\"\ncert_file = \"/x.pem\"\n");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("server.cert_file"), std::string::npos);
  auto unknown = daemon::ParseAgentConfig("[server]\nlisten = \"127.0.0.1:1\"\nport = 3\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("server.port"), std::string::npos) << unknown.status().ToString();
}

TEST(AgentServerProcess, TheAgentBinaryServesItsStoreOnAFreeLoopbackPort) {
  TempDir dir;
  Write(dir.File("kern.log"), kFellOffBus);
  Write(dir.File("agent.toml"), "[agent]\nnode = \"node7\"\nstore_path = \"" + dir.File("store.db") +
                                    "\"\nevaluate_interval = \"100ms\"\n[kmsg]\npath = \"" + dir.File("kern.log") +
                                    "\"\ninterval = \"100ms\"\n[nvml]\nenabled = false\n[sysfs]\nenabled = false\n"
                                    "[isolate]\nwindow = \"3650d\"\n[server]\nlisten = \"127.0.0.1:0\"\n");
  FaultlineProcess agent({"agent", "--config", dir.File("agent.toml")}, dir.File("agent.log"));
  ASSERT_GT(agent.port(), 0) << agent.Log();
  httplib::Client client("127.0.0.1", agent.port());
  std::string node;
  for (int i = 0; i < 200 && node.find("gpu_fell_off_bus") == std::string::npos; ++i) {
    auto res = client.Get("/api/v1/node");
    if (res && res->status == 200) node = res->body;
    if (node.find("gpu_fell_off_bus") == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(node.find("gpu_fell_off_bus"), std::string::npos) << node << agent.Log();
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("faultline_source_up{node=\"node7\",source=\"kmsg\"} 1"), std::string::npos);
  EXPECT_EQ(agent.Stop(), 0) << agent.Log();
}

}  // namespace
}  // namespace faultline::api_test
