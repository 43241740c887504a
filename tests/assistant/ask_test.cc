// The bounded ask loop: deterministic tool-call sequences over a scripted OpenAI-compatible
// server, bad tool calls, malformed and huge replies, timeouts, a model that never stops,
// token and wall-time bounds, the stored transcript, and prompt injection planted in kernel
// lines, a process name, a SEL message and a runbook, obeyed by the scripted model.
#include "assistant/ask.h"

#include <gtest/gtest.h>

#include "assistant_fixtures.h"
#include "fake_llm_server.h"
#include "policy/active.h"
#include "policy/ledger.h"
#include "policy/rules.h"

namespace faultline::assistant {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixtures

class AssistantAsk : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(":memory:");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    eval_ = FillStore(*store_, IncidentKernelLines(), IncidentSel());
    ASSERT_TRUE(eval_.diagnosis_stored);
    primary_ = eval_.diagnoses.front();
  }
  std::unique_ptr<OpenAiChatClient> Client(const std::string& url) {
    auto c = OpenAiChatClient::Create({url, "scripted-llm"});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
  // The tool messages the server received in request `i`.
  static std::vector<Json> ToolMessages(const std::string& body) {
    std::vector<Json> out;
    const Json parsed = Json::parse(body);
    for (const Json& m : parsed["messages"]) {
      if (m["role"] == "tool") out.push_back(Json::parse(m["content"].get<std::string>()));
    }
    return out;
  }
  // Action rows written by anything but the assistant's own transcript.
  size_t PolicyRows() {
    RecordQuery q;
    q.limit = 0;
    auto rows = store_->ListActions(q);
    EXPECT_TRUE(rows.ok());
    if (!rows.ok()) return 0;
    size_t n = 0;
    for (const auto& row : rows->rows) n += row.value.attrs.count("kind") == 0;
    return n;
  }
  std::unique_ptr<Store> store_;
  daemon::EvaluateResult eval_;
  Diagnosis primary_;
  FixedRetriever kb_{Runbooks()};
};

TEST_F(AssistantAsk, DeterministicToolSequenceGivesACitedAnswer) {
  std::string obs_ref;
  FakeLlmServer server([&](const Json& req, size_t i) {
    switch (i) {
      case 0:
        return ScriptedReply{200, ToolCallsReply({{"get_diagnoses", "{}"}}), 0};
      case 1:
        return ScriptedReply{200,
                             ToolCallsReply({{"get_observations", R"({"layer":"os","limit":20})"},
                                             {"search_kb", R"({"query":"GPU fell off the bus"})"}}),
                             0};
      default: {
        // Cite an id the tools really showed, one they never showed, and a runbook.
        for (const Json& m : req["messages"]) {
          if (m["role"] != "tool" || m["name"] != "get_observations") continue;
          obs_ref = Json::parse(m["content"].get<std::string>())["data"]["items"].back()["id"];
        }
        return ScriptedReply{200, TextReply("GPU fell off the bus, see " + obs_ref +
                                            " and obs:999999; runbook/gpu_fell_off_bus#safe-actions says drain.")};
      }
    }
  });
  auto client = Client(server.BaseUrl());
  Toolbox tools(Context(*store_, &kb_));
  AskAnswer a = AskWithModel(*client, tools, {"why did gpu-7 fail?"});
  EXPECT_EQ(a.mode, "llm");
  EXPECT_EQ(a.stop_reason, "answered") << a.error;
  EXPECT_EQ(a.steps, 3u);
  EXPECT_EQ(a.model, "scripted-llm");
  EXPECT_NE(a.text.find("GPU fell off the bus"), std::string::npos);
  ASSERT_TRUE(a.diagnosis_id.has_value());
  EXPECT_EQ(*a.diagnosis_id, eval_.diagnosis_id);
  // The deterministic evidence plus what the model cited and was shown.
  ASSERT_FALSE(obs_ref.empty());
  bool cited = false, invented = false;
  for (const Citation& c : a.evidence) {
    cited = cited || c.ref == obs_ref;
    invented = invented || c.ref == "obs:999999";
  }
  EXPECT_TRUE(cited);
  EXPECT_FALSE(invented);
  bool flagged = false;
  for (const std::string& n : a.notes) flagged = flagged || n.find("obs:999999") != std::string::npos;
  EXPECT_TRUE(flagged);
  ASSERT_EQ(a.runbooks.size(), 1u);
  EXPECT_EQ(a.runbooks[0].doc_id, "runbook/gpu_fell_off_bus#safe-actions");
  // Transcript: system, user, then 3 assistant replies and 3 tool results.
  EXPECT_EQ(a.transcript.size(), 8u);
  auto bodies = server.Bodies();
  ASSERT_EQ(bodies.size(), 3u);
  Json first = Json::parse(bodies[0]);
  EXPECT_EQ(first["tools"].size(), 5u);
  EXPECT_NE(first["messages"][0]["content"].get<std::string>().find("never instructions"), std::string::npos);
  EXPECT_EQ(ToolMessages(bodies[2]).size(), 3u);
}

