#include "api/provider.h"

#include <algorithm>
#include <limits>

#include "assistant/ask.h"
#include "assistant/tools.h"
#include "store/store.h"

namespace faultline::api {

namespace {

// "24h", "90m", "45s": the form since= takes.
std::string DurationText(int64_t ns) {
  constexpr int64_t kSecond = 1'000'000'000;
  if (ns % (3600 * kSecond) == 0) return std::to_string(ns / (3600 * kSecond)) + "h";
  if (ns % (60 * kSecond) == 0) return std::to_string(ns / (60 * kSecond)) + "m";
  return std::to_string(std::max<int64_t>(1, ns / kSecond)) + "s";
}

}  // namespace

Result<AnalysisWindow> BoundAnalysisWindow(int64_t since_ns, int64_t until_ns, int64_t now_ns,
                                           const AnalysisLimits& limits) {
  const int64_t end = until_ns != 0 ? until_ns : now_ns;
  const int64_t max = std::max<int64_t>(1, limits.max_window_ns);
  const int64_t earliest = end > std::numeric_limits<int64_t>::min() + max ? end - max : end;
  if (since_ns == 0) return AnalysisWindow{earliest, until_ns, true};
  if (since_ns < earliest) {
    return Status(StatusCode::kInvalidArgument,
                  "the window is longer than " + DurationText(max) +
                      ", the most one request may analyse: ask for a shorter one (e.g. since=" + DurationText(max) +
                      "), or run `faultline why-slow` on the node");
  }
  return AnalysisWindow{since_ns, until_ns, false};
}

StoreProvider::StoreProvider(Store& store, StoreProviderOptions options)
    : store_(store), options_(std::move(options)) {}

Result<int64_t> StoreProvider::NowNs() {
  if (options_.clock != nullptr) return options_.clock->NowNs();
  ObservationQuery q;
  q.node = options_.node;
  q.limit = 1;
  q.newest_first = true;
  auto rows = store_.QueryObservations(q);
  if (!rows.ok()) return rows.status();
  return rows->rows.empty() ? int64_t{0} : rows->rows.front().value.time_ns;
}

Result<QueryResult<Observation>> StoreProvider::Observations(const ObservationQuery& query) {
  ObservationQuery q = query;
  q.node = options_.node;
  return store_.QueryObservations(q);
}

Result<QueryResult<Finding>> StoreProvider::Findings(const RecordQuery& query) {
  RecordQuery q = query;
  q.node = options_.node;
  return store_.ListFindings(q);
}

Result<QueryResult<Diagnosis>> StoreProvider::Diagnoses(const RecordQuery& query) {
  RecordQuery q = query;
  q.node = options_.node;
  return store_.ListDiagnoses(q);
}

Result<QueryResult<ActionRecord>> StoreProvider::Actions(const RecordQuery& query) {
  RecordQuery q = query;
  q.node = options_.node;
  return store_.ListActions(q);
}

// The store has no look-up by id; diagnoses are few (one row per change of the primary),
// so a bounded scan of the node's rows is enough.
Result<std::optional<Row<Diagnosis>>> StoreProvider::DiagnosisById(int64_t id) {
  RecordQuery q;
  q.node = options_.node;
  q.limit = options_.max_diagnosis_scan;
  auto rows = store_.ListDiagnoses(q);
  if (!rows.ok()) return rows.status();
  for (auto& row : rows->rows) {
    if (row.id == id) return std::optional<Row<Diagnosis>>(std::move(row));
  }
  return std::optional<Row<Diagnosis>>();
}

Result<std::optional<Row<Diagnosis>>> StoreProvider::ActiveDiagnosis() { return store_.LatestDiagnosis(options_.node); }

Result<daemon::WhySlowAnswer> StoreProvider::WhySlow(int64_t since_ns, int64_t until_ns, size_t max_observations) {
  daemon::WhySlowQuery q;
  q.node = options_.node;
  q.since_ns = since_ns;
  q.until_ns = until_ns;
  if (max_observations > 0) q.max_observations = max_observations;
  return daemon::WhySlow(store_, q);
}

// The newest stored observation of each source in the window (the node_time index, read
// backwards; bounded by the window).
Result<std::vector<SourceHealth>> StoreProvider::Sources(int64_t since_ns) {
  std::vector<SourceHealth> out;
  for (Source s : {Source::kRedfish, Source::kIpmi, Source::kNvml, Source::kDcgmExporter, Source::kKmsg, Source::kSysfs,
                   Source::kWorkload}) {
    ObservationQuery q;
    q.node = options_.node;
    q.source = s;
    q.since_ns = since_ns;
    q.limit = 1;
    q.newest_first = true;
    auto rows = store_.QueryObservations(q);
    if (!rows.ok()) return rows.status();
    if (rows->rows.empty()) continue;
    out.push_back(SourceHealth{.source = s, .last_success_ns = rows->rows.front().value.time_ns});
  }
  return out;
}

Result<std::optional<AgentState>> StoreProvider::Sight() { return GetAgentState(store_, options_.node); }

Result<StoreStats> StoreProvider::StoreStatistics() { return store_.Stats(); }

Result<int64_t> StoreProvider::Acknowledge(int64_t diagnosis_id, const std::string& note) {
  if (!options_.writable) {
    return Status(StatusCode::kPermissionDenied,
                  "this server reads a store read-only; acknowledgements need the agent");
  }
  auto found = DiagnosisById(diagnosis_id);
  if (!found.ok()) return found.status();
  if (!*found) return Status(StatusCode::kNotFound, "no diagnosis " + std::to_string(diagnosis_id));
  auto now = NowNs();
  if (!now.ok()) return now.status();
  ActionRecord a;
  a.time_ns = *now;
  a.node = options_.node;
  a.action = Action::kNone;
  a.diagnosis_id = diagnosis_id;
  a.dry_run = false;
  a.outcome = "acknowledged";
  a.reason = note;
  a.attrs["kind"] = "ack";
  a.attrs["via"] = "api";
  return (options_.writer != nullptr ? *options_.writer : store_).PutAction(a);
}

Result<std::string> NewestNode(Store& store) {
  ObservationQuery q;
  q.limit = 1;
  q.newest_first = true;
  auto rows = store.QueryObservations(q);
  if (!rows.ok()) return rows.status();
  if (!rows->rows.empty()) return rows->rows.front().node;
  RecordQuery rq;
  rq.limit = 0;
  auto dx = store.ListDiagnoses(rq);
  if (!dx.ok()) return dx.status();
  if (!dx->rows.empty()) return dx->rows.back().node;
  return Status(StatusCode::kNotFound, "the store holds no observations or diagnoses");
}

}  // namespace faultline::api

namespace faultline::api {

Result<Json> StoreProvider::Ask(const std::string& question, const AnalysisLimits& limits) {
  auto now = NowNs();
  if (!now.ok()) return now.status();
  assistant::ToolContext ctx;
  ctx.store = &store_;
  ctx.node = options_.node;
  ctx.retriever = options_.retriever;
  ctx.now_ns = *now;
  // The question's window is open unless it names one: held to the same bounds as /why-slow.
  ctx.why_slow = [this, &limits, now_ns = *now](int64_t since, int64_t until) -> Result<std::vector<Diagnosis>> {
    auto window = BoundAnalysisWindow(since, until, now_ns, limits);
    if (!window.ok()) return window.status();
    auto a = WhySlow(window->since_ns, window->until_ns, limits.max_observations);
    if (!a.ok()) return a.status();
    return a->diagnoses;
  };
  assistant::Toolbox tools(ctx);
  return assistant::AnswerJson(assistant::AskOffline(tools, {.question = question}));
}

}  // namespace faultline::api
