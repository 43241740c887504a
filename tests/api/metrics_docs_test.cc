// docs/metrics.md lists exactly the metrics /metrics emits: its "Metrics" table is read and
// compared with a scrape of a store that exercises every row, in process with a live agent's
// state (every name, both ways) and through `faultline serve` (every name it emits is listed;
// only the live-agent-only ones are missing).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "api/metrics.h"
#include "api_fixture.h"
#include "faultline_process.h"
#include "parse/prometheus.h"

namespace faultline::api_test {
namespace {

// What a stored run cannot know (docs/metrics.md "a live agent only").
const std::set<std::string> kLiveAgentOnly{
    "faultline_source_up",
    "faultline_source_errors_total",
    "faultline_evaluation_duration_seconds",
    "faultline_assistant_investigations_total",
    "faultline_remediation_decisions_total",
    "faultline_remediation_errors_total",
    "faultline_remediation_worker_calls_total",
    "faultline_remediation_worker_queue_max",
};

// Every full name in the first column of the "## Metrics" table.
std::set<std::string> DocumentedMetrics() {
  std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/docs/metrics.md");
  EXPECT_TRUE(in.good());
  const std::regex name("`(faultline_[a-z0-9_]+)`");
  std::set<std::string> names;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_table = line == "## Metrics";
    if (!in_table || line.rfind("| `faultline_", 0) != 0) continue;
    const std::string first_cell = line.substr(1, line.find(" |", 1) - 1);
    for (std::sregex_iterator it(first_cell.begin(), first_cell.end(), name), end; it != end; ++it) {
      names.insert((*it)[1]);
    }
  }
  return names;
}

std::set<std::string> Emitted(const std::string& text) {
  auto parsed = ParsePrometheusText(text);
  EXPECT_TRUE(parsed.ok() && parsed->error_count == 0) << text;
  std::set<std::string> names;
  if (parsed.ok()) {
    for (const auto& [metric, meta] : parsed->metadata) names.insert(metric);
  }
  return names;
}

std::string Minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string out;
  for (const std::string& x : a) {
    if (!b.count(x)) out += " " + x;
  }
  return out;
}

// A store with a reading for every row of the observation table, the incident's XID and
// diagnosis, and a recorded blind state.
void FillEverything(Store& store) {
  (void)FillIncident(store);
  FillEveryMetric(store);
  AgentState blind;
  blind.blind = true;
  blind.since_ns = kT0 + 50 * kSec;
  blind.sources = {{.source = "nvml", .failing = true, .error = "unavailable"}};
  ASSERT_TRUE(PutAgentState(store, kNode, blind).ok());
}

// The agent's provider as far as /metrics sees it: the live hooks answered.
class LiveProvider : public api::StoreProvider {
 public:
  using StoreProvider::StoreProvider;
  Result<std::vector<api::SourceHealth>> Sources(int64_t since_ns) override {
    auto sources = StoreProvider::Sources(since_ns);
    if (sources.ok()) {
      for (api::SourceHealth& s : *sources) {
        s.up = true;
        s.errors = 0;
      }
    }
    return sources;
  }
  std::optional<daemon::LatencyHistogram> EvaluationLatency() override {
    daemon::LatencyHistogram h;
    h.Observe(3'000'000);
    return h;
  }
  std::vector<std::pair<std::string, uint64_t>> AssistantCounters() override { return {{"answered", 1}}; }
  std::optional<api::RemediationCounters> Remediation() override { return api::RemediationCounters{}; }
};

TEST(ApiMetricsDocs, TheTableReadsAsNames) {
  const std::set<std::string> documented = DocumentedMetrics();
  EXPECT_GT(documented.size(), 60u);
  EXPECT_TRUE(documented.count("faultline_xid_events_total"));
  EXPECT_TRUE(documented.count("faultline_gpu_retired_pages_dbe"));  // second name of a row
}

TEST(ApiMetricsDocs, EveryEmittedMetricIsDocumentedAndEveryDocumentedOneEmitted) {
  TempDir dir;
  auto store = Store::Open(dir.File("store.db"));
  ASSERT_TRUE(store.ok());
  FillEverything(**store);
  LiveProvider provider(**store, {.node = kNode});
  auto text = api::RenderMetrics(provider);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const std::set<std::string> emitted = Emitted(*text);
  const std::set<std::string> documented = DocumentedMetrics();
  EXPECT_EQ(Minus(emitted, documented), "") << "emitted but not in docs/metrics.md";
  EXPECT_EQ(Minus(documented, emitted), "") << "in docs/metrics.md but never emitted";
}

TEST(ApiMetricsDocs, ServeEmitsEveryDocumentedMetricButTheLiveAgentOnes) {
  if (!std::filesystem::exists(std::string(FAULTLINE_BINARY_DIR) + "/faultline")) {
    GTEST_SKIP() << "faultline CLI not built";
  }
  TempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    FillEverything(**store);
  }
  FaultlineProcess serve({"serve", "--store", path, "--listen", "127.0.0.1:0"}, dir.File("serve.log"));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  httplib::Client client("127.0.0.1", serve.port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  const std::set<std::string> emitted = Emitted(metrics->body);
  const std::set<std::string> documented = DocumentedMetrics();
  EXPECT_EQ(Minus(emitted, documented), "") << "emitted but not in docs/metrics.md";
  EXPECT_EQ(Minus(documented, emitted), Minus(kLiveAgentOnly, {})) << "documented, missing from serve's scrape";
  EXPECT_EQ(serve.Stop(), 0);
}

}  // namespace
}  // namespace faultline::api_test