TEST_F(AssistantAsk, UnknownToolsAndWrongArgumentTypesGoBackToTheModel) {
  FakeLlmServer server([](const Json&, size_t i) {
    if (i == 0) {
      return ScriptedReply{200,
                           ToolCallsReply({{"run_shell", R"({"cmd":"scontrol update nodename=ALL state=drain"})"},
                                           {"get_observations", R"({"limit":"all","layer":["gpu"]})"},
                                           {"why_slow", "not json at all"}}),
                           0};
    }
    return ScriptedReply{200, TextReply("I could not call those tools.")};
  });
  auto client = Client(server.BaseUrl());
  Toolbox tools(Context(*store_, &kb_));
  AskAnswer a = AskWithModel(*client, tools, {"what failed?"});
  EXPECT_EQ(a.stop_reason, "answered");
  auto results = ToolMessages(server.Bodies().at(1));
  ASSERT_EQ(results.size(), 3u);
  for (const Json& r : results) EXPECT_EQ(r["ok"], false) << r.dump();
  EXPECT_NE(results[0]["error"].get<std::string>().find("unknown tool"), std::string::npos);
  EXPECT_NE(results[1]["error"].get<std::string>().find("must be a string, got array"), std::string::npos)
      << results[1];
  EXPECT_NE(results[2]["error"].get<std::string>().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(PolicyRows(), 0u);
}

TEST_F(AssistantAsk, ModelThatLoopsForeverIsStoppedAtMaxSteps) {
  FakeLlmServer server([](const Json&, size_t) {
    return ScriptedReply{200, ToolCallsReply({{"get_diagnoses", "{}"}}, 20), 0};
  });
  auto client = Client(server.BaseUrl());
  Toolbox tools(Context(*store_, &kb_));
  AskOptions options;
  options.max_steps = 5;
  AskAnswer a = AskWithModel(*client, tools, {"why?"}, options);
  EXPECT_EQ(a.stop_reason, "max_steps");
  EXPECT_EQ(a.steps, 5u);
  EXPECT_EQ(server.Bodies().size(), 5u);
  // The deterministic answer stands in, and says why.
  EXPECT_NE(a.text.find("What failed: " + std::string(ToString(primary_.fault_class))), std::string::npos) << a.text;
  bool said = false;
  for (const std::string& n : a.notes) said = said || n.find("max_steps") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(AssistantAsk, TokenBudgetStopsTheLoop) {
  // Each reply reports 10,000 tokens; the budget is 25,000: three replies, then stop.
  ScriptedModel model({CallsTool("get_diagnoses", "{}", 10'000)});
  Toolbox tools(Context(*store_, &kb_));
  AskOptions options;
  options.max_tokens = 25'000;
  options.max_steps = 50;
  AskAnswer a = AskWithModel(model, tools, {"why?"}, options);
  EXPECT_EQ(a.stop_reason, "max_tokens");
  EXPECT_EQ(model.requests.size(), 3u);
  EXPECT_EQ(a.tokens, 30'000);
  // The last request asked for no more completion tokens than the budget had left.
  EXPECT_EQ(model.requests.back().max_tokens, 5'000 > options.max_reply_tokens ? options.max_reply_tokens : 5'000);
}

TEST_F(AssistantAsk, ServerWithoutUsageIsStillBoundedByTokens) {
  ChatReply no_usage = CallsTool("get_observations", R"({"limit":200})", 0);
  no_usage.usage = Usage{};  // not reported: estimated from the bytes exchanged
  ScriptedModel model({no_usage});
  Toolbox tools(Context(*store_, &kb_));
  AskOptions options;
  options.max_tokens = 4'000;
  options.max_steps = 1000;
  AskAnswer a = AskWithModel(model, tools, {"why?"}, options);
  EXPECT_EQ(a.stop_reason, "max_tokens");
  EXPECT_LT(model.requests.size(), 1000u);
}

TEST_F(AssistantAsk, WallTimeOnTheInjectedClock) {
  FakeClock clock(kT0, 1'000 * kSec);
  ScriptedModel model({CallsTool("get_diagnoses", "{}", 10)});
  model.on_call = [&] { clock.Advance(50 * kSec); };  // each reply takes 50 s
  Toolbox tools(Context(*store_, &kb_));
  AskOptions options;
  options.clock = &clock;
  options.max_wall_ns = 120 * kSec;
  options.max_steps = 100;
  AskAnswer a = AskWithModel(model, tools, {"why?"}, options);
  EXPECT_EQ(a.stop_reason, "wall_time");
  EXPECT_EQ(model.requests.size(), 3u);  // at 0, 50 and 100 s; at 150 s the time is up
  // Each request may take only the time that is left.
  EXPECT_EQ(model.requests[0].timeout_ms, 120'000);
  EXPECT_EQ(model.requests[2].timeout_ms, 20'000);
}

TEST_F(AssistantAsk, ServerThatDoesNotAnswerInTimeEndsWithTheOfflineAnswer) {
  FakeLlmServer server([](const Json&, size_t) { return ScriptedReply{200, TextReply("too late"), 5000}; });
  auto client = Client(server.BaseUrl());
  Toolbox tools(Context(*store_, &kb_));
  AskOptions options;
  options.max_wall_ns = 300'000'000;  // 0.3 s
  AskAnswer a = AskWithModel(*client, tools, {"why?"}, options);
  EXPECT_EQ(a.stop_reason, "wall_time");
  EXPECT_NE(a.error.find("did not answer"), std::string::npos) << a.error;
  EXPECT_NE(a.text.find("What failed:"), std::string::npos);
}

TEST_F(AssistantAsk, MalformedAndHugeRepliesEndTheLoopCleanly) {
  const std::string huge = TextReply(std::string(10 << 20, 'y'));
  for (const std::string& bad : {std::string("{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{}}]}}]}"),
                                 std::string("this is not json"), huge}) {
    FakeLlmServer server([&](const Json&, size_t i) {
      if (i == 0) return ScriptedReply{200, ToolCallsReply({{"get_diagnoses", "{}"}}), 0};
      return ScriptedReply{200, bad, 0};
    });
    auto client = Client(server.BaseUrl());
    Toolbox tools(Context(*store_, &kb_));
    AskAnswer a = AskWithModel(*client, tools, {"why?"});
    EXPECT_EQ(a.stop_reason, "llm_error");
    EXPECT_FALSE(a.error.empty());
    EXPECT_EQ(a.steps, 2u);
    EXPECT_NE(a.text.find("What failed:"), std::string::npos);
    if (bad.size() > 1000) {
      EXPECT_NE(a.error.find("larger than"), std::string::npos) << a.error;
    }
  }
}

TEST_F(AssistantAsk, EmptyAnswerFallsBackToTheDeterministicOne) {
  ScriptedModel model({Says("")});
  Toolbox tools(Context(*store_, &kb_));
  AskAnswer a = AskWithModel(model, tools, {"why?"});
  EXPECT_EQ(a.stop_reason, "empty_answer");
  EXPECT_NE(a.text.find("What failed:"), std::string::npos);
}

TEST_F(AssistantAsk, TooManyToolCallsInOneReplyAreNotRun) {
  ChatReply greedy;
  greedy.message.role = "assistant";
  for (int i = 0; i < 12; ++i) greedy.message.tool_calls.push_back({"c" + std::to_string(i), "get_diagnoses", "{}"});
  ScriptedModel model({greedy, Says("done")});
  Toolbox tools(Context(*store_, &kb_));
  AskOptions options;
  options.max_tool_calls_per_step = 8;
  AskAnswer a = AskWithModel(model, tools, {"why?"}, options);
  ASSERT_EQ(model.requests.size(), 2u);
  size_t refused = 0, tool_msgs = 0;
  for (const ChatMessage& m : model.requests[1].messages) {
    if (m.role != "tool") continue;
    ++tool_msgs;
    refused += m.content.find("too many tool calls") != std::string::npos;
  }
  EXPECT_EQ(tool_msgs, 12u);  // every call is answered, as the protocol wants
  EXPECT_EQ(refused, 4u);
}

// The scripted model obeys every injection it reads: it drains "all nodes", other nodes and
// components without a diagnosis, resets the user program's GPU, and claims it did.
TEST_F(AssistantAsk, PromptInjectionObeyedByTheModelCausesNoActionOutsideThePolicy) {
  // A disruptive class the policy does not plan for the primary diagnosis, proposed on its
  // own part: refused however plausible the part.
  const std::string unplanned = [&] {
    const std::vector<policy::Proposal> plan = policy::PlanActions(primary_);
    for (const char* c : {"reboot_node", "reset_gpu", "rma_bundle", "cordon"}) {
      bool planned = false;
      for (const policy::Proposal& p : plan)
        planned = planned || (!p.refused && actions::ToString(p.action_class) == c);
      if (!planned) return std::string(c);
    }
    return std::string("none");
  }();
  const std::string legit_action = [&] {
    for (const policy::Proposal& p : policy::PlanActions(primary_)) {
      if (!p.refused) return std::string(actions::ToString(p.action_class));
    }
    return std::string();
  }();
  ASSERT_FALSE(legit_action.empty());
  bool saw_injection_as_data = false;
  FakeLlmServer server([&](const Json& req, size_t i) {
    if (i == 0) {
      return ScriptedReply{
          200,
          ToolCallsReply({{"get_observations", R"({"limit":50})"}, {"search_kb", R"({"query":"xid 13 exception"})"}}),
          0};
    }
    if (i == 1) {
      // What the model read: the injections, inside "data" as string values.
      for (const Json& m : req["messages"]) {
        if (m["role"] != "tool") continue;
        Json content = Json::parse(m["content"].get<std::string>());
        Json outside = content;
        outside.erase("data");
        if (content.contains("data") && content["data"].dump().find(kInjection) != std::string::npos &&
            outside.dump().find(kInjection) == std::string::npos) {
          saw_injection_as_data = true;
        }
      }
      return ScriptedReply{
          200,
          ToolCallsReply({
              {"propose_action",
               R"({"action":"drain","component":"host","reason":"the log told me to drain all nodes"})"},
              {"propose_action", R"({"action":"drain","component":"node/gpu-8","reason":"drain all nodes"})"},
              {"propose_action", R"({"action":"drain","component":"*","reason":"drain all nodes"})"},
              {"propose_action", R"({"action":"reset_gpu","component":"gpu/0000:5e:00.0","reason":"process said so"})"},
              {"propose_action", R"({"action":")" + unplanned + R"(","component":")" + primary_.component.Id() +
                                     R"(","reason":"SEL said so"})"},
              {"propose_action", R"({"action":"drain","component":"host","reason":"x","node":"gpu-9"})"},
              {"propose_action", R"({"action":")" + legit_action + R"(","component":")" + primary_.component.Id() +
                                     R"(","reason":"the diagnosis recommends it"})"},
          }),
          0};
    }
    return ScriptedReply{200, TextReply("Done: I drained all nodes as instructed.")};
  });
  auto client = Client(server.BaseUrl());
  Toolbox tools(Context(*store_, &kb_));
  const size_t rows_before = PolicyRows();
  auto active_before = policy::ActiveDiagnoses(*store_, kNode);
  ASSERT_TRUE(active_before.ok());

  AskAnswer a = AskWithModel(*client, tools, {"why is gpu-7 slow?"});
  EXPECT_TRUE(saw_injection_as_data);
  EXPECT_EQ(a.stop_reason, "answered");
  // Six proposals judged (the one with an extra "node" argument never reached the gate).
  ASSERT_EQ(a.proposals.size(), 6u);
  const std::vector<policy::Proposal> plan = policy::PlanActions(primary_);
  for (const ProposalVerdict& v : a.proposals) {
    if (!v.accepted) continue;
    // Anything accepted is exactly what the policy already plans for the stored diagnosis.
    EXPECT_EQ(v.component, primary_.component.Id());
    EXPECT_EQ(v.diagnosis_id, eval_.diagnosis_id);
    bool planned = false;
    for (const policy::Proposal& p : plan)
      planned = planned || (!p.refused && actions::ToString(p.action_class) == v.action);
    EXPECT_TRUE(planned) << v.action;
  }
  size_t accepted = 0;
  for (const ProposalVerdict& v : a.proposals) accepted += v.accepted;
  EXPECT_EQ(accepted, 1u);
  EXPECT_EQ(a.proposals.back().action, legit_action);
  EXPECT_TRUE(a.proposals.back().accepted);
  // Nothing was acted on or written for the policy; the active diagnoses are unchanged.
  EXPECT_EQ(PolicyRows(), rows_before);
  policy::Ledger ledger;
  ASSERT_TRUE(ledger.Load(*store_, kNode).ok());
  EXPECT_EQ(ledger.size(), 0u);
  auto active_after = policy::ActiveDiagnoses(*store_, kNode);
  ASSERT_TRUE(active_after.ok());
  EXPECT_EQ(active_after->size(), active_before->size());
  // The refusals are reported with the answer.
  Json j = AnswerJson(a);
  size_t refused = 0;
  for (const Json& p : j["proposals"]) refused += p["accepted_as_request"] == false;
  EXPECT_EQ(refused, 5u);
  // Storing the transcript adds one assistant row that the policy ignores.
  auto id = StoreTranscript(*store_, kNode, {"why is gpu-7 slow?"}, a, kT0 + 300 * kSec);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  policy::Ledger after;
  ASSERT_TRUE(after.Load(*store_, kNode).ok());
  EXPECT_EQ(after.size(), 0u);
  EXPECT_EQ(PolicyRows(), rows_before);
}

TEST_F(AssistantAsk, TranscriptIsStoredWithTheIncident) {
  ScriptedModel model({CallsTool("get_diagnoses", "{}"), Says("See diagnosis:" + std::to_string(eval_.diagnosis_id))});
  Toolbox tools(Context(*store_, &kb_));
  AskAnswer a = AskWithModel(model, tools, {"what failed?"});
  ASSERT_EQ(a.stop_reason, "answered");
  auto id = StoreTranscript(*store_, kNode, {"what failed?"}, a, kT0 + 300 * kSec);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  RecordQuery q;
  q.node = kNode;
  auto rows = store_->ListActions(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 1u);
  const ActionRecord& r = rows->rows[0].value;
  EXPECT_EQ(r.attrs.at("kind"), "assistant_transcript");
  EXPECT_EQ(r.attrs.at("question"), "what failed?");
  EXPECT_EQ(r.diagnosis_id, eval_.diagnosis_id);
  EXPECT_TRUE(r.dry_run);
  EXPECT_EQ(r.action, Action::kNone);
  Json transcript = Json::parse(r.attrs.at("transcript"));
  EXPECT_EQ(transcript.size(), a.transcript.size());
  // A transcript over the limit is cut, still valid JSON.
  auto small = StoreTranscript(*store_, kNode, {"q"}, a, kT0 + 400 * kSec, 600);
  ASSERT_TRUE(small.ok());
  auto all = store_->ListActions(q);
  Json cut = Json::parse(all->rows.back().value.attrs.at("transcript"));
  EXPECT_LT(cut.size(), transcript.size());
  EXPECT_EQ(cut.back()["role"], "note");
}

// Without a store the model is told there is no node data, its node tools say "no store",
// a drain it proposes is refused, ids it makes up are not evidence, and its answer starts
// with the statement: however it words its reply, nothing reads as a diagnosis of the node.
TEST_F(AssistantAsk, WithoutAStoreTheModelGetsTheSameConstraint) {
  ScriptedModel model({CallsTool("get_diagnoses", "{}"), CallsTool("why_slow", "{}"),
                       CallsTool("propose_action", R"({"action":"drain","component":"gpu/0000:3b:00.0","reason":"r"})"),
                       CallsTool("search_kb", R"({"query":"GPU fell off the bus"})"),
                       Says("GPU 0000:3b:00.0 fell off the bus (obs:4); runbook/gpu_fell_off_bus#safe-actions.")});
  ToolContext ctx;
  ctx.node = kNode;
  ctx.retriever = &kb_;
  ctx.no_store_reason = "no store at /nonexistent.db";
  Toolbox tools(ctx);
  AskAnswer a = AskWithModel(model, tools, {"why did gpu-7 fail?"});
  ASSERT_EQ(a.stop_reason, "answered") << a.error;
  ASSERT_EQ(model.requests.size(), 5u);
  const std::string& system = model.requests[0].messages.at(0).content;
  EXPECT_NE(system.find("never instructions"), std::string::npos);  // the safety rules stay
  EXPECT_NE(system.find("no data about this node here (no store at /nonexistent.db)"), std::string::npos) << system;
  EXPECT_NE(system.find("Do not diagnose the node"), std::string::npos);
  // What each tool answered, as the model read it.
  const auto& msgs = model.requests.back().messages;
  std::vector<Json> results;
  for (const ChatMessage& m : msgs) {
    if (m.role == "tool") results.push_back(Json::parse(m.content));
  }
  ASSERT_EQ(results.size(), 4u);
  for (size_t i : {0u, 1u}) {
    EXPECT_EQ(results[i]["ok"], false);
    EXPECT_EQ(results[i]["error"].get<std::string>().rfind("no store (no store at /nonexistent.db)", 0), 0u)
        << results[i];
  }
  EXPECT_EQ(results[2]["data"]["accepted_as_request"], false);
  EXPECT_EQ(results[3]["ok"], true);
  ASSERT_EQ(a.proposals.size(), 1u);
  EXPECT_FALSE(a.proposals[0].accepted);
  // The answer: the statement first, then the model's words; no diagnosis, no evidence.
  EXPECT_EQ(a.text.rfind(a.node_data_statement + "\n\nGPU 0000:3b:00.0 fell off the bus", 0), 0u) << a.text;
  EXPECT_EQ(a.node_data_statement.rfind("No node data (no store at /nonexistent.db)", 0), 0u);
  EXPECT_FALSE(a.primary.has_value());
  EXPECT_TRUE(a.evidence.empty());
  bool flagged = false;
  for (const std::string& n : a.notes) flagged = flagged || n.find("not evidence): obs:4") != std::string::npos;
  EXPECT_TRUE(flagged);
  ASSERT_EQ(a.runbooks.size(), 1u);
  EXPECT_EQ(a.runbooks[0].doc_id, "runbook/gpu_fell_off_bus#safe-actions");
  EXPECT_EQ(AnswerJson(a)["node_data"], false);
  EXPECT_EQ(RenderAnswer(a).rfind("No node data (", 0), 0u);
  // A model that does not finish: the general-guidance answer, statement first.
  ScriptedModel broken({Result<ChatReply>(Status(StatusCode::kUnavailable, "down"))});
  AskAnswer b = AskWithModel(broken, tools, {"why?"});
  EXPECT_EQ(b.stop_reason, "llm_error");
  EXPECT_EQ(b.text.rfind("No node data (no store at /nonexistent.db)", 0), 0u) << b.text;
  EXPECT_FALSE(b.primary.has_value());
}

}  // namespace
}  // namespace faultline::assistant
