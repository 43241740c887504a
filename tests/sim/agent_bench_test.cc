// `bench agent`'s core (sim/harness/agent_bench.h): the scoring of an answer against the
// truth (offline and model answers, healthy nodes, evidence, refused proposals), the
// summary, and two small scenarios written here run end to end (the real agent in
// lockstep, then the offline answer over the store it left). Behaviour only: no timing.
#include "sim/harness/agent_bench.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
using assistant::AskAnswer;
using assistant::Citation;
using assistant::ProposalVerdict;

Truth MakeTruth(FaultClass c, Action a, std::vector<std::string> components = {}) {
  Truth t;
  t.fault_class = c;
  t.action = a;
  t.components = std::move(components);
  t.start_s = 10;
  return t;
}

Diagnosis MakeDiagnosis(FaultClass c, Action a, ComponentType type, const std::string& name) {
  Diagnosis d;
  d.fault_class = c;
  d.action = a;
  d.component.type = type;
  d.component.name = name;
  d.confidence = 0.9;
  return d;
}

AskAnswer Offline(std::optional<Diagnosis> primary, std::vector<std::string> refs, std::string text = "") {
  AskAnswer a;
  a.mode = "offline";
  a.primary = std::move(primary);
  for (const std::string& r : refs) a.evidence.push_back(Citation{.ref = r, .raw = "line"});
  a.text = std::move(text);
  return a;
}

ProposalVerdict Proposal(const std::string& action, bool accepted) {
  ProposalVerdict v;
  v.action = action;
  v.component = "gpu/2";
  v.accepted = accepted;
  return v;
}

TEST(NamesWordTest, WholeWordsOnlyCaseAndSeparatorInsensitive) {
  EXPECT_TRUE(NamesWord("GPU 3 shows Row Remap Exhausted.", "row_remap_exhausted"));
  EXPECT_TRUE(NamesWord("a row-remap-exhausted fault", "row_remap_exhausted"));
  EXPECT_TRUE(NamesWord("(gpu/3)", "gpu/3"));
  EXPECT_FALSE(NamesWord("gpu/30 is fine", "gpu/3"));
  EXPECT_FALSE(NamesWord("information", "rma"));
  EXPECT_TRUE(NamesWord("rma", "rma"));
  EXPECT_FALSE(NamesWord("", "rma"));
  EXPECT_FALSE(NamesWord("rma", ""));
  EXPECT_FALSE(NamesWord("rm", "rma"));
}

TEST(ScoreAnswerTest, OfflineAnswerWithTheTruthsClassPartActionAndEvidenceIsCorrect) {
  const Truth truth = MakeTruth(FaultClass::kRowRemapExhausted, Action::kRma, {"gpu/2"});
  const std::set<std::string> parts = {"gpu/0000:2a:00.0"};
  Diagnosis d = MakeDiagnosis(FaultClass::kRowRemapExhausted, Action::kRma, ComponentType::kGpu, "0000:2a:00.0");
  ASSERT_EQ(parts.count(d.component.Id()), 1u) << d.component.Id();
  AnswerScore s = ScoreAnswer(truth, Offline(d, {"obs:12", "finding:3"}), parts);
  EXPECT_FALSE(s.healthy);
  EXPECT_TRUE(s.fault_claimed);
  EXPECT_TRUE(s.class_in_primary);
  EXPECT_TRUE(s.class_named);
  EXPECT_EQ(s.component_named, true);
  EXPECT_EQ(s.action_matches, true);
  EXPECT_EQ(s.citations, 2u);
  EXPECT_TRUE(s.correct);
  EXPECT_EQ(MissReason(s), "");
}

