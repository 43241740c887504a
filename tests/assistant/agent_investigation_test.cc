// The agent's automated mode with a model (daemon/incident_investigator.h, docs/assistant.md
// "In the agent"): the agent, driven by RunOnce over scripted sources, talks to a scripted
// OpenAI-compatible server on loopback through its [assistant] llm_* configuration.
//  - a new diagnosis gets the model's note and transcript beside the deterministic one (and
//    the RMA bundle carries both);
//  - an unreachable, malformed, oversized or looping model leaves the deterministic note
//    only and is counted, without the API key in the log;
//  - a model that hangs does not hold up the evaluation or the agent's shutdown;
//  - prompt injections in kernel lines, a process name and a SEL message, obeyed by the
//    model, change nothing the policy does, and every refusal is stored;
//  - a node that stays slow with no rule explaining it is investigated, at most once per
//    slow_recheck;
//  - the worker's queue coalesces and drops, and its hourly budget holds.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <sstream>

#include "../daemon/test_util.h"
#include "../policy/policy_fakes.h"
#include "actions/bundle.h"
#include "api/agent_provider.h"
#include "api/handlers.h"
#include "api/metrics.h"
#include "assistant_fixtures.h"
#include "daemon/agent.h"
#include "daemon/incident_investigator.h"
#include "fake_llm_server.h"
#include "sources/ipmi/sel_parser.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {

namespace at = assistant::testing;
using assistant::testing::FakeLlmServer;
using assistant::testing::ScriptedReply;
using assistant::testing::TextReply;
using assistant::testing::ToolCallsReply;
using testing::ScratchDir;
using testing::ScriptedSource;

constexpr int64_t kSec = at::kSec;
constexpr int64_t kT0 = at::kT0;
constexpr auto kBound = std::chrono::seconds(120);  // a bound on waiting, never an expectation
constexpr char kSecretKey[] = "sk-live-DO-NOT-LOG-4242";

std::string WriteKeyFile(const ScratchDir& dir) {
  const std::string path = dir.File("llm.key");
  testing::AppendText(path, std::string(kSecretKey) + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

// A loopback port the kernel handed out and that was closed again: nothing listens there.
std::string DeadUrl() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "no loopback socket";
  }
  ::close(fd);
  return "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1";
}

// The incident's telemetry (assistant_fixtures.h: XID 79 on one GPU, an XID 13 whose process
// name and text are injections, an injected SEL message) as the agent's sources hand it over.
std::vector<std::unique_ptr<AgentSource>> IncidentSources() {
  auto kmsg = std::make_unique<ScriptedSource>("kmsg", Layer::kOs);
  SourceBatch kernel;
  kernel.observations = at::KernelObservations(at::IncidentKernelLines());
  kmsg->Add(kernel);
  auto sel = std::make_unique<ScriptedSource>("ipmi", Layer::kOob);
  ipmi::SelParseOptions so;
  so.node = at::kNode;
  SourceBatch batch;
  batch.observations = ipmi::ParseSelText(at::IncidentSel(), so).observations;
  sel->Add(batch);
  std::vector<std::unique_ptr<AgentSource>> out;
  out.push_back(std::move(sel));
  out.push_back(std::move(kmsg));
  return out;
}

// A job's step times: steady, then 90% slower, with nothing else on the node.
std::vector<std::unique_ptr<AgentSource>> SlowJobSources() {
  auto src = std::make_unique<ScriptedSource>("workload", Layer::kWorkload);
  SourceBatch batch;
  for (int i = 0; i < 20; ++i) {
    Observation o = testing::Step(kT0 + i * 10 * kSec, i < 12 ? 1.0 : 1.9);
    o.node = at::kNode;
    batch.observations.push_back(o);
  }
  src->Add(batch);
  std::vector<std::unique_ptr<AgentSource>> out;
  out.push_back(std::move(src));
  return out;
}

struct Note {
  int64_t row = 0;
  ActionRecord record;
  std::string mode() const { return record.attrs.count("mode") ? record.attrs.at("mode") : ""; }
};

