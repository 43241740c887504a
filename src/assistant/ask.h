// `faultline ask`: a question about a node answered from the store (docs/assistant.md
// "Ask"). Two modes:
//  - Offline (the default, no model): the isolator's diagnosis plus the top runbook
//    sections, in a fixed template (what failed, where, evidence with ids, what was ruled
//    out, what to do, runbook sections). Deterministic: the same store gives the same answer.
//  - With a model (ChatModel): a bounded tool-calling loop over Toolbox. Bounds: steps
//    (model replies), tokens (the server's usage, or bytes/4 when it reports none) and wall
//    time on an injectable clock; each request's timeout is the wall time left. When a
//    bound or the model fails, the answer is the offline one plus what stopped the model.
//
// Without node data (no store, or none of the node's rows in it: NodeDataGap) both modes
// answer general guidance from the knowledge base only: the text starts with
// NoNodeDataStatement, there is no primary diagnosis or evidence, the model is told so and
// its node-data tools answer "no store" / "no node data". Nothing is made up about the node.
//
// Safety (docs/assistant.md "Safety"): the model's propose_action calls are judged by
// JudgeProposal and only ever reported (accepted as a request for the policy, or refused);
// nothing here acts. The answer cites the evidence of the deterministic diagnosis and the
// ids the model's tools showed it; ids a model invents are not cited. Model text is
// untrusted too: the CLI strips control characters before printing it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "assistant/llm_client.h"
#include "assistant/retriever.h"
#include "assistant/tools.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/status.h"

namespace faultline::assistant {

struct AskRequest {
  std::string question;
  int64_t since_ns = 0;  // 0 = open
  int64_t until_ns = 0;
};

struct AskOptions {
  size_t max_steps = 8;         // model replies
  int64_t max_tokens = 32'000;  // all replies together (prompt + completion)
  int max_reply_tokens = 1024;  // completion tokens per reply
  int64_t max_wall_ns = 120'000'000'000;
  size_t max_tool_calls_per_step = 8;  // more in one reply are refused, not run
  size_t runbook_sections = 3;         // offline answer
  const Clock* clock = nullptr;        // null = the system clock
};

struct RunbookRef {
  std::string doc_id;
  std::string title;
  std::string section;
  std::string path;
  std::string excerpt;  // the passage's first lines
};

struct AskAnswer {
  std::string mode;  // "offline" or "llm"
  std::string
      stop_reason;    // "answered", "offline", "max_steps", "max_tokens", "wall_time", "llm_error", "empty_answer"
  std::string error;  // what stopped the model, when it did not answer
  std::string text;   // the answer
  std::optional<Diagnosis> primary;
  std::optional<int64_t> diagnosis_id;  // the stored row of the primary, when there is one
  std::vector<Citation> evidence;
  std::vector<RunbookRef> runbooks;
  std::vector<ProposalVerdict> proposals;  // every propose_action call, judged
  std::vector<std::string> notes;          // e.g. "no knowledge base in this build"
  // Why nothing about the node was read ("" = its data was): then the answer is general
  // guidance from the knowledge base, not a diagnosis, and the text starts with the
  // statement (NoNodeDataStatement) that says so.
  std::string no_node_data;
  std::string node_data_statement;
  Json transcript = Json::array();  // every message, tool call and result (LLM mode)
  size_t steps = 0;
  int64_t tokens = 0;
  std::string model;
};

AskAnswer AskOffline(const Toolbox& tools, const AskRequest& request, const AskOptions& options = {});
AskAnswer AskWithModel(ChatModel& model, const Toolbox& tools, const AskRequest& request,
                       const AskOptions& options = {});

// The first line of an answer without node data: that there is none, why (`gap`, from
// NodeDataGap), and that what follows is general guidance, not a diagnosis of `node`.
std::string NoNodeDataStatement(const std::string& node, const std::string& gap);

// The answer for a terminal: the text, then (model answers) the evidence and runbook
// sections cited, the proposals with their verdicts, notes and what bounded the model.
// Control characters other than newline and tab are removed (model and log text may carry
// terminal escapes).
std::string RenderAnswer(const AskAnswer& answer);

// The answer as one JSON object (`faultline ask --json`, POST /api/v1/ask). `node_data`
// (false without node data) and `node_data_statement` (the statement the text starts with,
// "" with node data) say whether it is about the node at all.
Json AnswerJson(const AskAnswer& answer);

// Stores the answer and its transcript with the incident as a row of the actions table
// (action "none", dry_run, outcome "assistant: <stop reason>", attrs kind=assistant_transcript,
// question, model, transcript (JSON, cut to max_bytes), proposals, answer (AnswerJson, when
// it fits max_bytes)). The policy's ledger
// ignores it (no "state" attr). Returns the row id.
Result<int64_t> StoreTranscript(Store& store, const std::string& node, const AskRequest& request,
                                const AskAnswer& answer, int64_t now_ns, size_t max_bytes = 256 * 1024);

// The system prompt given to a model (tests check its safety wording).
std::string SystemPrompt();

}  // namespace faultline::assistant
