// `faultline check --slurm --json` through the real binary (issue 26): the same fields as
// the one line Slurm logs, in every state (ok, drain, unknown), with the same exit codes.
// Without --apply no Slurm command runs, so no Slurm is needed.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/clock.h"
#include "core/json.h"
#include "run_faultline.h"
#include "store/store.h"

namespace faultline {
namespace {

constexpr int64_t kSec = 1'000'000'000;

class CliCheckJson : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/check_json_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/faultline.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Store> Open() {
    auto store = Store::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }
  // The agent heard from a source `age_s` ago.
  void Heard(int64_t age_s) {
    Observation o;
    o.time_ns = SystemClock().NowNs() - age_s * kSec;
    o.node = "gpu-7";
    o.layer = Layer::kGpu;
    o.component = GpuComponent("1");
    o.text = "heard " + std::to_string(age_s);
    ASSERT_TRUE(Open()->Append({o}).ok());
  }
  int64_t Diagnose(FaultClass c, Action a) {
    Diagnosis d;
    d.fault_class = c;
    d.action = a;
    d.layer = Layer::kGpu;
    d.component = GpuComponent("2");
    d.severity = Severity::kCritical;
    d.confidence = 0.9;
    d.first_ns = SystemClock().NowNs() - 60 * kSec;
    d.last_ns = d.first_ns;
    d.summary = "test diagnosis";
    auto id = Open()->PutDiagnosis("gpu-7", d, d.last_ns);
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : 0;
  }
  // Runs the check with and without --json; the object must say what the line says.
  Json Check(int expected_exit) {
    const std::string args = "check --slurm --store " + path_ + " --slurm-node gpu-7";
    const auto line = testing_cli::Faultline(args);
    const auto json = testing_cli::Faultline(args + " --json");
    EXPECT_EQ(line.exit_code, expected_exit) << line.out << line.err;
    EXPECT_EQ(json.exit_code, expected_exit) << json.out << json.err;
    Json j = Json::parse(json.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << json.out;
    if (!j.is_object()) return Json::object();
    EXPECT_EQ(j.value("exit_code", -1), expected_exit);
    EXPECT_EQ(j.value("slurm_node", ""), "gpu-7");
    EXPECT_EQ(line.out,
              "faultline: " + j.value("status", "") + ": " + j.value("node", "") + ": " + j.value("detail", "") + "\n");
    return j;
  }
  std::string dir_;
  std::string path_;
};

TEST_F(CliCheckJson, NoStoreIsUnknown) {
  Json j = Check(3);
  EXPECT_EQ(j["status"], "unknown");
  EXPECT_EQ(j["node"], "gpu-7");
  EXPECT_EQ(j["detail"], "no store at " + path_);
  EXPECT_TRUE(j["diagnosis"].is_null());
}

TEST_F(CliCheckJson, FreshAndHealthyIsOk) {
  Heard(5);
  Json j = Check(0);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["detail"], "no active diagnosis");
  EXPECT_TRUE(j["diagnosis"].is_null());
  EXPECT_FALSE(j.contains("drain"));
}

TEST_F(CliCheckJson, ADiagnosisThatNeedsNoDrainIsOkAndNamed) {
  Heard(5);
  const int64_t id = Diagnose(FaultClass::kGpuThermal, Action::kMonitor);
  Json j = Check(0);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["diagnosis"]["id"], id);
  EXPECT_EQ(j["diagnosis"]["fault_class"], "gpu_thermal");
  EXPECT_EQ(j["diagnosis"]["component"], "gpu/2");
  EXPECT_EQ(j["diagnosis"]["action"], "monitor");
}

TEST_F(CliCheckJson, ADrainWorthyDiagnosisIsDrainExit1) {
  Heard(5);
  const int64_t id = Diagnose(FaultClass::kGpuFellOffBus, Action::kDrain);
  Json j = Check(1);
  EXPECT_EQ(j["status"], "drain");
  EXPECT_EQ(j["diagnosis"]["id"], id);
  EXPECT_EQ(j["diagnosis"]["fault_class"], "gpu_fell_off_bus");
  EXPECT_EQ(j["diagnosis"]["severity"], "critical");
  EXPECT_EQ(j["drain"], "not drained (--apply drains)");
}

TEST_F(CliCheckJson, StaleDataIsUnknownEvenOverADrain) {
  Heard(3600);
  Diagnose(FaultClass::kGpuFellOffBus, Action::kDrain);
  Json j = Check(3);
  EXPECT_EQ(j["status"], "unknown");
  EXPECT_NE(j.value("detail", "").find("stale: the agent last heard from any source"), std::string::npos) << j;
}

TEST_F(CliCheckJson, BadOptionsStayExit2WithoutJson) {
  const auto r = testing_cli::Faultline("check --json --store " + path_);  // no --slurm
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--slurm"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace faultline
