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

}  // namespace
}  // namespace faultline::assistant
