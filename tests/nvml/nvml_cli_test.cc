// End-to-end: the `faultline collect nvml` binary over the fake library. Skipped when the
// binary has not been built ($FAULTLINE_CLI_BIN overrides its path).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "fake_nvml_env.h"

namespace faultline::nvml {
namespace {

using testing::FakeNvmlEnv;
using testing::Json;
using testing::Node;

struct Ran {
  int exit_code = -1;
  std::string out;
};

class NvmlCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("FAULTLINE_CLI_BIN");
    bin_ = env ? env : std::string(FAULTLINE_BINARY_DIR) + "/faultline";
    if (!std::filesystem::exists(bin_)) GTEST_SKIP() << "no faultline binary at " << bin_;
  }

  // Runs the binary with `args` (stdout captured, stderr merged) and the fake library.
  Ran Run(const std::string& args, const std::string& lib = FAKE_NVML_LIB) {
    const std::string cmd = "FAULTLINE_NVML_LIB='" + lib + "' '" + bin_ + "' " + args + " 2>&1";
    Ran r;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }

  FakeNvmlEnv env_;
  std::string bin_;
};

TEST_F(NvmlCliTest, JsonSamplesOfEightGpus) {
  env_.Write(Node(8));
  Ran r = Run("collect nvml --json --count 2 --interval 0.01 --node n7");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    Json s = Json::parse(line, nullptr, false);
    ASSERT_FALSE(s.is_discarded()) << line.substr(0, 200);
    EXPECT_EQ(s["gpu_count"], 8);
    EXPECT_EQ(s["node"], "n7");
    EXPECT_TRUE(s["findings"].is_array());
    EXPECT_TRUE(s["errors"].empty());
    int identities = 0;
    for (const auto& o : s["observations"]) identities += o["kind"] == "gpu_identity" ? 1 : 0;
    EXPECT_EQ(identities, 8);
    ++samples;
  }
  EXPECT_EQ(samples, 2);
}

TEST_F(NvmlCliTest, JsonCarriesGpuDetectorFindings) {
  Json state = Node(4);
  state["gpus"][2]["remapped_rows"]["pending"] = true;
  env_.Write(state);
  Ran r = Run("collect nvml --json --count 1 --node n7");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Json s = Json::parse(r.out.substr(0, r.out.find('\n')));
  ASSERT_EQ(s["findings"].size(), 1u) << s["findings"].dump();
  EXPECT_EQ(s["findings"][0]["fault_class"], "row_remap_pending");
  EXPECT_EQ(s["findings"][0]["component"]["id"], "gpu/2");
  EXPECT_EQ(s["findings"][0]["action"], "reset_gpu");
}

TEST_F(NvmlCliTest, HumanTableShowsEachGpuAndErrors) {
  Json state = Node(2);
  state["gpus"][1]["errors"] = {{"nvmlDeviceGetPowerUsage", "NO_PERMISSION"}};
  env_.Write(state);
  Ran r = Run("collect nvml");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0000:18:00.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0000:2a:00.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("error: gpu 1: nvmlDeviceGetPowerUsage: NO_PERMISSION"), std::string::npos) << r.out;
}

TEST_F(NvmlCliTest, UnavailableNvmlExitsTwo) {
  Ran r = Run("collect nvml", "/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("NVML unavailable"), std::string::npos) << r.out;
  env_.Write(Node(1));
  EXPECT_EQ(Run("collect nvml --count -1").exit_code, 2);
}

TEST_F(NvmlCliTest, DeviceCountFailureExitsOne) {
  env_.Write(Json{{"gpus", Node(1)["gpus"]}, {"errors", {{"nvmlDeviceGetCount_v2", "UNKNOWN"}}}});
  Ran r = Run("collect nvml --json");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("nvmlDeviceGetCount_v2"), std::string::npos);
}

}  // namespace
}  // namespace faultline::nvml
