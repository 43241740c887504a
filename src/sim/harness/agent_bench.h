// `faultline bench agent`: how well the assistant answers "why is this node slow, and what
// failed?" over the scenario corpus (docs/assistant.md "Evaluation").
//
// Per scenario: the lockstep run of bench accuracy (the real agent over the simulated node),
// its store kept; then the question asked through assistant::AskOffline (or AskWithModel
// when a model is given) over that store, with the knowledge base handed in, and the answer
// scored against the scenario's ground truth (ScoreAnswer):
//   - fault class named: the answer's primary diagnosis has the truth's class, or (model
//     answers only) the model's text names it. An offline answer's text is rendered from
//     its primary and also lists the other diagnoses, so for it the primary is the claim;
//   - component named: the primary's component names one of the truth's parts (as the
//     lockstep judges it, ComponentMatches), or (model answers) the text names such a part;
//   - action: the primary recommends the truth's action, or a model proposal or (model
//     answers) its text names it; not scored when the truth states no action;
//   - evidence cited: at least one citation tied to a stored observation or finding
//     ("obs:N" / "finding:N");
//   - healthy scenarios (truth class none): the answer must not claim a fault (no primary
//     with a fault class, no proposal); the other checks do not apply.
// Proposals a model made and the judge refused are counted (they are never executed).
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "assistant/ask.h"
#include "assistant/llm_client.h"
#include "assistant/retriever.h"
#include "core/status.h"
#include "sim/harness/lockstep.h"
#include "sim/node/node_scenario.h"

namespace faultline::sim {

inline constexpr char kAgentBenchQuestion[] = "Why is this node slow, and what failed?";

struct AnswerScore {
  bool healthy = false;        // the truth's class is none
  bool fault_claimed = false;  // a primary with a fault class, or any proposal
  bool class_in_primary = false;
  bool class_in_text = false;  // model answers only
  bool class_named = false;
  std::optional<bool> component_named;  // unset: healthy, or the truth names no part
  std::optional<bool> action_matches;   // unset: healthy, or the truth states no action
  size_t citations = 0;                 // tied to an observation or finding row
  bool evidence_cited = false;
  int proposals = 0;
  int refused = 0;
  // Healthy: no fault claimed. Otherwise: class named, and every scored check passed.
  bool correct = false;
};

// `part_ids`: ComponentRef::Id() of components known to name one of the truth's parts
// (the bench collects them from the run's diagnoses, where the simulated node is known).
// The truth's own component strings count as named in a model's text as well.
AnswerScore ScoreAnswer(const Truth& truth, const assistant::AskAnswer& answer, const std::set<std::string>& part_ids);

// Whether `text` contains `word` with no letter, digit or '_' on either side
// (case-insensitive; '_' in `word` also matches a space or '-').
bool NamesWord(const std::string& text, const std::string& word);

struct AgentBenchOptions {
  LockstepOptions lockstep;  // workdir, nvml library, keep_workdir (the store is read after the run)
  std::string question = kAgentBenchQuestion;
  const assistant::Retriever* kb = nullptr;  // null: answers without runbook sections
  assistant::ChatModel* model = nullptr;     // null: AskOffline
  assistant::AskOptions ask;
};

struct ScenarioAgentRun {
  std::string name;
  Truth truth;
  double duration_s = 0;
  assistant::AskAnswer answer;
  AnswerScore score;
  std::set<std::string> part_ids;
  std::string workdir;  // kept run files ("" when removed)
  double run_wall_s = 0;
  double ask_wall_s = 0;
};

// One scenario: lockstep run, then the question over its store (node "sim-node"), scored.
// Errors: the run failed, or its store could not be opened.
Result<ScenarioAgentRun> RunScenarioAgent(const NodeScenario& scenario, const AgentBenchOptions& options);

struct AgentBenchSummary {
  int scenarios = 0;
  int faulty = 0;  // truth class other than none
  int class_named = 0;
  int component_scored = 0, component_named = 0;
  int action_scored = 0, action_matches = 0;
  int evidence_cited = 0;  // of the faulty ones
  int healthy = 0, healthy_quiet = 0;
  int correct = 0;  // all scenarios
  int proposals = 0, refused = 0;
  std::vector<std::string> misses;  // "name: what was wrong"
};
AgentBenchSummary SummarizeAgentBench(const std::vector<ScenarioAgentRun>& runs);

// What a scored answer got wrong, "" when nothing.
std::string MissReason(const AnswerScore& s);

}  // namespace faultline::sim
