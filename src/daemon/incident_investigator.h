// The agent's automated mode with a model (docs/assistant.md "In the agent"): when a new
// diagnosis is stored, or a node is slow and no rule explains it, the configured LLM is
// asked for the incident summary and next steps through the same bounded tool-calling loop
// `faultline ask` uses (assistant::AskWithModel: steps, tokens, wall time, capped tool
// results, the same read-only tools), and its answer and full transcript are stored with
// the incident beside the deterministic note (assistant::StoreTranscript, mode "llm").
//
// Contract:
//  - Never blocks or slows the evaluation: Submit only queues. One worker thread runs the
//    investigations, so at most one model call is in flight. The queue is bounded: a
//    waiting investigation of the same key (the same fault, or "slow") is replaced by the
//    newer one (coalesced), and past capacity the oldest waiting one is dropped; both
//    counted. At most max_per_hour investigations start in any hour (on the agent's
//    monotonic clock); the rest are skipped and counted.
//  - A model failure (unreachable, timeout, malformed or oversized reply, bounds hit, no
//    answer) stores nothing but a record of any proposals it made: the deterministic note
//    stands. It is counted and logged with the stop reason and the client's error, which
//    never carries the API key (OpenAiChatClient redacts it); the URL is never logged.
//  - Safety: a propose_action is judged by assistant::JudgeProposal (the gate `ask` uses)
//    and only reported: accepted ones are requests the remediation policy may or may not
//    carry out on its own; the rest are stored as refused in the note's "proposals". This
//    class links no actuator and writes nothing but the note.
//  - Stop() cancels the request in flight (the HTTP transfer is abandoned at once; a model
//    that hangs is never waited for beyond its own request timeout), drops what waits, and
//    joins the worker. Call it before the store closes.
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "assistant/ask.h"
#include "assistant/llm_client.h"
#include "assistant/retriever.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/types.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "sources/redfish/http_client.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

struct InvestigatorStats {
  uint64_t submitted = 0;    // investigations handed in
  uint64_t coalesced = 0;    // replaced a waiting one of the same key
  uint64_t dropped = 0;      // the oldest waiting one dropped for a new one, or handed in after Stop
  uint64_t over_budget = 0;  // skipped: max_per_hour already started in the last hour
  uint64_t runs = 0;         // model loops started
  uint64_t answered = 0;     // notes stored with the model's answer
  uint64_t failures = 0;     // model failed or hit a bound: the deterministic note stands
  uint64_t cancelled = 0;    // cut short by Stop()
  uint64_t store_errors = 0;
  uint64_t proposals_accepted = 0;  // accepted as requests to the policy (never executed here)
  uint64_t proposals_refused = 0;
};

// What to investigate.
struct Investigation {
  enum class Trigger { kDiagnosis, kSlowUnexplained };
  Trigger trigger = Trigger::kDiagnosis;
  int64_t diagnosis_id = 0;  // the stored diagnosis the note goes with; 0 = the node's active primary
  FaultClass fault_class = FaultClass::kNone;
  std::string key;  // coalescing key: the same fault ("fault:<class>|<component>") or "slow"
};

struct InvestigatorOptions {
  assistant::LlmConfig llm;
  assistant::AskOptions ask;  // steps, tokens, wall time (clock: null = the system clock)
  size_t queue_capacity = 4;
  int64_t max_per_hour = 6;
};

// The options [assistant] asks for.
InvestigatorOptions InvestigatorOptionsFor(const AssistantSection& section);

// The question the model is given for an investigation (no text from the store in it: the
// model reads the node's data through the tools, where it is quoted as untrusted data).
std::string InvestigationQuestion(const Investigation& investigation);

class IncidentInvestigator {
 public:
  // With the OpenAI-compatible client for options.llm (the key file is read here; errors
  // name the file, never its content). `store`, `kb` (may be null), `clock` and `logger`
  // must outlive the investigator. Starts the worker thread.
  static Result<std::unique_ptr<IncidentInvestigator>> Create(const InvestigatorOptions& options, Store& store,
                                                              std::string node, const assistant::Retriever* kb,
                                                              const Clock& clock, Logger& logger);
  // With the model given (tests; a model that cannot be cancelled is waited for at Stop).
  IncidentInvestigator(const InvestigatorOptions& options, std::unique_ptr<assistant::ChatModel> model, Store& store,
                       std::string node, const assistant::Retriever* kb, const Clock& clock, Logger& logger);
  ~IncidentInvestigator();  // Stop()
  IncidentInvestigator(const IncidentInvestigator&) = delete;
  IncidentInvestigator& operator=(const IncidentInvestigator&) = delete;

  // Queues an investigation (coalescing / dropping as above); never waits for the model.
  // False when stopped (counted as dropped).
  bool Submit(Investigation investigation);
  // Cancels the request in flight, drops what waits (counted), joins the worker. Idempotent.
  void Stop();
  // Waits until nothing waits or runs, at most `max`; true when idle. (Tests, and callers
  // that want the notes before reading the store.)
  bool WaitIdle(std::chrono::nanoseconds max);
  InvestigatorStats stats() const;

 private:
  // The HTTP client the model talks through: the project's libcurl client, every request
  // carrying the investigator's cancel flag so Stop() abandons a transfer in flight.
  class CancellableHttp;

  IncidentInvestigator(const InvestigatorOptions& options, Store& store, std::string node,
                       const assistant::Retriever* kb, const Clock& clock, Logger& logger);
  void Loop();
  // One investigation on the worker thread.
  void Run(const Investigation& investigation);
  // Takes one start from the hour's budget; false when it is spent.
  bool TakeBudget();

  InvestigatorOptions options_;
  Store& store_;
  std::string node_;
  const assistant::Retriever* kb_;
  const Clock& clock_;
  Logger& logger_;
  std::atomic<bool> cancel_{false};
  std::unique_ptr<redfish::HttpClient> http_;    // borrowed by model_: declared first, destroyed last
  std::unique_ptr<assistant::ChatModel> model_;  // used by the worker only

  mutable std::mutex mu_;
  std::condition_variable wake_;  // the worker: work or stop
  std::condition_variable idle_;  // WaitIdle
  std::deque<Investigation> queue_;
  std::deque<int64_t> starts_mono_ns_;  // budget: starts within the last hour (worker only)
  bool running_ = false;                // an investigation is being run
  bool stopping_ = false;
  InvestigatorStats stats_;
  std::thread worker_;
};

}  // namespace faultline::daemon
