// The assistant's automated mode in the agent (docs/assistant.md "In the agent"): when a new
// primary diagnosis is stored, the agent writes the incident's summary and next steps (the
// offline answer: what failed, where, evidence with row ids, what was ruled out, what to do,
// runbook sections) into the store beside it, so the API, the dashboard and the RMA bundle
// carry it without anyone asking. That note is deterministic and local.
//
// With a model configured ([assistant] llm_url), the same events are also handed to an
// IncidentInvestigator (daemon/incident_investigator.h), which asks the model on its own
// thread and stores its answer beside the note: a new primary diagnosis (the question is
// the "slow, unexplained" one when the primary is workload_imbalance), and a node that
// stays slow with no rule explaining it (a workload_imbalance diagnosis in the isolator's
// answer), at most once per slow_recheck. AfterEvaluation only queues: it never waits for
// the model. A model that cannot be set up (bad key file) is logged and left out.
//
// The knowledge base ([assistant] kb_dir) is indexed once at start into index_dir; without
// one the note still carries the diagnosis and its evidence. Never fatal: an error is logged.
// The same knowledge base answers the agent's POST /api/v1/ask (knowledge_base()), also when
// incident_notes is off.
// Thread-safety: AfterEvaluation and StopInvestigations from the evaluating (or stopping)
// thread only; knowledge_base() may be searched from any thread (the index takes its own
// lock); investigator() and investigation_stats() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "assistant/retriever.h"
#include "core/clock.h"
#include "daemon/config.h"
#include "daemon/incident_investigator.h"
#include "daemon/log.h"
#include "daemon/pipeline.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

class IncidentNotes {
 public:
  // Opens (and re-indexes) the knowledge base when the section names one (index_dir must be
  // set then: the agent puts it beside its store); a knowledge base that cannot be opened is
  // logged and the notes go without runbook sections.
  // `clock` (the rate limits' monotonic time) must outlive this object.
  IncidentNotes(const AssistantSection& section, Store& store, std::string node, const Clock& clock, Logger& logger);
  ~IncidentNotes();

  // After one evaluation whose rows are committed: a new primary diagnosis that is not
  // "none" gets its note (when incident_notes is on) and, with a model, an investigation
  // queued; a slow, unexplained node gets one queued at most once per slow_recheck.
  // Returns the deterministic note's row id, 0 when none was written.
  int64_t AfterEvaluation(const EvaluateResult& result, int64_t now_ns);
  uint64_t notes_written() const { return written_; }
  // Stops the model's worker (the request in flight cancelled); before the store closes.
  // Idempotent; later evaluations queue nothing.
  void StopInvestigations();
  // Null without a model. Valid while this object lives.
  IncidentInvestigator* investigator() { return investigator_.get(); }
  InvestigatorStats investigation_stats() const { return investigator_ ? investigator_->stats() : InvestigatorStats{}; }
  // Null when no knowledge base is configured or it could not be opened. Valid while this
  // object lives.
  const assistant::Retriever* knowledge_base() const { return kb_.get(); }

 private:
  AssistantSection section_;
  Store& store_;
  std::string node_;
  Logger& logger_;
  void OpenKnowledgeBase();
  // Writes the offline answer for the new primary; its row id, 0 when not stored.
  int64_t WriteNote(const EvaluateResult& result, int64_t now_ns);
  // Queues the model's investigations this evaluation calls for.
  void Investigate(const EvaluateResult& result, bool new_primary);

  const Clock& clock_;
  std::unique_ptr<assistant::Retriever> kb_;
  std::unique_ptr<IncidentInvestigator> investigator_;  // after kb_: it searches it
  std::optional<int64_t> last_slow_mono_ns_;            // the last slow, unexplained investigation queued
  uint64_t written_ = 0;
};

}  // namespace faultline::daemon
