#include "sources/workload/report.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1764410400LL * kNsPerSec;  // 2025-11-29T10:00:00Z

TEST(WorkloadReportTest, ParsesJsonReport) {
  auto r = ParseWorkloadReport(R"({"node":"gpu-node-07","job":"llama-70b","rank":3,"local_rank":3,"step":1200,)"
                               R"("step_time_s":1.25,"time":"2025-11-29T10:00:00Z","loss":2.31})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->node, "gpu-node-07");
  EXPECT_EQ(r->job, "llama-70b");
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->local_rank, 3);
  EXPECT_EQ(r->step, 1200);
  EXPECT_EQ(r->step_time_s, 1.25);
  EXPECT_FALSE(r->samples_per_s.has_value());
  EXPECT_EQ(r->time_ns, kT0);
}

TEST(WorkloadReportTest, ParsesKeyValueReportWithUnixTime) {
  auto r = ParseWorkloadReport("  node=gpu-node-07\tjob=bert rank=0 step=7 samples_per_s=812.5 time=1764410400.5 \r");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->job, "bert");
  EXPECT_EQ(r->samples_per_s, 812.5);
  EXPECT_EQ(r->time_ns, kT0 + 500 * kNsPerMs);
  EXPECT_FALSE(r->local_rank.has_value());
}

TEST(WorkloadReportTest, NumbersAsStringsAreAccepted) {
  auto r = ParseWorkloadReport(R"({"job":"j","rank":"5","step_time_s":"0.5"})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rank, 5);
  EXPECT_EQ(r->step_time_s, 0.5);
}

TEST(WorkloadReportTest, ObservationsCarryJobRankStepAndGpu) {
  WorkloadReport r{"", "llama", 11, 3, 1200, 1.25, 800.0, std::nullopt};
  auto obs = WorkloadObservations(r, "raw line", "gpu-node-07", kT0);
  ASSERT_EQ(obs.size(), 2u);
  const Observation& st = obs[0];
  EXPECT_EQ(st.kind, ObsKind::kStepTime);
  EXPECT_EQ(st.layer, Layer::kWorkload);
  EXPECT_EQ(st.source, Source::kWorkload);
  EXPECT_EQ(st.node, "gpu-node-07");
  EXPECT_EQ(st.component.Id(), "gpu/3");
  EXPECT_EQ(st.time_ns, kT0);
  EXPECT_EQ(st.value, 1.25);
  EXPECT_EQ(st.seq, 1200u);
  EXPECT_EQ(st.raw, "raw line");
  EXPECT_EQ(st.attrs.at("job"), "llama");
  EXPECT_EQ(st.attrs.at("rank"), "11");
  EXPECT_EQ(st.attrs.at("step"), "1200");
  EXPECT_EQ(st.attrs.at("time_source"), "received");
  EXPECT_EQ(obs[1].kind, ObsKind::kThroughput);
  EXPECT_EQ(obs[1].value, 800.0);

  r.local_rank.reset();
  r.node = "other-node";
  r.time_ns = kT0 - kNsPerSec;
  auto host = WorkloadObservations(r, "", "gpu-node-07", kT0);
  EXPECT_EQ(host[0].component, HostComponent());
  EXPECT_EQ(host[0].node, "other-node");
  EXPECT_EQ(host[0].time_ns, kT0 - kNsPerSec);
  EXPECT_EQ(host[0].attrs.at("time_source"), "reported");
}

// Bad input: each must be a clear kCorrupt, never a crash or a guess.
struct BadCase {
  const char* name;
  std::string line;
  const char* expect_in_message;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class WorkloadReportBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(WorkloadReportBadInputTest, IsRejectedWithAReason) {
  auto r = ParseWorkloadReport(GetParam().line);
  ASSERT_FALSE(r.ok()) << GetParam().name;
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find(GetParam().expect_in_message), std::string::npos) << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WorkloadReportBadInputTest,
    ::testing::Values(
        BadCase{"empty", "   ", "empty"},
        BadCase{"truncated json", R"({"job":"j","step_time_s":1.2)", "malformed JSON"},
        BadCase{"truncated kv", "job=j step_time_s=", "step_time_s"},
        BadCase{"no metric", R"({"job":"j","step":3})", "needs step_time_s"},
        BadCase{"no job", "step_time_s=1.0", "missing job"},
        BadCase{"negative step time", R"({"job":"j","step_time_s":-1})", "step_time_s"},
        BadCase{"zero throughput", "job=j samples_per_s=0", "samples_per_s"},
        BadCase{"nan", "job=j step_time_s=nan", "step_time_s"},
        BadCase{"infinite", "job=j step_time_s=inf", "step_time_s"},
        BadCase{"huge exponent", R"({"job":"j","step_time_s":1e400})", "malformed JSON"},
        BadCase{"fractional rank", R"({"job":"j","rank":1.5,"step_time_s":1})", "rank"},
        BadCase{"negative rank", "job=j rank=-1 step_time_s=1", "rank"},
        BadCase{"local rank out of range", "job=j local_rank=4096 step_time_s=1", "local_rank"},
        BadCase{"step overflow", "job=j step=99999999999999999999 step_time_s=1", "step"},
        BadCase{"array", R"([{"job":"j","step_time_s":1}])", "nested"},
        BadCase{"nested object", R"({"job":{"name":"j"},"step_time_s":1})", "nested"},
        BadCase{"deep nesting", std::string(5000, '['), "nested"},
        BadCase{"bool field", R"({"job":true,"step_time_s":1})", "string or number"},
        BadCase{"not an object", R"("job")", "key=value"},
        BadCase{"control chars in job", "{\"job\":\"a\\u001b[2Jb\",\"step_time_s\":1}", "control character"},
        BadCase{"long job", "job=" + std::string(1000, 'x') + " step_time_s=1", "longer than"},
        BadCase{"oversized line", "job=j step_time_s=1 pad=" + std::string(70000, 'x'), "line longer"},
        BadCase{"token without =", "job=j garbage step_time_s=1", "key=value"},
        BadCase{"placeholder time", R"({"job":"j","step_time_s":1,"time":"0000-00-00T00:00:00"})", "time"},
        BadCase{"time in far future", "job=j step_time_s=1 time=99999999999", "time"},
        BadCase{"binary", std::string("\x00\xff\xfe{", 4), "key=value"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string n = info.param.name;
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

}  // namespace
}  // namespace faultline
