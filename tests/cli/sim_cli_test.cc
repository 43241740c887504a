// End-to-end: `faultline sim` and `faultline bench accuracy` as an operator runs them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

TEST_F(CliSimTest, HelpTeachesBothModes) {
  RunResult r = Faultline("sim --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--agent"), std::string::npos);
  EXPECT_NE(r.out.find("--speed"), std::string::npos);
  EXPECT_NE(r.out.find("docs/scenarios.md"), std::string::npos);
}

}  // namespace
}  // namespace faultline
