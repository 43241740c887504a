// End-to-end: `faultline collect amd` over the fake library and over a fake sysfs tree.
// Skipped when the binary has not been built ($FAULTLINE_CLI_BIN overrides its path).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "amd_test_env.h"
#include "sim/fake_amdsmi/fake_amdgpu_sysfs.h"

namespace faultline::amdsmi {
namespace {

using testing::AmdTestEnv;
using testing::Json;
using testing::Node;

struct Ran {
  int exit_code = -1;
  std::string out;
};

class AmdCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("FAULTLINE_CLI_BIN");
    bin_ = env ? env : std::string(FAULTLINE_BINARY_DIR) + "/faultline";
    if (!std::filesystem::exists(bin_)) GTEST_SKIP() << "no faultline binary at " << bin_;
  }
  Ran Run(const std::string& args) {
    Ran r;
    FILE* p = popen(("'" + bin_ + "' " + args + " 2>&1").c_str(), "r");
    if (p == nullptr) return r;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }
  AmdTestEnv env_;
  std::string bin_;
};

TEST_F(AmdCliTest, JsonThroughTheLibraryWithFindings) {
  Json state = Node(8);
  state["gpus"][5]["ecc"]["umc"]["ue"] = 1;
  env_.Write(state);
  Ran r = Run("collect amd --json --node n1 --root " + env_.root() + " --amdsmi-lib '" FAKE_AMDSMI_LIB "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Json s = Json::parse(r.out.substr(0, r.out.find('\n')), nullptr, false);
  ASSERT_FALSE(s.is_discarded()) << r.out;
  EXPECT_EQ(s["via"], "amdsmi");
  EXPECT_EQ(s["gpu_count"], 8);
  EXPECT_EQ(s["node"], "n1");
  bool hbm = false;
  for (const Json& f : s["findings"]) {
    hbm = hbm || (f["fault_class"] == "hbm_uncorrectable" && f["component"]["name"] == "5");
  }
  EXPECT_TRUE(hbm) << s["findings"].dump();
}

TEST_F(AmdCliTest, SysfsAloneStillGivesFindings) {
  for (int i = 0; i < 2; ++i) {
    fake_amdsmi::FakeAmdgpuCard c;
    c.bdf = i == 0 ? "0000:0c:00.0" : "0000:1c:00.0";
    c.ras = {{"umc", {0, 0}}, {"gfx", {i == 1 ? 2u : 0u, 0}}};
    c.bad_unreservable = i == 0 ? 1 : 0;
    ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env_.root(), i, c).ok());
  }
  Ran r = Run("collect amd --no-amdsmi --root " + env_.root());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("via sysfs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("row_remap_exhausted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu_sram"), std::string::npos) << r.out;
  // Without --no-amdsmi and no library: the same, with a note saying why.
  Ran fallback = Run("collect amd --json --amdsmi-lib /nonexistent/libamd_smi.so --root " + env_.root());
  ASSERT_EQ(fallback.exit_code, 0) << fallback.out;
  EXPECT_NE(fallback.out.find("\"via\":\"sysfs\""), std::string::npos);
  EXPECT_NE(fallback.out.find("cannot load"), std::string::npos);
}

TEST_F(AmdCliTest, NothingReachableIsExit2AndBadOptions) {
  Ran r = Run("collect amd --amdsmi-lib /nonexistent/libamd_smi.so --root " + env_.root());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("no AMD GPU reachable"), std::string::npos) << r.out;
  EXPECT_EQ(Run("collect amd --count 0").exit_code, 2);
  EXPECT_EQ(Run("collect amd --bogus").exit_code, 2);
  Ran help = Run("collect amd --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--amdsmi-lib"), std::string::npos);
  EXPECT_NE(help.out.find("hbm_uncorrectable"), std::string::npos);
}

}  // namespace
}  // namespace faultline::amdsmi
