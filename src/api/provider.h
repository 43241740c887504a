// What the HTTP API and /metrics read: one node's observations, findings, diagnoses,
// actions and source health, behind a small interface so the same server runs over a
// stored run (`faultline serve`, StoreProvider over a read-only Store) and, later, inside
// the agent (a provider over the agent's own Store and live state: override Sources()
// with the agent's per-source status and NowNs() with its clock).
//
// Thread-safety: the server calls a provider from several worker threads at once;
// implementations serialize what needs it (Store already does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "assistant/retriever.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/status.h"
#include "core/types.h"
#include "daemon/latency_histogram.h"
#include "daemon/why_slow.h"
#include "store/agent_state.h"
#include "store/records.h"

namespace faultline {
class Store;
}

namespace faultline::api {

struct SourceHealth {
  Source source = Source::kKmsg;
  std::optional<bool> up;                  // known to a live agent; a stored run cannot tell
  std::optional<int64_t> last_success_ns;  // newest stored observation of the source
  std::optional<uint64_t> errors;          // failed polls, when counted (agent)
  std::optional<std::string> error;        // why it counts as failing, while it does (agent)
};

// The live agent's remediation step (daemon/remediation.h RemediationStats).
struct RemediationCounters {
  uint64_t decisions_stored = 0;  // decision rows written
  uint64_t errors = 0;            // policy calls that failed
  // Its worker's calls: handed to it, folded into one waiting, dropped from a full queue for
  // a newer diagnosis, given up on at shutdown; and the most ever waiting at once.
  uint64_t queued = 0;
  uint64_t coalesced = 0;
  uint64_t dropped = 0;
  uint64_t abandoned = 0;
  uint64_t max_queued = 0;
};

// How much one analysis (GET /api/v1/why-slow, and the why_slow tool behind POST
// /api/v1/ask) may read, so that no request costs the agent its memory or its store: an
// open window over a store of days read every row (a 3-day store took the agent from 23 to
// 512 MB under four requests).
struct AnalysisLimits {
  int64_t max_window_ns = int64_t{24} * 3600 * 1'000'000'000;
  size_t max_observations = 50'000;  // the newest ones in the window
};

// The window an analysis reads. An open `since` becomes (`until`, else `now_ns`) minus
// max_window (`since_defaulted`); an explicit window longer than max_window is
// kInvalidArgument naming the limit. `until` is kept as given (0 = open).
struct AnalysisWindow {
  int64_t since_ns = 0;
  int64_t until_ns = 0;
  bool since_defaulted = false;
};
Result<AnalysisWindow> BoundAnalysisWindow(int64_t since_ns, int64_t until_ns, int64_t now_ns,
                                           const AnalysisLimits& limits);

class DataProvider {
 public:
  virtual ~DataProvider() = default;

  // The node every answer is about.
  virtual std::string Node() = 0;
  // "Now" for relative times (since=2h) and the metrics window: the wall clock in the
  // agent; for a stored run the newest stored observation, so an old or simulated run
  // still reads as it was.
  virtual Result<int64_t> NowNs() = 0;