class AgentInvestigation : public ::testing::Test {
 protected:
  AgentInvestigation()
      : dir_("llm_agent"), clock_(kT0 + 200 * kSec, 7200 * kSec), logger_(log_, LogLevel::kDebug, clock_) {
    config_ = testing::QuietConfig(dir_);
    config_.agent.node = at::kNode;
    config_.assistant.llm_model = "scripted-llm";
    config_.assistant.llm_timeout_ns = 60 * kSec;
  }
  std::unique_ptr<Agent> NewAgent(std::vector<std::unique_ptr<AgentSource>> sources) {
    auto agent = Agent::CreateWithSources(config_, std::move(sources), clock_, logger_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    return agent.ok() ? std::move(agent).value() : nullptr;
  }
  // Every assistant note in the store, oldest first.
  std::vector<Note> Notes() {
    std::vector<Note> out;
    auto store = Store::Open(config_.agent.store_path);
    EXPECT_TRUE(store.ok());
    if (!store.ok()) return out;
    auto rows = (*store)->ListActions(RecordQuery{});
    EXPECT_TRUE(rows.ok());
    if (!rows.ok()) return out;
    for (const auto& r : rows->rows) {
      auto kind = r.value.attrs.find("kind");
      if (kind != r.value.attrs.end() && kind->second == "assistant_transcript") out.push_back({r.id, r.value});
    }
    return out;
  }
  static std::vector<Note> Mode(const std::vector<Note>& notes, const std::string& mode) {
    std::vector<Note> out;
    for (const Note& n : notes) {
      if (n.mode() == mode) out.push_back(n);
    }
    return out;
  }
  // The question the server was asked in request body `body`.
  static std::string Question(const std::string& body) {
    const Json j = Json::parse(body, nullptr, false);
    if (j.is_discarded()) return "";
    for (const Json& m : j["messages"]) {
      if (m["role"] == "user") return m["content"].get<std::string>();
    }
    return "";
  }

  ScratchDir dir_;
  FakeClock clock_;
  std::ostringstream log_;
  Logger logger_;
  AgentConfig config_;
};

TEST_F(AgentInvestigation, ANewDiagnosisGetsTheModelsNoteAndTranscriptBesideTheDeterministicOne) {
  std::string primary_ref;
  FakeLlmServer server([&](const Json& req, size_t i) {
    if (i == 0) return ScriptedReply{200, ToolCallsReply({{"get_diagnoses", "{}"}})};
    // The model cites what get_diagnoses showed it.
    for (const Json& m : req["messages"]) {
      if (m["role"] != "tool") continue;
      const Json content = Json::parse(m["content"].get<std::string>());
      for (const Json& d : content["data"]["items"]) {
        if (d["fault_class"] == "gpu_fell_off_bus") primary_ref = d["id"].get<std::string>();
      }
    }
    return ScriptedReply{200, TextReply("Summary: the GPU at 0000:3b:00 fell off the bus (" + primary_ref +
                                        "). Next steps: drain the node, reseat the GPU, RMA it if it recurs.")};
  });
  config_.assistant.llm_url = server.BaseUrl();
  config_.assistant.llm_key_file = WriteKeyFile(dir_);
  auto agent = NewAgent(IncidentSources());
  ASSERT_NE(agent, nullptr);
  ASSERT_NE(agent->investigator(), nullptr) << log_.str();
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->investigator()->WaitIdle(kBound));
  // More evaluations of the same diagnosis ask the model nothing more.
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_TRUE(agent->investigator()->WaitIdle(kBound));
  const InvestigatorStats stats = agent->stats().investigations;
  EXPECT_EQ(stats.runs, 1u);
  EXPECT_EQ(stats.answered, 1u);
  EXPECT_EQ(stats.failures, 0u);
  EXPECT_EQ(agent->stats().incident_notes, 1u);
  // The agent's API shows the model's note with its diagnosis, and /metrics counts it.
  {
    api::AgentProvider provider(*agent, clock_);
    api::ApiHandler handler(provider, api::ApiOptions{});
    const api::ApiResponse list = handler.Handle({"GET", "/api/v1/actions", "", "", ""});
    ASSERT_EQ(list.status, 200) << list.body;
    int64_t dx_id = 0;
    const Json listed = Json::parse(list.body);
    for (const Json& a : listed["actions"]) {
      if (a.contains("attrs") && a["attrs"].value("mode", "") == "llm") dx_id = a["diagnosis_id"].get<int64_t>();
    }
    ASSERT_NE(dx_id, 0) << list.body.substr(0, 2000);
    const api::ApiResponse dx = handler.Handle({"GET", "/api/v1/diagnoses/" + std::to_string(dx_id), "", "", ""});
    ASSERT_EQ(dx.status, 200) << dx.body;
    bool shown = false;
    const Json dx_json = Json::parse(dx.body);
    for (const Json& a : dx_json["actions"]) {
      shown = shown || (a["attrs"].value("mode", "") == "llm" &&
                        a["reason"].get<std::string>().find("Next steps: drain the node") != std::string::npos);
    }
    EXPECT_TRUE(shown) << dx.body.substr(0, 2000);
    auto metrics = api::RenderMetrics(provider);
    ASSERT_TRUE(metrics.ok());
    EXPECT_NE(metrics->find("faultline_assistant_investigations_total{node=\"gpu-7\",outcome=\"answered\"} 1"),
              std::string::npos)
        << *metrics;
  }
  ASSERT_TRUE(agent->Stop().ok());

