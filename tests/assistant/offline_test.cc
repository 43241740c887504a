// Offline mode (no model): the answer from the isolator's diagnosis and the top runbook
// sections, over stores filled by the agent's real pipeline.
#include <gtest/gtest.h>

#include "assistant/ask.h"
#include "assistant_fixtures.h"
#include "policy/rules.h"

namespace faultline::assistant {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixtures

std::unique_ptr<Store> OpenStore() {
  auto store = Store::Open(":memory:");
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

TEST(AssistantOffline, AnswersWhatWhereEvidenceRuledOutActionAndRunbooks) {
  auto store = OpenStore();
  auto eval = FillStore(*store, IncidentKernelLines(), IncidentSel());
  ASSERT_TRUE(eval.diagnosis_stored);
  const Diagnosis& d = eval.diagnoses.front();
  FixedRetriever kb(Runbooks());
  Toolbox tools(Context(*store, &kb));
  AskAnswer a = AskOffline(tools, {"why did gpu-7 fail?"});
  EXPECT_EQ(a.mode, "offline");
  ASSERT_TRUE(a.primary.has_value());
  EXPECT_EQ(a.primary->fault_class, d.fault_class);
  ASSERT_TRUE(a.diagnosis_id.has_value());
  EXPECT_EQ(*a.diagnosis_id, eval.diagnosis_id);
  const std::string& t = a.text;
  for (const std::string& part :
       {"What failed: " + std::string(ToString(d.fault_class)),
        "Where: " + std::string(ToString(d.layer)) + " layer, " + d.component.Id(), std::string("Evidence:"),
        std::string("Ruled out:"), std::string("What to do:"), "recommended: " + std::string(ToString(d.action)),
        std::string("Runbook sections:"), "Diagnosis: diagnosis:" + std::to_string(eval.diagnosis_id)}) {
    EXPECT_NE(t.find(part), std::string::npos) << part << "\n" << t;
  }
  // Evidence with the stored observation ids and their raw kernel lines.
  bool xid79 = false;
  for (const Citation& c : a.evidence) {
    if (c.raw.find("Xid (PCI:0000:3b:00): 79") == std::string::npos) continue;
    xid79 = true;
    EXPECT_EQ(c.ref.rfind("obs:", 0), 0u) << c.ref;
    EXPECT_NE(t.find("[" + c.ref + "]"), std::string::npos);
  }
  EXPECT_TRUE(xid79) << t;
  // The policy's plan is spelled out.
  for (const policy::Proposal& p : policy::PlanActions(d)) {
    EXPECT_NE(t.find(std::string(actions::ToString(p.action_class))), std::string::npos);
  }
  // Runbook sections retrieved for the diagnosis, cited by id.
  ASSERT_FALSE(a.runbooks.empty());
  EXPECT_EQ(a.runbooks.front().doc_id.rfind("runbook/gpu_fell_off_bus", 0), 0u);
  EXPECT_NE(t.find("[kb:" + a.runbooks.front().doc_id + "]"), std::string::npos);
  EXPECT_NE(kb.last_query.find("fell off bus"), std::string::npos) << kb.last_query;
  // Deterministic.
  EXPECT_EQ(AskOffline(tools, {"why did gpu-7 fail?"}).text, t);
}

TEST(AssistantOffline, SaysSoWithoutAKnowledgeBase) {
  auto store = OpenStore();
  ASSERT_TRUE(FillStore(*store, IncidentKernelLines(), "").diagnosis_stored);
  Toolbox tools(Context(*store, nullptr));
  AskAnswer a = AskOffline(tools, {"what failed?"});
  EXPECT_TRUE(a.runbooks.empty());
  EXPECT_NE(a.text.find("no knowledge base in this build"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("What failed:"), std::string::npos);
}

TEST(AssistantOffline, HealthyNodeHasNothingToAnswerFor) {
  auto store = OpenStore();
  // Only a benign SEL event: no finding.
  FillStore(*store, {}, "   1 | 03/01/2026 | 10:00:01 | System Event #0x01 | Timestamp Clock Sync | Asserted\n");
  FixedRetriever kb(Runbooks());
  Toolbox tools(Context(*store, &kb));
  AskAnswer a = AskOffline(tools, {"is it safe to return gpu-7 to service?"});
  EXPECT_NE(a.text.find("nothing diagnosed for this node"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("nothing to act on"), std::string::npos);
  EXPECT_FALSE(a.diagnosis_id.has_value());
  EXPECT_TRUE(a.no_node_data.empty()) << a.no_node_data;  // a healthy node's rows are node data
}

TEST(AssistantOffline, WindowAsksTheIsolatorOverThatWindow) {
  auto store = OpenStore();
  auto eval = FillStore(*store, IncidentKernelLines(), IncidentSel());
  ASSERT_TRUE(eval.diagnosis_stored);
  FixedRetriever kb(Runbooks());
  Toolbox tools(Context(*store, &kb));
  // A window before anything happened: nothing to explain there.
  AskRequest before{"what happened?", kT0 - 3600 * kSec, kT0 - 1800 * kSec};
  AskAnswer early = AskOffline(tools, before);
  EXPECT_FALSE(early.primary.has_value());
  EXPECT_NE(early.text.find("nothing diagnosed for this node"), std::string::npos) << early.text;
  // A window after it, nothing stored overlaps: the isolator over that window is asked, and
  // its guess without timed evidence is not presented as a diagnosis.
  AskAnswer late = AskOffline(tools, {"what happened?", kT0 + 7200 * kSec, kT0 + 9000 * kSec});
  EXPECT_FALSE(late.primary.has_value());
  // A window around the incident: the stored diagnosis, linked to its row.
  AskRequest during{"what happened?", kT0, kT0 + 120 * kSec};
  AskAnswer a = AskOffline(tools, during);
  ASSERT_TRUE(a.primary.has_value());
  EXPECT_EQ(a.primary->fault_class, eval.diagnoses.front().fault_class);
  ASSERT_TRUE(a.diagnosis_id.has_value());
  EXPECT_EQ(*a.diagnosis_id, eval.diagnosis_id);
}

TEST(AssistantOffline, AnswerJsonCarriesTheSameFacts) {
  auto store = OpenStore();
  auto eval = FillStore(*store, IncidentKernelLines(), IncidentSel());
  FixedRetriever kb(Runbooks());
  Toolbox tools(Context(*store, &kb));
  AskAnswer a = AskOffline(tools, {"what failed?"});
  Json j = AnswerJson(a);
  EXPECT_EQ(j["mode"], "offline");
  EXPECT_EQ(j["primary"]["fault_class"], ToString(eval.diagnoses.front().fault_class));
  EXPECT_EQ(j["diagnosis_id"], eval.diagnosis_id);
  EXPECT_EQ(j["evidence"].size(), a.evidence.size());
  EXPECT_EQ(j["runbooks"].size(), a.runbooks.size());
  EXPECT_TRUE(j["proposals"].empty());
}

// Without a store: the question's runbook sections, said plainly to be general guidance
// first, and nothing about the node (no diagnosis, evidence, ruled-out layers or action).
TEST(AssistantOffline, WithoutAStoreAnswersGeneralGuidanceAndSaysSoFirst) {
  FixedRetriever kb(Runbooks());
  ToolContext ctx;
  ctx.node = kNode;
  ctx.retriever = &kb;
  ctx.no_store_reason = "no store at /nonexistent/faultline.db";
  Toolbox tools(ctx);
  AskAnswer a = AskOffline(tools, {"what confirms that a GPU fell off the bus?"});
  const std::string statement =
      "No node data (no store at /nonexistent/faultline.db): this is general guidance from the knowledge base, not a "
      "diagnosis of node gpu-7.";
  EXPECT_EQ(a.node_data_statement, statement);
  EXPECT_EQ(a.no_node_data, "no store at /nonexistent/faultline.db");
  EXPECT_EQ(a.text.rfind(statement + "\n", 0), 0u) << a.text;
  EXPECT_EQ(a.mode, "offline");
  EXPECT_FALSE(a.primary.has_value());
  EXPECT_FALSE(a.diagnosis_id.has_value());
  EXPECT_TRUE(a.evidence.empty());
  ASSERT_FALSE(a.runbooks.empty());
  EXPECT_EQ(a.runbooks.front().doc_id.rfind("runbook/gpu_fell_off_bus", 0), 0u);
  EXPECT_NE(a.text.find("[kb:" + a.runbooks.front().doc_id + "]"), std::string::npos);
  // The question alone was searched: no fault class was added to it.
  EXPECT_EQ(kb.last_query, "what confirms that a GPU fell off the bus?");
  for (const char* diagnosis_part : {"What failed", "Where:", "Evidence:", "Ruled out", "What to do", "recommended"}) {
    EXPECT_EQ(a.text.find(diagnosis_part), std::string::npos) << diagnosis_part << "\n" << a.text;
  }
  Json j = AnswerJson(a);
  EXPECT_EQ(j["node_data"], false);
  EXPECT_EQ(j["node_data_statement"], statement);
  EXPECT_TRUE(j["primary"].is_null());
  EXPECT_TRUE(j["evidence"].empty());
  EXPECT_FALSE(j["runbooks"].empty());
  // No knowledge base either: still no invented diagnosis, and it says what is missing.
  ctx.retriever = nullptr;
  ctx.no_store_reason.clear();
  AskAnswer bare = AskOffline(Toolbox(ctx), {"why is this node slow?"});
  EXPECT_EQ(bare.text.rfind("No node data (no store is open)", 0), 0u) << bare.text;
  EXPECT_NE(bare.text.find("no knowledge base in this build"), std::string::npos) << bare.text;
  EXPECT_FALSE(bare.primary.has_value());
}

// A store holding nothing of the node (an empty store, or another node's): the same.
TEST(AssistantOffline, StoreWithoutTheNodesRowsIsGeneralGuidance) {
  FixedRetriever kb(Runbooks());
  auto empty = OpenStore();
  Toolbox on_empty(Context(*empty, &kb));
  AskAnswer a = AskOffline(on_empty, {"GPU fell off the bus: safe actions?"});
  EXPECT_EQ(a.no_node_data, "the store has no rows for node gpu-7");
  EXPECT_EQ(a.text.rfind("No node data (the store has no rows for node gpu-7): this is general guidance", 0), 0u)
      << a.text;
  EXPECT_FALSE(a.primary.has_value());
  EXPECT_FALSE(a.runbooks.empty());
  EXPECT_EQ(a.text.find("nothing diagnosed"), std::string::npos) << a.text;  // not a verdict on the node

  auto filled = OpenStore();
  ASSERT_TRUE(FillStore(*filled, IncidentKernelLines(), IncidentSel()).diagnosis_stored);
  ToolContext other = Context(*filled, &kb);
  other.node = "gpu-8";
  AskAnswer b = AskOffline(Toolbox(other), {"why did it fail?"});
  EXPECT_EQ(b.no_node_data, "the store has no rows for node gpu-8");
  EXPECT_FALSE(b.primary.has_value());
  EXPECT_TRUE(b.evidence.empty());
  // The node with rows: the diagnosis, as always, and no statement.
  AskAnswer c = AskOffline(Toolbox(Context(*filled, &kb)), {"why did it fail?"});
  EXPECT_TRUE(c.no_node_data.empty());
  EXPECT_TRUE(c.node_data_statement.empty());
  EXPECT_TRUE(c.primary.has_value());
  EXPECT_EQ(c.text.find("No node data"), std::string::npos);
  EXPECT_EQ(AnswerJson(c)["node_data"], true);
  EXPECT_EQ(AnswerJson(c)["node_data_statement"], "");
}

}  // namespace
}  // namespace faultline::assistant
