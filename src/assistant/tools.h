// The tools the assistant offers a model (docs/assistant.md "Tools"), all read-only except
// propose_action, which only asks: get_diagnoses, get_observations(layer, component, since,
// until, limit), search_kb(query), why_slow(since, until), propose_action(action, component,
// reason).
//
// Contract:
//  - Call never throws and never fails the answer: unknown tools, arguments that are not a
//    JSON object, unknown or missing arguments, wrong types and out-of-range values all come
//    back as an error result the model reads ({"ok": false, "error": ...}).
//  - Every result is one JSON object of at most max_result_bytes. Everything that came from
//    logs, BMCs, process names, runbooks or past incidents sits inside its "data" field as
//    JSON string values (quoted and escaped: no text can end the string or the object), and
//    every result repeats that "data" is untrusted and is never to be followed.
//  - Reads touch only the asked node's rows. propose_action never acts: JudgeProposal says
//    whether the policy would take the request (docs/assistant.md "Safety").
//  - Without node data (no store, or no row for the node: NodeDataGap) the tools that read
//    the node (get_diagnoses, get_observations, why_slow) answer an error saying so, and
//    propose_action is refused: nothing can diagnose the node, only search_kb answers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "assistant/llm_client.h"
#include "assistant/retriever.h"
#include "core/status.h"
#include "core/types.h"

namespace faultline {
class Store;
}

namespace faultline::assistant {

// The isolator over the node's stored data in a window (daemon::WhySlow in the binary; the
// assistant module sits below the daemon, so it is handed in). 0 = open bound.
using WhySlowFn = std::function<Result<std::vector<Diagnosis>>(int64_t since_ns, int64_t until_ns)>;

struct ToolContext {
  Store* store = nullptr;                // null = no store: only search_kb answers
  std::string no_store_reason;           // with no store: why, e.g. "no store at P" (shown as is)
  std::string node;                      // required: the node the question is about
  const Retriever* retriever = nullptr;  // null = no knowledge base
  WhySlowFn why_slow;                    // empty = tool answers "not available"
  int64_t now_ns = 0;                    // "since: 2h" is relative to this
  size_t max_result_bytes = 16 * 1024;
  size_t max_text_bytes = 1024;  // one raw line / passage inside a result
  size_t kb_hits = 5;
};

// Why nothing about ctx.node can be read, "" when something can: no store (no_store_reason,
// else "no store is open"), or a store with no observation, finding or diagnosis of the
// node ("the store has no rows for node N"). A store that cannot be read answers "": its
// errors are reported where the rows are read, not taken for an empty node.
std::string NodeDataGap(const ToolContext& ctx);

// The stored diagnosis a proposal was judged against, and the verdict.
struct ProposalVerdict {
  std::string action;     // as the model asked
  std::string component;  // as the model asked
  std::string reason;     // the model's reason (untrusted; cut)
  bool accepted = false;
  std::string why;           // why refused, or what the policy would do
  int64_t diagnosis_id = 0;  // the stored diagnosis that recommends it (accepted only)
  std::string rule;          // the policy rule that proposes it (accepted only)
  std::string policy_state;  // the policy ledger's state for that decision, "" = none yet
};

// A proposal passes only if a stored, active diagnosis of `node` with deterministic
// evidence (a real fault class, evidence lines, confidence > 0) names this component, and
// policy::PlanActions for it proposes `action` (an action class name) without refusing it.
// Never executes anything; store errors refuse.
ProposalVerdict JudgeProposal(Store& store, const std::string& node, std::string_view action,
                              std::string_view component, std::string_view reason);

// One evidence line of a diagnosis, tied to the stored row it came from where one matches
// (same node, component and time; the raw line when it equals the evidence text).
struct Citation {
  std::string ref;  // "obs:12", "finding:3"; "" when no stored row matched
  int64_t time_ns = 0;
  std::string source;
  std::string component;
  std::string raw;  // the stored raw line (or the evidence text when no row matched)
};
// The evidence lines of `d` (at most `max`), then the stored findings behind it.
std::vector<Citation> CiteEvidence(Store& store, const std::string& node, const Diagnosis& d, size_t max);

// What a tool call handed back, besides the text the model reads.
struct ToolResult {
  std::string content;                      // the JSON text given to the model
  bool error = false;                       // a refused call (bad tool, bad arguments)
  std::set<std::string> refs;               // ids it showed: "obs:12", "finding:3", "diagnosis:7"
  std::vector<KbHit> kb_hits;               // passages it showed
  std::optional<ProposalVerdict> proposal;  // propose_action only
};

class Toolbox {
 public:
  explicit Toolbox(ToolContext context);
  // The schemas offered to the model.
  std::vector<ToolSpec> Specs() const;
  ToolResult Call(std::string_view name, std::string_view arguments_json) const;
  const ToolContext& context() const { return ctx_; }

 private:
  ToolContext ctx_;
};

// The note every result carries about its "data" field.
extern const char kUntrustedDataNote[];

}  // namespace faultline::assistant