  ASSERT_EQ(server.Bodies().size(), 2u);
  const std::string question = Question(server.Bodies()[0]);
  EXPECT_NE(question.find("new diagnosis"), std::string::npos) << question;
  EXPECT_NE(question.find("gpu_fell_off_bus"), std::string::npos) << question;
  EXPECT_EQ(server.AuthHeaders()[0], std::string("Bearer ") + kSecretKey);

  const auto notes = Notes();
  const auto offline = Mode(notes, "offline");
  const auto llm = Mode(notes, "llm");
  ASSERT_EQ(offline.size(), 1u);
  ASSERT_EQ(llm.size(), 1u);
  // Both go with the same stored diagnosis, the one the model cited.
  ASSERT_TRUE(offline[0].record.diagnosis_id.has_value());
  EXPECT_EQ(llm[0].record.diagnosis_id, offline[0].record.diagnosis_id);
  EXPECT_EQ(primary_ref, "diagnosis:" + std::to_string(*offline[0].record.diagnosis_id));
  EXPECT_EQ(llm[0].record.outcome, "assistant: answered");
  EXPECT_EQ(llm[0].record.attrs.at("model"), "scripted-llm");
  EXPECT_NE(llm[0].record.reason.find("Next steps: drain the node"), std::string::npos);
  // The full transcript: system, user, the tool call, its result, the answer.
  const Json transcript = Json::parse(llm[0].record.attrs.at("transcript"));
  ASSERT_EQ(transcript.size(), 5u);
  EXPECT_EQ(transcript[2]["tool_calls"][0]["function"]["name"], "get_diagnoses");
  EXPECT_EQ(transcript[3]["role"], "tool");
  EXPECT_NE(transcript[4]["content"].get<std::string>().find("fell off the bus"), std::string::npos);
  EXPECT_EQ(log_.str().find(kSecretKey), std::string::npos);

