// End-to-end: `faultline-sim sim fleet` and `bench fleet` as an operator runs them (what
// `faultline sim fleet` / `faultline bench fleet` exec).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/sanitizer.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

RunResult Sim(const std::string& args) {
  const std::string err_path = ::testing::TempDir() + "/sim_fleet_stderr." + std::to_string(getpid()) + ".txt";
  const std::string cmd = std::string(FAULTLINE_BINARY_DIR) + "/faultline-sim " + args + " 2>" + err_path;
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

std::string Scenario(const std::string& name) { return std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/fleet/" + name; }

class SimFleetCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sim_fleet_cli." + std::to_string(getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(SimFleetCli, CheckPrintsTheFleetAndWritesItsTopology) {
  RunResult r =
      Sim("sim fleet --check --scenario " + Scenario("pdu-sag-rack.yaml") + " --topology-out " + dir_ + "/topo.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("32 nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 shared cause(s)"), std::string::npos) << r.out;
  auto topo = nlohmann::json::parse(std::ifstream(dir_ + "/topo.json"), nullptr, false);
  ASSERT_FALSE(topo.is_discarded());
  EXPECT_EQ(topo["site"], "dc1");
  EXPECT_EQ(topo["nodes"].size(), 32u);
}

TEST_F(SimFleetCli, ARunPrintsTheDiagnosesAndTheVerdictAsJson) {
  RunResult r = Sim("sim fleet --json --scenario " + Scenario("straggler-gpu.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["scenario"], "fleet-straggler-gpu");
  EXPECT_EQ(j["nodes"], 32);
  EXPECT_GT(j["observations"].get<int>(), 1000);
  EXPECT_EQ(j["ingest"]["observations"], j["observations"]);
  ASSERT_EQ(j["score"]["stragglers"].size(), 1u);
  EXPECT_EQ(j["score"]["stragglers"][0]["node"], "r02-n03");
  EXPECT_TRUE(j["score"]["pass"].get<bool>()) << r.out;
}

TEST_F(SimFleetCli, BadInputIsAUsageErrorNamingThePlace) {
  std::ofstream(dir_ + "/bad.yaml") << "name: bad\nfleet: {racks: 2}\nfaults: [{at: 1, fault: pdu_sag, pdu: nope, "
                                       "value: 150}]\ntruth: {}\n";
  RunResult r = Sim("sim fleet --scenario " + dir_ + "/bad.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("faults[0].pdu: no such PDU 'nope'"), std::string::npos) << r.err;
  r = Sim("sim fleet --scenario " + dir_ + "/absent.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
  // The node simulator still wants its scenario.
  r = Sim("sim");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--scenario is required"), std::string::npos) << r.err;
}

TEST_F(SimFleetCli, BenchReportsEveryFigure) {
  // Under ASan without the pause fleets (a minute there; PauseFleet.* runs their code).
  const uint64_t pause_seeds = SweepSize(1, 0);
  RunResult r = Sim("bench fleet --nodes 64 --duration 600 --pause-seeds " + std::to_string(pause_seeds) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["nodes"], 64);
  EXPECT_GT(j["observations"].get<double>(), 0);
  EXPECT_GT(j["in_process"]["observations_per_s"].get<double>(), 0);
  EXPECT_EQ(j["evaluate_ms"]["n"], 600);
  EXPECT_EQ(j["stragglers"]["truth"], 5);  // at least five, whatever the size
  for (const char* k : {"precision", "recall", "f1"}) {
    EXPECT_GE(j["stragglers"][k].get<double>(), 0.0) << k;
    EXPECT_LE(j["stragglers"][k].get<double>(), 1.0) << k;
  }
  EXPECT_GT(j["peak_rss_mib"].get<double>(), 0);
  EXPECT_GT(j["analyzer_cpu_s"].get<double>(), 0);
  if (pause_seeds == 0) return;
  // Fleets with whole-job pauses and jitter: one healthy, one with three stragglers.
  const auto& p = j["pause_fleets"];
  EXPECT_EQ(p["seeds"], 1);
  EXPECT_EQ(p["nodes_per_fleet"], 128);
  EXPECT_EQ(p["healthy"]["fleets"], 1);
  EXPECT_EQ(p["stragglers"]["truth"], 3);
  for (const char* k : {"precision", "recall"}) {
    EXPECT_GE(p["stragglers"][k].get<double>(), 0.0) << k;
    EXPECT_LE(p["stragglers"][k].get<double>(), 1.0) << k;
  }
  EXPECT_EQ(Sim("bench fleet --nodes 3").exit_code, 2);  // below the smallest fleet
}

}  // namespace
}  // namespace faultline
