// End-to-end: `faultline bench agent-days` as an operator runs it (issue 16). Short
// simulated runs only; the figures are checked for presence and for what the schedule
// implies (evaluations per point, retention runs, rows), never for speed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "run_faultline.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing_cli::Faultline;
using testing_cli::RunResult;

class CliBenchAgentDays : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/bench_days_cli." + std::to_string(getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The timeline's points: "  <hour>: <ms> ms, <n> evaluations, <k> isolator runs, <rows> rows, ...".
  struct Point {
    double hour = 0;
    long evaluations = 0, rows = 0;
  };
  static std::vector<Point> Timeline(const std::string& out) {
    std::vector<Point> points;
    const std::regex re(R"(\n  ([0-9.]+): [0-9]+ ms, ([0-9]+) evaluations, [0-9]+ isolator runs, ([0-9]+) rows, )");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it) {
      points.push_back({std::stod((*it)[1].str()), std::stol((*it)[2].str()), std::stol((*it)[3].str())});
    }
    return points;
  }

  std::string dir_;
};

TEST_F(CliBenchAgentDays, HelpTeachesWhatItMeasuresAndHow) {
  RunResult r = Faultline("bench agent-days --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"--hours", "--points", "--scenario", "agent_cpu_ms_per_simulated_hour", "store_mb_per_day",
                        "days_of_history", "bench agent-rest", "Exit codes"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

// Just over an hour at the production schedule: the agent evaluates on its 5 s interval
// (not after each of the kmsg source's 1 s polls), the store's retention runs once, and
// the store grows with the simulated job's step reports.
TEST_F(CliBenchAgentDays, AnHourAtTheProductionScheduleEvaluatesOnTheIntervalAndRunsRetention) {
  RunResult r = Faultline("bench agent-days --hours 1.2 --points 4 --workdir " + dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::vector<Point> points = Timeline(r.out);
  ASSERT_EQ(points.size(), 4u) << r.out;
  for (size_t i = 1; i < points.size(); ++i) {
    // 0.3 h = 1080 s: 216 evaluations on a 5 s interval; 1080 if every poll evaluated.
    EXPECT_GE(points[i].evaluations, 214) << r.out;
    EXPECT_LE(points[i].evaluations, 218) << r.out;
    EXPECT_GT(points[i].rows, points[i - 1].rows) << r.out;
  }
  EXPECT_NEAR(points.back().hour, 1.2, 0.01) << r.out;
  EXPECT_NE(r.out.find(", 1 retention runs)"), std::string::npos) << r.out;
  for (const char* f : {"agent_cpu_ms_per_simulated_hour: ", "store_rows_per_day: ", "store_mb_per_day: ",
                        "days_of_history: ", "final primary diagnosis: none"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;
  }
  // Its own directory under --workdir is removed afterwards; --workdir stays.
  EXPECT_TRUE(fs::exists(dir_));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CliBenchAgentDays, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(Faultline("bench agent-days --hours 0 --workdir " + dir_).exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-days --hours 169 --workdir " + dir_).exit_code, 2);  // a scenario is a week at most
  EXPECT_EQ(Faultline("bench agent-days --hours nan --workdir " + dir_).exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-days --points 0 --workdir " + dir_).exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-days --hours x").exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-days --scenario " + dir_ + "/absent.yaml").exit_code, 2);
}

}  // namespace
}  // namespace faultline