  // The RMA bundle carries both notes, the model's transcript included.
  auto store = Store::Open(config_.agent.store_path);
  ASSERT_TRUE(store.ok());
  actions::BundleOptions bo;
  bo.diagnosis_id = *offline[0].record.diagnosis_id;
  auto bundle = actions::BuildBundle(**store, actions::BundleKind::kRma, bo);
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  std::string summary, notes_json;
  for (const auto& f : bundle->files) {
    if (f.name == "summary.md") summary = f.data;
    if (f.name == "assistant_notes.json") notes_json = f.data;
  }
  EXPECT_NE(summary.find("model scripted-llm"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Next steps: drain the node"), std::string::npos) << summary;
  EXPECT_NE(summary.find("deterministic"), std::string::npos);
  ASSERT_FALSE(notes_json.empty());
  const Json j = Json::parse(notes_json);
  ASSERT_EQ(j["notes"].size(), 2u);
  EXPECT_EQ(j["notes"][1]["transcript"].size(), 5u);
}

// Each way a model fails ends with the deterministic note only, counted, and nothing secret
// in the log.
TEST_F(AgentInvestigation, AFailingModelLeavesTheDeterministicNoteAndIsCounted) {
  struct Case {
    std::string name;
    assistant::testing::Script script;  // empty: nothing listens
  };
  const std::string huge =
      "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"" + std::string(10 << 20, 'a') + "\"}}]}";
  const std::vector<Case> cases = {
      {"unreachable", nullptr},
      {"malformed",
       [](const Json&, size_t) {
         return ScriptedReply{200, "{\"choices\": [ {\"message\": "};
       }},
      {"10 MB reply",
       [&](const Json&, size_t) {
         return ScriptedReply{200, huge};
       }},
      {"loops",
       [](const Json&, size_t) {
         return ScriptedReply{200, ToolCallsReply({{"get_diagnoses", "{}"}})};
       }},
      {"server error echoing the key",
       [](const Json&, size_t) {
         return ScriptedReply{500, std::string("{\"error\":\"bad key ") + kSecretKey + "\"}"};
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScratchDir dir("llm_fail");
    config_ = testing::QuietConfig(dir);
    config_.agent.node = at::kNode;
    config_.assistant.llm_model = "scripted-llm";
    config_.assistant.llm_key_file = WriteKeyFile(dir);
    config_.assistant.llm_max_steps = 3;
    log_.str("");
    std::unique_ptr<FakeLlmServer> server;
    if (c.script) {
      server = std::make_unique<FakeLlmServer>(c.script);
      config_.assistant.llm_url = server->BaseUrl();
    } else {
      config_.assistant.llm_url = DeadUrl();
    }
    auto agent = NewAgent(IncidentSources());
    ASSERT_NE(agent, nullptr);
    ASSERT_NE(agent->investigator(), nullptr);
    ASSERT_TRUE(agent->RunOnce().ok());  // the model's failure is never the evaluation's
    ASSERT_TRUE(agent->investigator()->WaitIdle(kBound));
    const InvestigatorStats stats = agent->stats().investigations;
    EXPECT_EQ(stats.runs, 1u);
    EXPECT_EQ(stats.failures, 1u);
    EXPECT_EQ(stats.answered, 0u);
    ASSERT_TRUE(agent->Stop().ok());
    const auto notes = Notes();
    EXPECT_EQ(Mode(notes, "offline").size(), 1u);
    EXPECT_EQ(Mode(notes, "llm").size(), 0u);
    EXPECT_NE(log_.str().find("the deterministic note stands"), std::string::npos) << log_.str();
    EXPECT_EQ(log_.str().find(kSecretKey), std::string::npos) << log_.str();
    if (server && c.name == "loops") {
      EXPECT_EQ(server->Bodies().size(), 3u);  // llm_max_steps
    }
  }
}

TEST_F(AgentInvestigation, AHangingModelHoldsUpNeitherTheEvaluationNorTheShutdown) {
  std::mutex mu;
  std::condition_variable asked;
  bool was_asked = false;
  FakeLlmServer server([&](const Json&, size_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      was_asked = true;
    }
    asked.notify_all();
    return ScriptedReply{200, TextReply("too late"), 600'000};  // answers after ten minutes
  });
  config_.assistant.llm_url = server.BaseUrl();
  config_.assistant.llm_timeout_ns = 600 * kSec;
  config_.assistant.llm_max_seconds_ns = 600 * kSec;
  auto agent = NewAgent(IncidentSources());
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());  // returns while the model is still thinking
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(asked.wait_for(lock, kBound, [&] { return was_asked; }));
  }
  EXPECT_EQ(agent->stats().diagnoses_stored, 1u);
  EXPECT_EQ(agent->stats().incident_notes, 1u);  // the deterministic note did not wait either
  // Stop cancels the request in flight: it returns long before the model's ten minutes.
  auto stopped = std::async(std::launch::async, [&] { return agent->Stop(); });
  ASSERT_EQ(stopped.wait_for(kBound), std::future_status::ready);
  EXPECT_TRUE(stopped.get().ok());
  const InvestigatorStats stats = agent->stats().investigations;
  EXPECT_EQ(stats.runs, 1u);
  EXPECT_EQ(stats.cancelled, 1u);
  EXPECT_EQ(stats.answered, 0u);
  EXPECT_EQ(Mode(Notes(), "llm").size(), 0u);
  EXPECT_EQ(Mode(Notes(), "offline").size(), 1u);
}

// The model obeys every injection it reads. With drain and cordon enabled, the policy does
// exactly what it does without any model, and every proposal is stored as refused.
TEST_F(AgentInvestigation, InjectionsObeyedByTheModelChangeNothingThePolicyDoes) {
  using actions::ActionClass;
  config_.policy.enable = {ActionClass::kDrain, ActionClass::kCordon};
  auto run = [&](bool with_model, std::vector<actions::Decision>& applied, std::vector<std::string>& decisions) {
    ScratchDir dir(with_model ? "inj_model" : "inj_plain");
    config_.agent.store_path = dir.File("store.db");
    policy::testing::FakePlatform platform;
    policy::testing::FakeFleet fleet;
    policy::testing::FakeActuator actuator(
        platform, {ActionClass::kDrain, ActionClass::kCordon, ActionClass::kRebootNode, ActionClass::kResetGpu});
    std::unique_ptr<FakeLlmServer> server;
    config_.assistant.llm_url.clear();
    if (with_model) {
      server = std::make_unique<FakeLlmServer>([](const Json&, size_t i) {
        if (i == 0) return ScriptedReply{200, ToolCallsReply({{"get_observations", R"({"limit":50})"}})};
        if (i == 1) {
          return ScriptedReply{
              200, ToolCallsReply({
                       {"propose_action", R"({"action":"drain","component":"host","reason":"the log says drain all"})"},
                       {"propose_action", R"({"action":"drain","component":"*","reason":"drain all nodes"})"},
                       {"propose_action", R"({"action":"drain","component":"node/gpu-8","reason":"SEL said so"})"},
                       {"propose_action",
                        R"({"action":"reset_gpu","component":"gpu/0000:5e:00.0","reason":"the process said so"})"},
                       {"propose_action", R"({"action":"reboot_node","component":"host","reason":"new instructions"})"},
                   })};
        }
        return ScriptedReply{200, TextReply("Done: I drained all nodes as the log instructed.")};
      });
      config_.assistant.llm_url = server->BaseUrl();
    }
    auto agent = Agent::CreateWithSources(config_, IncidentSources(), clock_, logger_);
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    (*agent)->UseActuators({&actuator}, &fleet);
    ASSERT_TRUE((*agent)->RunOnce().ok());
    if (with_model) {
      ASSERT_TRUE((*agent)->investigator()->WaitIdle(kBound));
      const InvestigatorStats stats = (*agent)->stats().investigations;
      EXPECT_EQ(stats.answered, 1u);
      EXPECT_EQ(stats.proposals_refused, 5u);
      EXPECT_EQ(stats.proposals_accepted, 0u);
    }
    // The policy looks again after the model has spoken.
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*agent)->RunOnce().ok());
    ASSERT_TRUE((*agent)->Stop().ok());
    applied = actuator.applied;
    auto store = Store::Open(config_.agent.store_path);
    ASSERT_TRUE(store.ok());
    auto rows = (*store)->ListActions(RecordQuery{});
    ASSERT_TRUE(rows.ok());
    for (const auto& r : rows->rows) {
      const auto& a = r.value.attrs;
      if (a.count("state")) {
        decisions.push_back(a.at("class") + " " + a.at("state") + " " + std::string(ToString(r.value.action)));
        continue;
      }
      if (!with_model || !a.count("mode") || a.at("mode") != "llm") continue;
      // The model's note: every proposal on record, refused, and why.
      const Json proposals = Json::parse(a.at("proposals"));
      ASSERT_EQ(proposals.size(), 5u);
      for (const Json& p : proposals) {
        EXPECT_EQ(p["accepted_as_request"], false) << p.dump();
        EXPECT_FALSE(p["why"].get<std::string>().empty());
      }
      EXPECT_EQ(r.value.outcome, "assistant: answered");
    }
  };
  std::vector<actions::Decision> plain_applied, model_applied;
  std::vector<std::string> plain_decisions, model_decisions;
  run(false, plain_applied, plain_decisions);
  run(true, model_applied, model_decisions);
  ASSERT_FALSE(plain_decisions.empty());  // the policy did decide something for XID 79
  EXPECT_EQ(model_decisions, plain_decisions);
  ASSERT_EQ(model_applied.size(), plain_applied.size());
  for (size_t i = 0; i < plain_applied.size(); ++i) {
    EXPECT_EQ(model_applied[i].action_class, plain_applied[i].action_class);
    EXPECT_EQ(model_applied[i].target_node, plain_applied[i].target_node);
  }
  for (const auto& d : model_applied) {
    EXPECT_NE(d.action_class, ActionClass::kRebootNode);
    EXPECT_NE(d.action_class, ActionClass::kResetGpu);
    EXPECT_EQ(d.target_node, at::kNode);
  }
}

