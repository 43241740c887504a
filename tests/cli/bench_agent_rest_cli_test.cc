// End-to-end: `faultline bench agent-rest` as an operator runs it (issue 16). Short runs
// only; the figures it prints are checked for presence and sanity, never for speed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "run_faultline.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing_cli::Faultline;
using testing_cli::RunResult;

class CliBenchAgentRest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/bench_rest_cli." + std::to_string(getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The value of a "name: value" line (first number after the colon), or -1.
  static double Field(const std::string& out, const std::string& name) {
    std::smatch m;
    const std::regex re("(^|\n)" + name + ": ([-+0-9.]+)");
    return std::regex_search(out, m, re) ? std::stod(m[2].str()) : -1;
  }

  // The start value of a "name: start X end Y max Z" line, or -1.
  static double Start(const std::string& out, const std::string& name) {
    std::smatch m;
    const std::regex re("(^|\n)" + name + ": start ([0-9.]+) ");
    return std::regex_search(out, m, re) ? std::stod(m[2].str()) : -1;
  }

  std::string dir_;
};

TEST_F(CliBenchAgentRest, HelpTeachesWhatItMeasuresAndHow) {
  RunResult r = Faultline("bench agent-rest --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"--seconds", "--faults", "--gpus-lost", "--kernel-log", "--warmup", "cpu_percent_of_one_core",
                        "pss_mib", "fault_to_diagnosis_ms", "gpu_lost_to_diagnosis_ms", "--bmc-pushes",
                        "bmc_push_to_diagnosis_ms", "gen_kernel_log.py",
                        "Exit codes"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

TEST_F(CliBenchAgentRest, AShortRunWithTheSimulatedNodePrintsEveryFigure) {
  // The workload drained every second (what-if; the default is 5 s) so that the 2 s rest
  // sees the simulated job's step reports stored.
  RunResult r = Faultline("bench agent-rest --seconds 2 --warmup 2 --faults 5 --workload-interval 1 --workdir " + dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* f : {"cpu_percent_of_one_core", "cpu_percent_agent_threads", "rss_mib", "pss_mib", "uss_mib",
                        "anonymous_mib", "store_rows_per_hour", "store_bytes_per_hour",
                        "findings_written_without_new_input", "evaluations_at_rest", "isolator_runs_at_rest",
                        "fault_to_diagnosis_ms"}) {
    EXPECT_NE(r.out.find(std::string("\n") + f + ": "), std::string::npos) << f << "\n" << r.out;
  }
  EXPECT_GE(Field(r.out, "cpu_percent_of_one_core"), 0);
  // Memory is read from smaps_rollup: a running agent has some, and PSS never exceeds RSS.
  EXPECT_GT(Start(r.out, "rss_mib"), 1) << r.out;
  EXPECT_GT(Start(r.out, "pss_mib"), 1) << r.out;
  EXPECT_LE(Start(r.out, "pss_mib"), Start(r.out, "rss_mib")) << r.out;
  // The agent's own pages: PSS is USS plus a share of the shared ones.
  EXPECT_GT(Start(r.out, "uss_mib"), 1) << r.out;
  EXPECT_LE(Start(r.out, "uss_mib"), Start(r.out, "pss_mib")) << r.out;
  EXPECT_GE(Field(r.out, "cpu_percent_agent_threads"), 0) << r.out;
  EXPECT_NE(r.out.find("faults 5, measured 5, missed 0"), std::string::npos) << r.out;
  // The workload source reached the node: the store gained rows at rest.
  EXPECT_GT(Field(r.out, "store_rows_per_hour"), 0) << r.out;
  EXPECT_NE(r.out.find("what-if intervals (evaluate 5.0 s, workload 1.0 s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ntimeline (s at rest"), std::string::npos) << r.out;
  // Its own directory under --workdir is removed afterwards; --workdir stays.
  EXPECT_TRUE(fs::exists(dir_));
  EXPECT_TRUE(fs::is_empty(dir_));
}

// GPUs lost as NVML alone says it (no kernel line reaches this agent): each loss is
// diagnosed through the NVML source's event wait, and the bench says so for every one.
TEST_F(CliBenchAgentRest, GpusLostThroughNvmlAreEachDiagnosed) {
  RunResult r = Faultline("bench agent-rest --seconds 1 --warmup 2 --gpus-lost 3 --workdir " + dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu_lost_to_diagnosis_ms: losses 3, measured 3, missed 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu_lost_to_diagnosis_ms_each: "), std::string::npos) << r.out;
}

// PSU failures that only the BMC's SSE push reports (the next Redfish sweep is 60 s away,
// past the bench's 10 s wait): each is diagnosed only because the pushed event reaches
// the pipeline at once and, being critical, wakes the evaluation.
TEST_F(CliBenchAgentRest, PsuFailuresPushedByTheBmcAreEachDiagnosed) {
  RunResult r = Faultline("bench agent-rest --seconds 1 --warmup 3 --bmc-pushes 2 --workdir " + dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("bmc_push_to_diagnosis_ms: pushes 2, measured 2, missed 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bmc_push_to_diagnosis_ms_each: "), std::string::npos) << r.out;
}

TEST_F(CliBenchAgentRest, KernelLogHistoryModeReadsTheLogFirst) {
  const std::string log = dir_ + "/history.log";
  {
    std::ofstream out(log);
    for (int i = 0; i < 300; ++i) {
      out << "Mar  1 09:" << 10 + i / 60 << ":" << (10 + i % 50)
          << " gpu-node-07 kernel: NVRM: Xid (PCI:0000:" << (i % 2 ? "3b" : "b5") << ":00): 13, pid=" << 1000 + i
          << ", name=job" << i % 9 << ", Graphics SM Warp Exception on (GPC " << i % 7 << ", TPC " << i % 5
          << ", SM 0): Out Of Range Address\n";
      out << "Mar  1 09:" << 10 + i / 60 << ":" << (10 + i % 50) << " gpu-node-07 kernel: eth0: link becomes ready\n";
    }
  }
  // The warm-up outlasts the first timed evaluation (5 s), which stores the history's findings.
  RunResult r =
      Faultline("bench agent-rest --no-sim --seconds 2 --warmup 7 --kernel-log " + log + " --workdir " + dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("history: "), std::string::npos) << r.out;
  // The history is old news by the rest phase: nothing is written again.
  EXPECT_EQ(Field(r.out, "findings_written_without_new_input"), 0) << r.out;
  EXPECT_EQ(Field(r.out, "diagnoses_written_without_new_input"), 0) << r.out;
}

TEST_F(CliBenchAgentRest, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(Faultline("bench agent-rest --seconds 0 --no-sim --workdir " + dir_).exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-rest --kernel-log " + dir_ + "/absent.log").exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-rest --seconds x").exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-rest --gpus-lost 9 --workdir " + dir_).exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-rest --no-sim --gpus-lost 1 --workdir " + dir_).exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-rest --bmc-pushes 7 --workdir " + dir_).exit_code, 2);  // the node has 6 PSUs
  EXPECT_EQ(Faultline("bench agent-rest --bmc-pushes -1 --workdir " + dir_).exit_code, 2);
  EXPECT_EQ(Faultline("bench agent-rest --no-sim --bmc-pushes 1 --workdir " + dir_).exit_code, 2);
  // A node without a BMC: nothing would push, so nothing could be measured or missed.
  EXPECT_EQ(Faultline("bench agent-rest --bmc-pushes 1 --scenario " + std::string(FAULTLINE_SOURCE_DIR) +
                      "/scenarios/thermal-bmc-blind.yaml --workdir " + dir_)
                .exit_code,
            2);
}

}  // namespace
}  // namespace faultline