TEST(ScoreAnswerTest, EachWrongPartOfAnOfflineAnswerIsAMiss) {
  const Truth truth = MakeTruth(FaultClass::kRowRemapExhausted, Action::kRma, {"gpu/2"});
  const std::set<std::string> parts = {"gpu/0000:2a:00.0"};
  // Wrong GPU, wrong action, evidence not tied to a stored row (a diagnosis id is no evidence).
  Diagnosis d = MakeDiagnosis(FaultClass::kRowRemapExhausted, Action::kResetGpu, ComponentType::kGpu, "0000:3b:00.0");
  AnswerScore s = ScoreAnswer(truth, Offline(d, {"", "diagnosis:4"}), parts);
  EXPECT_TRUE(s.class_named);
  EXPECT_EQ(s.component_named, false);
  EXPECT_EQ(s.action_matches, false);
  EXPECT_EQ(s.citations, 0u);
  EXPECT_FALSE(s.evidence_cited);
  EXPECT_FALSE(s.correct);
  EXPECT_NE(MissReason(s).find("component not named"), std::string::npos);
  EXPECT_NE(MissReason(s).find("action does not match"), std::string::npos);
  EXPECT_NE(MissReason(s).find("no evidence"), std::string::npos);

  // An offline text listing the truth's class among "other diagnoses" is not the claim.
  Diagnosis other = MakeDiagnosis(FaultClass::kHbmSbeAging, Action::kMonitor, ComponentType::kGpu, "0000:2a:00.0");
  AnswerScore o =
      ScoreAnswer(truth, Offline(other, {"obs:1"}, "Other diagnoses:\n  row_remap_exhausted on gpu/2"), parts);
  EXPECT_FALSE(o.class_named);
  EXPECT_FALSE(o.class_in_text);
  EXPECT_FALSE(o.correct);

  // No answer at all.
  AnswerScore none = ScoreAnswer(truth, Offline(std::nullopt, {}), parts);
  EXPECT_FALSE(none.fault_claimed);
  EXPECT_FALSE(none.class_named);
  EXPECT_EQ(none.component_named, false);
  EXPECT_FALSE(none.correct);
}

TEST(ScoreAnswerTest, TruthWithoutPartOrActionIsNotScoredOnThem) {
  const Truth truth = MakeTruth(FaultClass::kDriverFault, Action::kNone);
  Diagnosis d = MakeDiagnosis(FaultClass::kDriverFault, Action::kDriverUpgrade, ComponentType::kHost, "");
  AnswerScore s = ScoreAnswer(truth, Offline(d, {"obs:7"}), {});
  EXPECT_FALSE(s.component_named.has_value());
  EXPECT_FALSE(s.action_matches.has_value());
  EXPECT_TRUE(s.correct);
}

TEST(ScoreAnswerTest, ModelTextAndProposalsCountAndRefusalsAreCounted) {
  const Truth truth = MakeTruth(FaultClass::kRowRemapExhausted, Action::kRma, {"gpu/2"});
  const std::set<std::string> parts = {"gpu/0000:2a:00.0"};
  AskAnswer a;
  a.mode = "llm";
  // The deterministic primary disagrees; the model's words carry the claim.
  a.primary = MakeDiagnosis(FaultClass::kHbmSbeAging, Action::kMonitor, ComponentType::kGpu, "0000:9a:00.0");
  a.text = "GPU gpu/0000:2a:00.0 has Row remap exhausted; it needs an RMA.";
  a.evidence.push_back(Citation{.ref = "obs:5"});
  a.proposals = {Proposal("drain", false), Proposal("rma", true), Proposal("reboot_node", false)};
  AnswerScore s = ScoreAnswer(truth, a, parts);
  EXPECT_FALSE(s.class_in_primary);
  EXPECT_TRUE(s.class_in_text);
  EXPECT_EQ(s.component_named, true);
  EXPECT_EQ(s.action_matches, true);
  EXPECT_EQ(s.proposals, 3);
  EXPECT_EQ(s.refused, 2);
  EXPECT_TRUE(s.correct);

  // The truth's symbolic part in the text counts; a model text without the class does not.
  a.text = "Something is wrong with gpu/2.";
  a.proposals.clear();
  AnswerScore t = ScoreAnswer(truth, a, parts);
  EXPECT_EQ(t.component_named, true);
  EXPECT_FALSE(t.class_named);
  EXPECT_EQ(t.action_matches, false);
  EXPECT_EQ(t.refused, 0);
  EXPECT_FALSE(t.correct);
}