  virtual Result<QueryResult<Observation>> Observations(const ObservationQuery& query) = 0;
  virtual Result<QueryResult<Finding>> Findings(const RecordQuery& query) = 0;
  virtual Result<QueryResult<Diagnosis>> Diagnoses(const RecordQuery& query) = 0;
  virtual Result<QueryResult<ActionRecord>> Actions(const RecordQuery& query) = 0;
  // nullopt when no diagnosis of this node has that id.
  virtual Result<std::optional<Row<Diagnosis>>> DiagnosisById(int64_t id) = 0;
  // The diagnosis in force: the newest stored one (the agent stores the primary each time
  // it changes); nullopt when none.
  virtual Result<std::optional<Row<Diagnosis>>> ActiveDiagnosis() = 0;
  // Reads at most the newest `max_observations` of the window.
  virtual Result<daemon::WhySlowAnswer> WhySlow(int64_t since_ns, int64_t until_ns, size_t max_observations) = 0;
  // Per source, what is known of its health; `since_ns` bounds how far back a stored
  // run is searched for a source's newest observation.
  virtual Result<std::vector<SourceHealth>> Sources(int64_t since_ns) = 0;
  // Whether the agent is blind (every source failing: daemon/agent.h "Blind"), since when and
  // why: a live agent's own state, for a stored run what the agent last recorded in the store
  // (store/agent_state.h); nullopt when it recorded none. kCorrupt when the record is unreadable.
  virtual Result<std::optional<AgentState>> Sight() = 0;
  virtual Result<StoreStats> StoreStatistics() = 0;
  // Records an operator's acknowledgement of a diagnosis as an action row; returns the
  // row id. kPermissionDenied when the data is read-only, kNotFound for an unknown id.
  virtual Result<int64_t> Acknowledge(int64_t diagnosis_id, const std::string& note) = 0;
  // The live agent's evaluation latency; a stored run has none (nullopt).
  virtual std::optional<daemon::LatencyHistogram> EvaluationLatency() { return std::nullopt; }
  // The live agent's model investigations (daemon/incident_investigator.h), by outcome
  // ("answered", "failed", ...); empty for a stored run or an agent without a model.
  virtual std::vector<std::pair<std::string, uint64_t>> AssistantCounters() { return {}; }
  // The live agent's remediation counters; nullopt for a stored run.
  virtual std::optional<RemediationCounters> Remediation() { return std::nullopt; }
  // Closes an incident as `faultline resolve` does (the platform resumed only when faultline
  // took the node out for it); returns the JSON of what was done. kPermissionDenied over
  // read-only data, kNotFound for an unknown id.
  virtual Result<Json> Resolve(int64_t diagnosis_id, const std::string& fixed_by) {
    (void)diagnosis_id;
    (void)fixed_by;
    return Status(StatusCode::kPermissionDenied, "this server reads a store read-only; resolving needs the agent");
  }
  // Asks for an evaluation (detectors, isolator, policy) now. kPermissionDenied without an agent.
  virtual Status Reevaluate() {
    return Status(StatusCode::kPermissionDenied, "this server reads a store read-only; re-evaluating needs the agent");
  }
  // The assistant's offline answer to a question about this node (assistant/ask.h
  // AnswerJson), its why_slow tool held to `limits`. Writes nothing. kUnsupported where the
  // provider cannot answer.
  virtual Result<Json> Ask(const std::string& question, const AnalysisLimits& limits) {
    (void)question;
    (void)limits;
    return Status(StatusCode::kUnsupported, "this server does not answer questions");
  }
};

struct StoreProviderOptions {
  std::string node;              // required
  const Clock* clock = nullptr;  // null: "now" is the newest stored observation
  bool writable = false;         // Acknowledge writes (the store must be open read-write)
  // Where Acknowledge writes; null = the store read. The agent reads through a connection
  // of its own (AgentProvider) and writes through the agent's, so a long read never holds
  // the lock the agent's writer takes.
  Store* writer = nullptr;
  size_t max_diagnosis_scan = 100'000;  // rows read to find a diagnosis by id
  // The knowledge base for POST /api/v1/ask (null: answers without runbook sections). Borrowed.
  const assistant::Retriever* retriever = nullptr;
};

// Over a Store (read-only in `faultline serve`). The store must outlive the provider.
class StoreProvider : public DataProvider {
 public:
  StoreProvider(Store& store, StoreProviderOptions options);

  std::string Node() override { return options_.node; }
  Result<int64_t> NowNs() override;
  Result<QueryResult<Observation>> Observations(const ObservationQuery& query) override;
  Result<QueryResult<Finding>> Findings(const RecordQuery& query) override;
  Result<QueryResult<Diagnosis>> Diagnoses(const RecordQuery& query) override;
  Result<QueryResult<ActionRecord>> Actions(const RecordQuery& query) override;
  Result<std::optional<Row<Diagnosis>>> DiagnosisById(int64_t id) override;
  Result<std::optional<Row<Diagnosis>>> ActiveDiagnosis() override;
  Result<daemon::WhySlowAnswer> WhySlow(int64_t since_ns, int64_t until_ns, size_t max_observations) override;
  Result<std::vector<SourceHealth>> Sources(int64_t since_ns) override;
  Result<std::optional<AgentState>> Sight() override;
  Result<StoreStats> StoreStatistics() override;
  Result<int64_t> Acknowledge(int64_t diagnosis_id, const std::string& note) override;
  Result<Json> Ask(const std::string& question, const AnalysisLimits& limits) override;

 protected:
  Store& store() { return store_; }

 private:
  Store& store_;
  StoreProviderOptions options_;
};

// The node a store is about when none is named: the node of its newest observation
// (then of its newest diagnosis). kNotFound for an empty store.
Result<std::string> NewestNode(Store& store);

}  // namespace faultline::api