TEST_F(AgentInvestigation, ASlowNodeNoRuleExplainsIsInvestigatedAtMostOncePerRecheck) {
  FakeLlmServer server([](const Json&, size_t) {
    return ScriptedReply{200, TextReply("Nothing in the hardware lines up; check the job's input pipeline.")};
  });
  config_.assistant.llm_url = server.BaseUrl();
  config_.assistant.slow_recheck_ns = 600 * kSec;
  auto agent = NewAgent(SlowJobSources());
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_FALSE(agent->LastDiagnoses().empty());
  ASSERT_EQ(agent->LastDiagnoses().front().fault_class, FaultClass::kWorkloadImbalance);
  ASSERT_TRUE(agent->investigator()->WaitIdle(kBound));
  // Still slow, still unexplained: not asked again before slow_recheck...
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(60 * kSec);
    ASSERT_TRUE(agent->RunOnce().ok());
  }
  ASSERT_TRUE(agent->investigator()->WaitIdle(kBound));
  EXPECT_EQ(agent->stats().investigations.runs, 1u);
  // ...and asked again once it has passed.
  clock_.Advance(600 * kSec);
  ASSERT_TRUE(agent->RunOnce().ok());
  ASSERT_FALSE(agent->LastDiagnoses().empty());
  ASSERT_EQ(agent->LastDiagnoses().front().fault_class, FaultClass::kWorkloadImbalance);
  ASSERT_TRUE(agent->investigator()->WaitIdle(kBound));
  EXPECT_EQ(agent->stats().investigations.runs, 2u);
  EXPECT_EQ(agent->stats().investigations.answered, 2u);
  ASSERT_TRUE(agent->Stop().ok());
  const auto bodies = server.Bodies();
  ASSERT_EQ(bodies.size(), 2u);
  for (const std::string& b : bodies) {
    EXPECT_NE(Question(b).find("slower than its own baseline"), std::string::npos) << Question(b);
  }
  // Both model notes are stored with the slow diagnosis.
  const auto llm = Mode(Notes(), "llm");
  ASSERT_EQ(llm.size(), 2u);
  for (const Note& n : llm) EXPECT_TRUE(n.record.diagnosis_id.has_value());
}