TEST(ScoreAnswerTest, HealthyNodeMustNotBeClaimedFaulty) {
  const Truth truth = MakeTruth(FaultClass::kNone, Action::kNone);
  AnswerScore quiet = ScoreAnswer(truth, Offline(std::nullopt, {}), {});
  EXPECT_TRUE(quiet.healthy);
  EXPECT_FALSE(quiet.fault_claimed);
  EXPECT_TRUE(quiet.correct);
  EXPECT_FALSE(quiet.component_named.has_value());
  EXPECT_FALSE(quiet.action_matches.has_value());

  Diagnosis nothing = MakeDiagnosis(FaultClass::kNone, Action::kNone, ComponentType::kHost, "");
  EXPECT_TRUE(ScoreAnswer(truth, Offline(nothing, {}), {}).correct);

  Diagnosis fault = MakeDiagnosis(FaultClass::kPowerSupply, Action::kRma, ComponentType::kPsu, "PSU1");
  AnswerScore claimed = ScoreAnswer(truth, Offline(fault, {"obs:1"}), {});
  EXPECT_TRUE(claimed.fault_claimed);
  EXPECT_FALSE(claimed.correct);
  EXPECT_EQ(MissReason(claimed), "claimed a fault on a healthy node");

  AskAnswer proposing;
  proposing.mode = "llm";
  proposing.proposals = {Proposal("cordon", false)};
  AnswerScore p = ScoreAnswer(truth, proposing, {});
  EXPECT_TRUE(p.fault_claimed);
  EXPECT_EQ(p.refused, 1);
  EXPECT_FALSE(p.correct);
}

TEST(AgentBenchSummaryTest, RatesCountOnlyWhatEachCheckApplies) {
  std::vector<ScenarioAgentRun> runs(4);
  runs[0].name = "hw-ok";
  runs[0].score = {.fault_claimed = true,
                   .class_in_primary = true,
                   .class_named = true,
                   .component_named = true,
                   .action_matches = true,
                   .citations = 2,
                   .evidence_cited = true,
                   .correct = true};
  runs[1].name = "hw-wrong-part";
  runs[1].score = {.fault_claimed = true,
                   .class_named = true,
                   .component_named = false,
                   .evidence_cited = true,
                   .proposals = 2,
                   .refused = 1};
  runs[2].name = "healthy-quiet";
  runs[2].score = {.healthy = true, .correct = true};
  runs[3].name = "healthy-claimed";
  runs[3].score = {.healthy = true, .fault_claimed = true};
  AgentBenchSummary s = SummarizeAgentBench(runs);
  EXPECT_EQ(s.scenarios, 4);
  EXPECT_EQ(s.faulty, 2);
  EXPECT_EQ(s.class_named, 2);
  EXPECT_EQ(s.component_scored, 2);
  EXPECT_EQ(s.component_named, 1);
  EXPECT_EQ(s.action_scored, 1);
  EXPECT_EQ(s.action_matches, 1);
  EXPECT_EQ(s.evidence_cited, 2);
  EXPECT_EQ(s.healthy, 2);
  EXPECT_EQ(s.healthy_quiet, 1);
  EXPECT_EQ(s.correct, 2);
  EXPECT_EQ(s.proposals, 2);
  EXPECT_EQ(s.refused, 1);
  ASSERT_EQ(s.misses.size(), 2u);
  EXPECT_EQ(s.misses[0], "hw-wrong-part: component not named");
  EXPECT_EQ(s.misses[1], "healthy-claimed: claimed a fault on a healthy node");
}

// Scenarios written for this test: a GPU whose uncorrectable memory error cannot be
// remapped (the offline answer must name it, its GPU and the RMA, with evidence), and a
// healthy node with its ordinary background (the answer must claim nothing).
constexpr char kRemapFailure[] = R"(name: test-agent-remap-failure-gpu6
description: GPU 6 cannot remap a row after a DBE (XID 64); RMA.
duration_s: 140
seed: 11
truth:
  fault_class: row_remap_exhausted
  component: gpu/6
  action: rma
  start_s: 47.5
faults:
  - {at: 47.5, fault: remap_failure, gpu: 6}
)";

constexpr char kHealthy[] = R"(name: test-agent-healthy
description: A training job runs on a healthy node; only background noise.
duration_s: 120
seed: 21
truth:
  fault_class: none
)";

class AgentBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FakeSysfsScratchDir("agent-bench");
    fs::create_directories(dir_);
    options_.lockstep.workdir = dir_;
    options_.lockstep.nvml_library = DefaultFakeNvmlPath();
    ASSERT_FALSE(options_.lockstep.nvml_library.empty()) << "the fake NVML library was not built";
  }
  void TearDown() override { fs::remove_all(dir_); }

  ScenarioAgentRun Run(const char* yaml) {
    auto sc = ParseNodeScenario(yaml);
    EXPECT_TRUE(sc.ok()) << sc.status().ToString();
    if (!sc.ok()) return {};
    auto r = RunScenarioAgent(*sc, options_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : ScenarioAgentRun{};
  }

  std::string dir_;
  AgentBenchOptions options_;
};

TEST_F(AgentBenchTest, HardwareFaultIsNamedWithItsPartActionAndEvidence) {
  const ScenarioAgentRun r = Run(kRemapFailure);
  EXPECT_EQ(r.answer.mode, "offline");
  ASSERT_TRUE(r.answer.primary.has_value()) << r.answer.text;
  EXPECT_FALSE(r.part_ids.empty()) << "no diagnosis named GPU 6";
  EXPECT_TRUE(r.score.class_in_primary) << r.answer.text;
  EXPECT_EQ(r.score.component_named, true) << r.answer.primary->component.Id();
  EXPECT_EQ(r.score.action_matches, true) << ToString(r.answer.primary->action);
  EXPECT_GE(r.score.citations, 1u) << r.answer.text;
  EXPECT_TRUE(r.score.correct) << MissReason(r.score);
  EXPECT_NE(r.answer.text.find("row_remap_exhausted"), std::string::npos) << r.answer.text;
  EXPECT_TRUE(fs::is_empty(dir_)) << "the run's files were not removed";
}

TEST_F(AgentBenchTest, HealthyNodeIsNotClaimedFaultyAndKeptFilesStay) {
  options_.lockstep.keep_workdir = true;
  const ScenarioAgentRun r = Run(kHealthy);
  EXPECT_TRUE(r.score.healthy);
  EXPECT_FALSE(r.score.fault_claimed) << r.answer.text;
  EXPECT_TRUE(r.score.correct);
  ASSERT_FALSE(r.workdir.empty());
  EXPECT_TRUE(fs::exists(r.workdir + "/faultline.db"));

  const AgentBenchSummary s = SummarizeAgentBench({r});
  EXPECT_EQ(s.healthy, 1);
  EXPECT_EQ(s.healthy_quiet, 1);
  EXPECT_TRUE(s.misses.empty());
}

// A model scripted for this test: first a proposal no diagnosis backs (a PSU on a node
// whose fault is a GPU's memory), then its final words.
class ScriptedModel : public assistant::ChatModel {
 public:
  Result<assistant::ChatReply> Complete(const assistant::ChatRequest& request) override {
    ++calls;
    assistant::ChatReply r;
    r.message.role = "assistant";
    if (calls == 1) {
      r.message.tool_calls = {
          {"c1", "propose_action", R"({"action": "reboot_node", "component": "psu/PSU9", "reason": "just in case"})"}};
      r.finish_reason = "tool_calls";
    } else {
      saw_tool_result = request.messages.back().role == "tool";
      r.message.content = "GPU 6 shows row remap exhausted after an uncorrectable error; send it for RMA.";
      r.finish_reason = "stop";
    }
    return r;
  }
  std::string ModelName() const override { return "scripted"; }
  int calls = 0;
  bool saw_tool_result = false;
};

TEST_F(AgentBenchTest, ModelAnswerIsScoredOnItsWordsAndItsRefusedProposalCounted) {
  ScriptedModel model;
  options_.model = &model;
  const ScenarioAgentRun r = Run(kRemapFailure);
  EXPECT_EQ(r.answer.mode, "llm");
  EXPECT_EQ(model.calls, 2);
  EXPECT_TRUE(model.saw_tool_result);
  EXPECT_TRUE(r.score.class_in_text) << r.answer.text;
  EXPECT_EQ(r.score.proposals, 1);
  EXPECT_EQ(r.score.refused, 1);
  EXPECT_TRUE(r.score.fault_claimed);
  EXPECT_TRUE(r.score.correct) << MissReason(r.score);
}

}  // namespace
}  // namespace faultline::sim
