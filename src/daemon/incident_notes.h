// The assistant's automated mode in the agent (docs/assistant.md "In the agent"): when a new
// primary diagnosis is stored, the agent writes the incident's summary and next steps (the
// offline answer: what failed, where, evidence with row ids, what was ruled out, what to do,
// runbook sections) into the store beside it, so the API, the dashboard and the RMA bundle
// carry it without anyone asking. Deterministic and local: no model is called here.
//
// The knowledge base ([assistant] kb_dir) is indexed once at start into index_dir; without
// one the note still carries the diagnosis and its evidence. Never fatal: an error is logged.
// The same knowledge base answers the agent's POST /api/v1/ask (knowledge_base()), also when
// incident_notes is off.
// Thread-safety: AfterEvaluation from the evaluating thread only; knowledge_base() may be
// searched from any thread (the index takes its own lock).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "assistant/retriever.h"
#include "daemon/config.h"
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
  IncidentNotes(const AssistantSection& section, Store& store, std::string node, Logger& logger);
  ~IncidentNotes();

  // After one evaluation whose rows are committed: a new primary diagnosis that is not
  // "none" gets its note. Returns the stored row id, 0 when nothing was written.
  int64_t AfterEvaluation(const EvaluateResult& result, int64_t now_ns);
  uint64_t notes_written() const { return written_; }
  // Null when no knowledge base is configured or it could not be opened. Valid while this
  // object lives.
  const assistant::Retriever* knowledge_base() const { return kb_.get(); }

 private:
  AssistantSection section_;
  Store& store_;
  std::string node_;
  Logger& logger_;
  std::unique_ptr<assistant::Retriever> kb_;
  uint64_t written_ = 0;
};

}  // namespace faultline::daemon