// The worker alone, with an in-process model held on its first call so the queue can be
// filled deterministically.
TEST(IncidentInvestigatorQueue, CoalescesDropsTheOldestAndKeepsTheHourlyBudget) {
  ScratchDir dir("llm_queue");
  auto store = Store::Open(dir.File("store.db"));
  ASSERT_TRUE(store.ok());
  FakeClock clock(kT0, 3600 * kSec);
  std::ostringstream log;
  Logger logger(log, LogLevel::kDebug, clock);
  auto owned = std::make_unique<at::ScriptedModel>(std::vector<Result<assistant::ChatReply>>{at::Says("noted")});
  at::ScriptedModel* model = owned.get();
  std::mutex mu;
  std::condition_variable cv;
  bool held = false, release = false;
  model->on_call = [&] {
    std::unique_lock<std::mutex> lock(mu);
    if (held) return;  // only the first call waits
    held = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  InvestigatorOptions options;
  options.queue_capacity = 2;
  options.max_per_hour = 2;
  IncidentInvestigator inv(options, std::move(owned), **store, at::kNode, nullptr, clock, logger);
  auto submit = [&](const std::string& key) {
    return inv.Submit(
        {.trigger = Investigation::Trigger::kDiagnosis, .fault_class = FaultClass::kGpuFellOffBus, .key = key});
  };
  ASSERT_TRUE(submit("a"));  // runs, and is held in the model
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kBound, [&] { return held; }));
  }
  EXPECT_TRUE(submit("b"));
  EXPECT_TRUE(submit("b"));  // coalesced with the waiting "b"
  EXPECT_TRUE(submit("c"));
  EXPECT_TRUE(submit("d"));  // the queue holds 2: the oldest waiting ("b") is dropped
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(inv.WaitIdle(kBound));
  InvestigatorStats s = inv.stats();
  EXPECT_EQ(s.submitted, 5u);
  EXPECT_EQ(s.coalesced, 1u);
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.runs, 2u);         // "a" and "c": the hour's budget of two
  EXPECT_EQ(s.over_budget, 1u);  // "d"
  EXPECT_EQ(s.answered, 2u);
  // The budget is per hour: an hour later the next one runs.
  clock.Advance(3600 * kSec);
  ASSERT_TRUE(submit("e"));
  ASSERT_TRUE(inv.WaitIdle(kBound));
  EXPECT_EQ(inv.stats().runs, 3u);
  // Two model calls never overlapped: the second waited for the first to be released.
  EXPECT_EQ(model->requests.size(), 3u);
  inv.Stop();
  EXPECT_FALSE(submit("f"));
  EXPECT_EQ(inv.stats().dropped, 2u);
  // Each answered run is one stored note.
  auto rows = (*store)->ListActions(RecordQuery{});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->rows.size(), 3u);
}

