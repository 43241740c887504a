// End-to-end: `faultline sim` and `faultline bench accuracy` as an operator runs them.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/json.h"
#include "run_faultline.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing_cli::Faultline;
using testing_cli::RunResult;

std::string Scenario(const std::string& name) { return std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/" + name; }

class CliSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sim_cli." + std::to_string(getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CliSimTest, CheckPrintsWhatWillBeSimulated) {
  RunResult r = Faultline("sim --check --scenario " + Scenario("psu-degrade-then-fail.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("truth: power_supply psu/PSU4 -> rma"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("psu_degrade until"), std::string::npos) << r.out;
}

TEST_F(CliSimTest, BadScenarioIsAUsageErrorNamingThePlace) {
  const std::string bad = dir_ + "/bad.yaml";
  std::ofstream(bad) << "name: x\ntruth: {fault_class: none}\nfaults: [{at: 5, fault: dbe, gpu: 11}]\n";
  RunResult r = Faultline("sim --check --scenario " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("faults[0].gpu"), std::string::npos) << r.err;
  r = Faultline("sim --check --scenario " + dir_ + "/absent.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("absent.yaml"), std::string::npos) << r.err;
}

TEST_F(CliSimTest, AgentRunPrintsTheVerdictAsJson) {
  RunResult r = Faultline("sim --json --agent --duration 200 --workdir " + dir_ + "/w --scenario " +
                          Scenario("psu-fail-redundancy-holds.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["final"]["fault_class"], "power_supply");
  EXPECT_EQ(j["final"]["component"]["id"], "psu/PSU3");
  EXPECT_TRUE(j["correct_class"].get<bool>());
  EXPECT_TRUE(j["correct_component"].get<bool>());
  EXPECT_TRUE(j["wrong_hardware_actions"].empty());
  EXPECT_FALSE(fs::exists(dir_ + "/w"));  // cleaned up without --keep
}

TEST_F(CliSimTest, DemoPrintsTheCauseTheChainAndWhatWasRuledOut) {
  // What `make demo` runs (shortened): the human report an operator reads.
  RunResult r = Faultline("sim --agent --duration 260 --workdir " + dir_ + "/d --scenario " +
                          Scenario("demo-psu-degrading-power-brake.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1. power_supply  [oob]  psu/PSU2"), std::string::npos) << r.out;
  // Evidence from three layers, readable: the SEL message, whose reading, the slow steps.
  EXPECT_NE(r.out.find("redfish  Power Supply PSU2 predictive failure [Power.1.0.PowerSupplyPredictiveFailure]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("nvml  gpu/0: clocks_event_reasons=0x88"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("explains: gpu_power_brake on gpu/7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("explains: slow steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ruled out:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fabric: no fault in the fabric layer"), std::string::npos) << r.out;
  // The user's XID 13 is reported, as the program's.
  EXPECT_NE(r.out.find("user_application  [os]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict: CORRECT"), std::string::npos) << r.out;
}

TEST_F(CliSimTest, AccuracyBenchScoresADirectory) {
  // Two short scenarios: a decoy and a fault, shortened so the test stays quick.
  for (const char* name : {"healthy-node.yaml", "gpu7-fell-off-bus.yaml"}) {
    fs::copy_file(Scenario(name), dir_ + "/" + name);
  }
  std::ofstream(dir_ + "/notes.txt") << "not a scenario: ignored\n";
  RunResult r = Faultline("bench accuracy --json --scenarios " + dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["scenarios"], 2);
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["macro_f1"].get<double>(), 1.0);
  EXPECT_EQ(j["wrong_hardware_actions"], 0);
  EXPECT_EQ(j["confusion"]["gpu_fell_off_bus"]["gpu_fell_off_bus"], 1);
  EXPECT_EQ(j["time_to_diagnosis_s"]["diagnosed"], 2);
}

TEST_F(CliSimTest, AccuracyBenchRefusesAnEmptyOrMissingDirectory) {
  EXPECT_EQ(Faultline("bench accuracy --scenarios " + dir_).exit_code, 2);
  EXPECT_EQ(Faultline("bench accuracy --scenarios " + dir_ + "/nope").exit_code, 2);
}

// Every entry directly under `dir`, by name.
std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST_F(CliSimTest, AnExistingWorkdirAndTheUsersFilesSurviveTheRun) {
  const std::string mine = dir_ + "/mine";
  fs::create_directories(mine + "/healthy-node");
  std::ofstream(mine + "/user.txt") << "keep me\n";
  std::ofstream(mine + "/healthy-node/kmsg.log") << "the user's own file, named like the simulator's\n";
  const std::set<std::string> before = Entries(mine);
  RunResult r =
      Faultline("sim --json --agent --duration 20 --workdir " + mine + " --scenario " + Scenario("healthy-node.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Entries(mine), before);
  EXPECT_EQ(testing_cli::Slurp(mine + "/user.txt"), "keep me\n");
  EXPECT_EQ(testing_cli::Slurp(mine + "/healthy-node/kmsg.log"), "the user's own file, named like the simulator's\n");
  // The same for the accuracy bench.
  fs::create_directories(dir_ + "/set");
  fs::copy_file(Scenario("healthy-node.yaml"), dir_ + "/set/healthy-node.yaml");
  r = Faultline("bench accuracy --json --workdir " + mine + " --scenarios " + dir_ + "/set");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Entries(mine), before);
}

TEST_F(CliSimTest, AHostileScenarioNameIsAUsageErrorAndTouchesNothing) {
  fs::create_directories(dir_ + "/victim");
  std::ofstream(dir_ + "/victim/keep.txt") << "x\n";
  fs::create_directories(dir_ + "/work");
  for (const std::string name : {"../victim", "..", "/tmp", "a/b"}) {
    const std::string file = dir_ + "/hostile.yaml";
    std::ofstream(file) << "name: '" << name << "'\nduration_s: 20\ntruth: {fault_class: none}\n";
    RunResult r = Faultline("sim --agent --workdir " + dir_ + "/work --scenario " + file);
    EXPECT_EQ(r.exit_code, 2) << name;
    EXPECT_NE(r.err.find("scenario.name: not a plain file name"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(fs::exists(dir_ + "/victim/keep.txt"));
  EXPECT_TRUE(Entries(dir_ + "/work").empty());
}

TEST_F(CliSimTest, KeepReportsWhereTheFilesAre) {
  RunResult r = Faultline("sim --json --agent --keep --duration 10 --workdir " + dir_ + "/k --scenario " +
                          Scenario("healthy-node.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  ASSERT_TRUE(j.contains("workdir")) << r.out;
  const std::string kept = j["workdir"].get<std::string>();
  EXPECT_EQ(fs::path(kept).parent_path(), fs::path(dir_ + "/k"));
  EXPECT_TRUE(fs::exists(kept + "/kmsg.log"));
}

// Runs `binary args` with stderr folded into the output.
RunResult RunAt(const std::string& binary, const std::string& args) {
  RunResult r;
  FILE* p = popen((binary + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST_F(CliSimTest, TheProductionBinaryCarriesNoTestDoubles) {
  // faultline installed alone (a -DFAULTLINE_WITH_SIM=OFF package): the agent's commands
  // work, the simulator's commands say what is missing.
  const std::string bin = dir_ + "/bin";
  fs::create_directories(bin);
  fs::copy_file(std::string(FAULTLINE_BINARY_DIR) + "/faultline", bin + "/faultline");
  fs::permissions(bin + "/faultline", fs::perms::owner_exec, fs::perm_options::add);
  RunResult help = RunAt(bin + "/faultline", "--help");
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_NE(help.out.find("agent"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("diagnose"), std::string::npos) << help.out;
  for (const char* cmd : {"sim --scenario x.yaml", "mock-bmc --mockup m", "bench accuracy --scenarios s",
                          "bench redfish-sweep --mockup m", "sim --help"}) {
    RunResult r = RunAt(bin + "/faultline", cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("the simulator is not installed"), std::string::npos) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("faultline-sim"), std::string::npos) << r.out;
  }
  EXPECT_EQ(RunAt(bin + "/faultline", "diagnose --help").exit_code, 0);
  // No code of the simulator's namespace (faultline::sim) is in the binary. The symbol
  // table is there in this build (the daemon's namespace shows), so absence means it.
  const std::string image = testing_cli::Slurp(bin + "/faultline");
  if (image.find("N9faultline6daemon") == std::string::npos) GTEST_SKIP() << "stripped binary";
  EXPECT_EQ(image.find("N9faultline3sim"), std::string::npos);
  EXPECT_EQ(image.find("MockBmc"), std::string::npos);
}

TEST_F(CliSimTest, TheSimulatorsCommandsReachFaultlineSim) {
  for (const char* cmd : {"mock-bmc --help", "bench redfish-sweep --help", "bench accuracy --help"}) {
    RunResult r = Faultline(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find("Usage: faultline"), std::string::npos) << r.out;
  }
  EXPECT_NE(Faultline("mock-bmc --help").out.find("--mockup"), std::string::npos);
  RunResult bad = Faultline("sim --scenario x.yaml --no-such-option");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--no-such-option"), std::string::npos) << bad.err;
}

TEST_F(CliSimTest, HelpTeachesBothModes) {
  RunResult r = Faultline("sim --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--agent"), std::string::npos);
  EXPECT_NE(r.out.find("--speed"), std::string::npos);
  EXPECT_NE(r.out.find("docs/scenarios.md"), std::string::npos);
}

}  // namespace
}  // namespace faultline
