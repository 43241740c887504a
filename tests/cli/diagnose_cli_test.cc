// End-to-end: the faultline binary on the example logs and on bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/json.h"
#include "run_faultline.h"

namespace faultline {
namespace {

using testing_cli::Faultline;
using testing_cli::RunResult;
using testing_cli::Slurp;

std::string Example(const std::string& name) { return std::string(FAULTLINE_SOURCE_DIR) + "/examples/" + name; }

Json DiagnoseJson(const std::string& file, const std::string& extra = "") {
  RunResult r = Faultline("diagnose --json --gpu-map " + Example("gpu-map.json") + " " + extra + " " + file);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return Json::parse(r.out);
}

TEST(CliDiagnoseTest, FellOffBusExampleNamesGpuAndPort) {
  Json j = DiagnoseJson(Example("gpu-fell-off-bus.dmesg"));
  const Json& p = j["primary"];
  EXPECT_EQ(p["fault_class"], "gpu_fell_off_bus");
  EXPECT_EQ(p["component"]["id"], "gpu/4");
  EXPECT_EQ(p["component"]["keys"]["serial"], "1650223011874");
  EXPECT_EQ(p["component"]["keys"]["upstream_port"], "0000:97:01.0");
  EXPECT_EQ(p["action"], "drain");
  for (const char* field : {"fault_class", "layer", "component", "action", "confidence", "evidence", "ruled_out"}) {
    EXPECT_TRUE(p.contains(field)) << field;
  }
  // The segfault that followed is the program's, reported separately and below the hardware fault.
  bool program = false;
  for (const Json& d : j["diagnoses"]) program |= d["fault_class"] == "user_application";
  EXPECT_TRUE(program);
}

TEST(CliDiagnoseTest, UserProgramXidIsNotHardware) {
  Json j = DiagnoseJson(Example("user-program-xid13.journal"));
  EXPECT_EQ(j["node"], "gpu-node-12");
  EXPECT_EQ(j["primary"]["fault_class"], "user_application");
  for (const Json& d : j["diagnoses"]) {
    EXPECT_NE(d["action"], "rma");
    EXPECT_NE(d["action"], "drain");
  }
}

TEST(CliDiagnoseTest, DoubleBitErrorWithRemapDrainsGpu7) {
  Json j = DiagnoseJson(Example("hbm-dbe.kmsg"));
  EXPECT_EQ(j["primary"]["fault_class"], "hbm_uncorrectable");
  EXPECT_EQ(j["primary"]["component"]["id"], "gpu/7");
  EXPECT_EQ(j["primary"]["action"], "drain");
}

TEST(CliDiagnoseTest, CleanLogSaysNothingIsWrong) {
  const std::string path = testing::TempDir() + "/clean.log";
  {
    std::ofstream(path)
        << "[    1.000000] usb 1-1: new high-speed USB device\n[    2.0] EXT4-fs (nvme0n1p2): mounted\n";
  }
  Json j = DiagnoseJson(path);
  EXPECT_TRUE(j["diagnoses"].empty());
  EXPECT_EQ(j["primary"]["fault_class"], "none");
  EXPECT_EQ(j["primary"]["action"], "none");
  RunResult human = Faultline("diagnose " + path);
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("No fault found"), std::string::npos) << human.out;
}

TEST(CliDiagnoseTest, ReadsStdin) {
  RunResult r = Faultline("diagnose --json -", Example("hbm-dbe.kmsg"));
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(Json::parse(r.out)["primary"]["fault_class"], "hbm_uncorrectable");
}

TEST(CliDiagnoseTest, MissingFileIsExitCode2) {
  EXPECT_EQ(Faultline("diagnose /nonexistent/kern.log").exit_code, 2);
  EXPECT_EQ(Faultline("diagnose").exit_code, 2);
  EXPECT_EQ(Faultline("diagnose --since yesterday " + Example("hbm-dbe.kmsg")).exit_code, 2);
  EXPECT_EQ(Faultline("diagnose --gpu-map /nonexistent.json " + Example("hbm-dbe.kmsg")).exit_code, 2);
}

TEST(CliDiagnoseTest, SinceFiltersDatedLines) {
  // The journal example is dated 14 March; --since after it leaves nothing, --until before it too.
  Json late = DiagnoseJson(Example("user-program-xid13.journal"), "--since 2099-01-01T00:00:00Z");
  EXPECT_TRUE(late["diagnoses"].empty());
  Json all = DiagnoseJson(Example("user-program-xid13.journal"), "--since 2000-01-01T00:00:00Z");
  EXPECT_FALSE(all["diagnoses"].empty());
}

TEST(CliDiagnoseTest, PartlyCorruptFileIsReadAroundTheDamage) {
  const std::string path = testing::TempDir() + "/damaged.log";
  {
    std::ofstream f(path, std::ios::binary);
    f << std::string("\x00\xff\xfe\x01 binary junk\n", 17) << std::string(1 << 20, 'Z') << "\n";
    std::ifstream in(Example("hbm-dbe.kmsg"));
    f << in.rdbuf();
    f << "6,99999,9999";  // truncated record
  }
  Json j = DiagnoseJson(path);
  EXPECT_EQ(j["primary"]["fault_class"], "hbm_uncorrectable");
  EXPECT_EQ(j["inputs"][0]["binary_lines"], 1);
  EXPECT_EQ(j["inputs"][0]["truncated_lines"], 1);
}

// A log whose first line starts with '[' is a kernel log when it reads as one, whatever
// dmesg form it is in, or a bare bracketed message.
TEST(CliDiagnoseTest, BracketedFirstLineIsAKernelLog) {
  const std::string xid =
      "NVRM: Xid (PCI:0000:3b:00): 48, pid=4242, name=trainer, An uncorrectable double bit error (DBE) has been "
      "detected on GPU in the framebuffer at partition 6, subpartition 0.\n";
  for (const std::string first : {"[  +0.000844] ", "[<    0.000844>] ", "[Feb14 07:03] ", "[drm] ok\n[  +1.5] "}) {
    const std::string path = testing::TempDir() + "/bracketed.log";
    { std::ofstream(path) << first << xid; }
    RunResult r = Faultline("diagnose --json " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Json j = Json::parse(r.out);
    EXPECT_EQ(j["inputs"][0]["format"], "kernel_log") << first;
    EXPECT_EQ(j["primary"]["fault_class"], "hbm_uncorrectable") << first << r.err;
    EXPECT_EQ(r.err.find("not valid JSON"), std::string::npos) << r.err;
  }
}

// XID lines that name no pid or process (or name them "<unknown>") print no empty fields.
TEST(CliDiagnoseTest, MissingPidAndProcessPrintNoEmptyFields) {
  const std::string path = testing::TempDir() + "/nopid.log";
  {
    std::ofstream(path) << "[ 10.000001] NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception: ESR 0x50e730=0x4\n"
                        << "[ 11.000001] NVRM: Xid (PCI:0000:3b:00): 31, pid='<unknown>', name=<unknown>, Ch 00000008, "
                           "intr 10000000. MMU Fault: ENGINE GRAPHICS\n"
                        << "[ 12.000001] traps: [12] general protection fault ip:7f sp:7ffd error:0\n";
  }
  RunResult r = Faultline("diagnose " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* empty :
       {"pid :", "pid )", "(pid )", "program :", "program  ", "Program  (", "()", " :  ", "from program pid"}) {
    EXPECT_EQ(r.out.find(empty), std::string::npos) << "'" << empty << "' in:\n" << r.out;
  }
}

// Memory stays bounded whatever the input: distinct lines past the per-component bound are
// counted, not kept, and the total across files is capped with a warning.
TEST(CliDiagnoseTest, ManyDistinctXidLinesAreBoundedAndCounted) {
  const std::string path = testing::TempDir() + "/many-xids.log";
  constexpr int kLines = 30'000;
  {
    std::ofstream f(path);
    for (int i = 0; i < kLines; ++i) {
      f << "[" << 1000 + i / 1000 << "." << 100000 + i % 1000 << "] NVRM: Xid (PCI:0000:" << (i % 2 ? "3b" : "5d")
        << ":00): 13, pid=" << 100000 + i << ", name=job" << i
        << ", Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Out Of Range Address\n";
    }
  }
  RunResult r = Faultline("diagnose --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json in = Json::parse(r.out)["inputs"][0];
  EXPECT_LE(in["observations"].get<int>(), 2 * 1024);
  EXPECT_EQ(in["aggregated_lines"].get<int>() + in["observations"].get<int>(), kLines);
  EXPECT_NE(r.err.find("counted, not kept"), std::string::npos) << r.err;
  // Two copies with a total cap: the second file is cut with a warning, not read whole.
  RunResult capped = Faultline("diagnose --json --max-observations 1000 " + path + " " + path);
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  Json inputs = Json::parse(capped.out)["inputs"];
  EXPECT_EQ(inputs[0]["observations"].get<int>() + inputs[1]["observations"].get<int>(), 1000);
  EXPECT_GT(inputs[1]["dropped_observations"].get<int>(), 0);
  EXPECT_NE(capped.err.find("--max-observations"), std::string::npos) << capped.err;
}

TEST(CliDiagnoseTest, HelpTeaches) {
  RunResult r = Faultline("diagnose --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--json", "--gpu-map", "--since", "stdin", "Exit code"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

TEST(CliCollectKmsgTest, MissingDeviceIsExitCode2AndRealDeviceReads) {
  EXPECT_EQ(Faultline("collect kmsg --device /nonexistent/kmsg").exit_code, 2);
  if (access("/dev/kmsg", R_OK) != 0) GTEST_SKIP() << "/dev/kmsg not readable here";
  RunResult r = Faultline("collect kmsg --json");
  EXPECT_EQ(r.exit_code, 0);
  // Whatever this machine's kernel logged, each line printed is one JSON observation.
  size_t start = 0;
  while (start < r.out.size()) {
    size_t end = r.out.find('\n', start);
    Json o = Json::parse(r.out.substr(start, end - start));
    EXPECT_EQ(o["source"], "kmsg");
    start = end == std::string::npos ? r.out.size() : end + 1;
  }
}

}  // namespace
}  // namespace faultline