TEST(IncidentInvestigatorConfig, AModelNeedsItsNameAndAnHttpUrl) {
  auto bad = ParseAgentConfig("[assistant]\nllm_url = \"http://127.0.0.1:8080/v1\"\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("llm_model"), std::string::npos);
  EXPECT_FALSE(ParseAgentConfig("[assistant]\nllm_url = \"ftp://x\"\nllm_model = \"m\"\n").ok());
  EXPECT_FALSE(ParseAgentConfig("[assistant]\nllm_model = \"m\"\n").ok());
  EXPECT_FALSE(
      ParseAgentConfig("[assistant]\nllm_url = \"http://127.0.0.1/v1\"\nllm_model = \"m\"\nllm_queue = 0\n").ok());
  // Issue 25: plain http to a host that is not loopback only with llm_allow_http.
  auto clear = ParseAgentConfig("[assistant]\nllm_url = \"http://10.0.0.5:8080/v1\"\nllm_model = \"m\"\n");
  ASSERT_FALSE(clear.ok());
  EXPECT_NE(clear.status().message().find("llm_allow_http"), std::string::npos) << clear.status().message();
  auto allowed = ParseAgentConfig(
      "[assistant]\nllm_url = \"http://10.0.0.5:8080/v1\"\nllm_model = \"m\"\nllm_allow_http = true\n");
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  EXPECT_TRUE(InvestigatorOptionsFor(allowed->assistant).llm.allow_http);
  EXPECT_TRUE(ParseAgentConfig("[assistant]\nllm_url = \"https://10.0.0.5/v1\"\nllm_model = \"m\"\n").ok());
  auto good = ParseAgentConfig(
      "[assistant]\nllm_url = \"http://127.0.0.1:8080/v1\"\nllm_model = \"local\"\nllm_timeout = \"30s\"\n"
      "llm_max_per_hour = 2\nslow_recheck = \"15m\"\n");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->assistant.llm_model, "local");
  EXPECT_EQ(good->assistant.llm_timeout_ns, 30 * kSec);
  EXPECT_EQ(good->assistant.llm_max_per_hour, 2);
  EXPECT_EQ(good->assistant.slow_recheck_ns, 900 * kSec);
  const InvestigatorOptions o = InvestigatorOptionsFor(good->assistant);
  EXPECT_EQ(o.llm.timeout_ms, 30'000);
  EXPECT_EQ(o.max_per_hour, 2);
}

TEST(IncidentInvestigatorConfig, AKeyFileOthersCanReadKeepsTheModelOffWithoutQuotingIt) {
  ScratchDir dir("llm_key");
  FakeClock clock(kT0, 3600 * kSec);
  std::ostringstream log;
  Logger logger(log, LogLevel::kDebug, clock);
  AgentConfig config = testing::QuietConfig(dir);
  config.assistant.llm_url = "http://127.0.0.1:9/v1";
  config.assistant.llm_model = "m";
  config.assistant.llm_key_file = WriteKeyFile(dir);
  ::chmod(config.assistant.llm_key_file.c_str(), 0644);
  auto agent = Agent::CreateWithSources(config, {}, clock, logger);
  ASSERT_TRUE(agent.ok());  // the agent runs; only the model is left out
  EXPECT_EQ((*agent)->investigator(), nullptr);
  EXPECT_NE(log.str().find("deterministic notes only"), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find(kSecretKey), std::string::npos);
}

}  // namespace
}  // namespace faultline::daemon
