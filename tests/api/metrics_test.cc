// /metrics: the exposition parsed back by the project's own Prometheus parser
// (parse/prometheus.h), checked for names, types, labels, escaping and the caps.
#include "api/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>

#include "api_fixture.h"
#include "parse/prometheus.h"

namespace faultline::api_test {
namespace {

const PromSample* Find(const PromScrape& s, std::string_view name,
                       std::vector<std::pair<std::string, std::string>> labels) {
  for (const PromSample& x : s.samples) {
    if (x.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : labels) {
      const std::string* got = x.Label(k);
      all = all && got != nullptr && *got == v;
    }
    if (all) return &x;
  }
  return nullptr;
}

class ApiMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(dir_.File("store.db"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
    FillIncident(*store_);
  }
  PromScrape Scrape(const api::MetricsOptions& options = {}, api::MetricsStats* stats = nullptr) {
    api::StoreProvider provider(*store_, {.node = kNode});
    auto text = api::RenderMetrics(provider, options, stats);
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    text_ = text.ok() ? *text : "";
    auto parsed = ParsePrometheusText(text_);
    EXPECT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->error_count, 0u) << (parsed->errors.empty() ? "" : parsed->errors[0].reason) << "\n" << text_;
    return parsed.ok() ? *parsed : PromScrape{};
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::string text_;
};

TEST_F(ApiMetrics, LatestReadingOfEachSeries) {
  PromScrape s = Scrape();
  const auto uuid3 = Gpu(3).keys.at("uuid");
  const PromSample* sbe = Find(s, "faultline_gpu_ecc_sbe_errors_total", {{"gpu", "3"}, {"uuid", uuid3}});
  ASSERT_NE(sbe, nullptr) << text_;
  EXPECT_EQ(sbe->value, 42);  // the newest of 40, 41, 42; never the per-location 999
  EXPECT_EQ(*sbe->Label("node"), kNode);
  EXPECT_EQ(*sbe->Label("component"), "gpu/3");
  EXPECT_EQ(s.metadata.at("faultline_gpu_ecc_sbe_errors_total").type, "counter");
  EXPECT_EQ(Find(s, "faultline_gpu_ecc_dbe_errors_total", {{"gpu", "3"}})->value, 1);
  size_t sbe_series = 0;
  for (const auto& x : s.samples) sbe_series += x.name == "faultline_gpu_ecc_sbe_errors_total";
  EXPECT_EQ(sbe_series, 8u);  // one per GPU, newest reading only

  EXPECT_EQ(Find(s, "faultline_psu_input_volts", {{"component", "psu/1"}})->value, 187.25);
  EXPECT_EQ(Find(s, "faultline_psu_health", {{"component", "psu/1"}})->value, 1);
  EXPECT_EQ(Find(s, "faultline_nvlink_crc_flit_errors_total", {{"gpu", "3"}, {"port", "11"}})->value, 14);
  EXPECT_EQ(Find(s, "faultline_ib_port_state", {{"component", "ib/mlx5_0/1"}, {"port", "1"}})->value, 4);
  EXPECT_EQ(Find(s, "faultline_fan_speed_rpm", {{"component", "fan/fan1"}})->value, 9800);
  EXPECT_EQ(Find(s, "faultline_gpu_temperature_celsius", {{"gpu", "7"}})->value, 68);
}

TEST_F(ApiMetrics, ClockEventReasonsOneSeriesPerBit) {
  PromScrape s = Scrape();
  // 0x88 = hw_slowdown (0x8) + hw_power_brake_slowdown (0x80).
  EXPECT_EQ(
      Find(s, "faultline_gpu_clock_event_reason", {{"gpu", "2"}, {"reason", "hw_slowdown"}, {"bit", "0x8"}})->value, 1);
  EXPECT_EQ(Find(s, "faultline_gpu_clock_event_reason", {{"gpu", "2"}, {"reason", "hw_power_brake_slowdown"}})->value,
            1);
  EXPECT_EQ(Find(s, "faultline_gpu_clock_event_reason", {{"gpu", "2"}, {"reason", "sw_power_cap"}})->value, 0);
  size_t per_gpu = 0;
  for (const auto& x : s.samples) {
    per_gpu += x.name == "faultline_gpu_clock_event_reason" && *x.Label("gpu") == "2";
  }
  EXPECT_EQ(per_gpu, api::ClockReasonBits().size());
}

TEST_F(ApiMetrics, DiagnosisInfoAndHousekeeping) {
  PromScrape s = Scrape();
  const PromSample* info = Find(s, "faultline_diagnosis_info", {});
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(*info->Label("class"), "gpu_fell_off_bus");
  EXPECT_EQ(*info->Label("component"), "gpu/3");
  EXPECT_EQ(*info->Label("action"), "reset_gpu");
  EXPECT_EQ(*info->Label("severity"), "critical");
  EXPECT_EQ(info->value, 1);
  EXPECT_EQ(Find(s, "faultline_diagnosis_active", {})->value, 1);
  EXPECT_EQ(Find(s, "faultline_source_last_success_timestamp_seconds", {{"source", "kmsg"}})->value,
            static_cast<double>(kT0 + 61 * kSec) / 1e9);
  EXPECT_GT(Find(s, "faultline_store_size_bytes", {})->value, 0);
  EXPECT_GT(Find(s, "faultline_process_resident_memory_bytes", {})->value, 0);
  EXPECT_GE(Find(s, "faultline_process_cpu_seconds_total", {})->value, 0);
}

TEST_F(ApiMetrics, AgentBlindFromTheRecordedState) {
  PromScrape s = Scrape();
  ASSERT_NE(Find(s, "faultline_agent_blind", {{"node", kNode}}), nullptr) << text_;
  EXPECT_EQ(Find(s, "faultline_agent_blind", {})->value, 0);  // nothing recorded: never blind
  EXPECT_EQ(Find(s, "faultline_agent_blind_since_timestamp_seconds", {}), nullptr);
  AgentState blind;
  blind.blind = true;
  blind.since_ns = kT0 + 90 * kSec;
  blind.sources = {{.source = "nvml", .failing = true, .error = "unavailable: NVML_ERROR_DRIVER_NOT_LOADED"}};
  ASSERT_TRUE(PutAgentState(*store_, kNode, blind).ok());
  s = Scrape();
  EXPECT_EQ(Find(s, "faultline_agent_blind", {})->value, 1);
  EXPECT_EQ(Find(s, "faultline_agent_blind_since_timestamp_seconds", {})->value,
            static_cast<double>(kT0 + 90 * kSec) / 1e9);
  EXPECT_EQ(Find(s, "faultline_remediation_decisions_total", {}), nullptr);  // a stored run has no worker
  ASSERT_TRUE(store_->PutCursors({{kNode, "agent", "state", "{"}}).ok());    // garbled: unknown, not 0
  s = Scrape();
  EXPECT_TRUE(std::isnan(Find(s, "faultline_agent_blind", {})->value)) << text_;
}

TEST_F(ApiMetrics, LabelValuesEscapedAndUnrepresentableOnesCounted) {
  api::MetricsStats stats;
  PromScrape s = Scrape({}, &stats);
  // The parser undoes the escapes: the value is the component id as stored.
  const PromSample* inlet =
      Find(s, "faultline_inlet_temperature_celsius", {{"component", "sensor/inlet \"front\"\\1"}});
  ASSERT_NE(inlet, nullptr) << text_;
  EXPECT_NE(text_.find(R"(component="sensor/inlet \"front\"\\1")"), std::string::npos);
  // The newline name has no series, and is counted.
  for (const auto& x : s.samples) {
    if (const std::string* c = x.Label("component")) {
      EXPECT_EQ(c->find('\n'), std::string::npos) << *c;
    }
  }
  EXPECT_GE(stats.dropped, 1u);
  EXPECT_EQ(Find(s, "faultline_metrics_series_dropped", {})->value, static_cast<double>(stats.dropped));
}

TEST_F(ApiMetrics, NamesFollowTheConventions) {
  PromScrape s = Scrape();
  const std::regex name("faultline_[a-z0-9_]+");
  const std::set<std::string> allowed_labels{"node", "component", "gpu",    "uuid",     "port",   "reason",
                                             "bit",  "class",     "action", "severity", "source", "xid"};
  for (const auto& [metric, meta] : s.metadata) {
    EXPECT_TRUE(std::regex_match(metric, name)) << metric;
    EXPECT_FALSE(meta.help.empty()) << metric;
    const bool total = metric.size() > 6 && metric.substr(metric.size() - 6) == "_total";
    EXPECT_EQ(meta.type == "counter", total) << metric << " " << meta.type;
  }
  for (const auto& x : s.samples) {
    EXPECT_TRUE(s.metadata.count(x.name)) << x.name;
    for (const auto& [k, v] : x.labels) EXPECT_TRUE(allowed_labels.count(k)) << x.name << " " << k;
  }
  // Every table row names a conventional metric too (even those this incident lacks).
  for (const auto& spec : api::ObservationMetrics()) {
    const std::string n(spec.name);
    EXPECT_TRUE(std::regex_match(n, name)) << n;
    EXPECT_EQ(spec.type == "counter", n.substr(n.size() - 6) == "_total") << n;
  }
}

TEST_F(ApiMetrics, SeriesCapAndWindow) {
  api::MetricsStats stats;
  PromScrape capped = Scrape({.max_series = 10}, &stats);
  EXPECT_EQ(stats.series, 10u);
  EXPECT_NE(Find(capped, "faultline_diagnosis_info", {}), nullptr);  // the cap cuts readings, not the diagnosis
  EXPECT_GT(stats.dropped, 10u);
  EXPECT_EQ(Find(capped, "faultline_metrics_series_dropped", {})->value, static_cast<double>(stats.dropped));
  // A window that ends before the last sample's readings keeps nothing older than it.
  PromScrape narrow = Scrape({.window_ns = kSec / 2});
  EXPECT_EQ(Find(narrow, "faultline_gpu_ecc_sbe_errors_total", {}), nullptr);  // last sample at +60 s, now = +61 s
  EXPECT_NE(Find(narrow, "faultline_diagnosis_info", {}), nullptr);
}

TEST_F(ApiMetrics, EveryTableRowYieldsItsMetric) {
  FillEveryMetric(*store_);
  PromScrape s = Scrape();
  for (const api::MetricSpec& spec : api::ObservationMetrics()) {
    EXPECT_NE(Find(s, spec.name, {}), nullptr) << spec.name;
  }
  // Values arrive scaled to the unit in the name.
  EXPECT_EQ(Find(s, "faultline_ib_port_rate_bytes_per_second", {{"port", "1"}})->value, 1e9 / 8);
  EXPECT_EQ(Find(s, "faultline_pcie_link_max_width_lanes", {{"component", "gpu/9"}})->value, 16);
  EXPECT_EQ(Find(s, "faultline_gpu_sm_clock_hertz", {{"gpu", "9"}})->value, 1e6);
}

TEST(ApiMetricsEscape, Escapes) {
  EXPECT_EQ(api::EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(api::EscapeLabelValue("plain/0000:3b:00.0"), "plain/0000:3b:00.0");
}

}  // namespace
}  // namespace faultline::api_test
