// End-to-end: `faultline scan` (issue 26) on a host made of a fake sysfs tree, the fake NVML
// library and a kernel log file: a GPU off the bus, a downtrained link and an XID in the
// kernel log each need action (exit 1) and are named; a healthy host exits 0; a host where
// nothing can be read exits 3 and says why for every source; --store keeps what was read.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/json.h"
#include "run_faultline.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "store/store.h"

namespace faultline {
namespace {

using testing_cli::Faultline;
using testing_cli::RunResult;

std::string Temp(const std::string& name, const std::string& content) {
  const std::string path = testing::TempDir() + "/" + std::to_string(getpid()) + "-scan-" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// Two GPUs; `gpu1_extra` is spliced into GPU 1's object (a loss, errors).
std::string NvmlState(const std::string& gpu1_extra = "") {
  return Temp("nvml.json", R"({"gpus": [
    {"uuid": "GPU-0000", "serial": "1654223001000", "pci_bus_id": "00000000:18:00.0",
     "ecc": {"volatile": {"corrected": 0, "uncorrected": 0}}, "clock_event_reasons": 0},
    {"uuid": "GPU-0001", "serial": "1654223001001", "pci_bus_id": "00000000:2A:00.0",
     "ecc": {"volatile": {"corrected": 0, "uncorrected": 0}}, "clock_event_reasons": 0)" +
                               gpu1_extra + "}]}");
}

constexpr const char* kBenignLog =
    "[    0.000000] Linux version 6.5.0-1018-nvidia (buildd@lcy02-amd64-061) #18-Ubuntu SMP\n"
    "[    5.120000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"
    "[    6.300000] mlx5_core 0000:0c:00.0: Port module event: module 0, Cable plugged\n";

constexpr const char* kXid79 = "[  812.445120] NVRM: Xid (PCI:0000:2a:00): 79, pid=0, GPU has fallen off the bus.\n";

// A fake node: its sysfs tree, kernel log file and NVML state; removed at the end.
class ScanHost {
 public:
  explicit ScanHost(const std::string& tag, const std::string& log = kBenignLog)
      : root_(FakeSysfsScratchDir("scan_cli_" + tag)), kmsg_(Temp(tag + ".kern.log", log)) {
    auto tree = FakeSysfsTree::Create(root_);
    EXPECT_TRUE(tree.ok()) << tree.status().ToString();
    if (tree.ok()) tree_.emplace(std::move(tree).value());
  }
  ~ScanHost() { std::filesystem::remove_all(root_); }
  ScanHost(const ScanHost&) = delete;
  ScanHost& operator=(const ScanHost&) = delete;

  FakeSysfsTree& tree() { return *tree_; }

  RunResult Scan(const std::string& nvml_state, const std::string& flags = "--json") const {
    const std::string env = "FAULTLINE_NVML_LIB=" + std::string(FAULTLINE_BINARY_DIR) +
                            "/src/sim/fake_nvml/libnvidia-ml.so.1 FAKE_NVML_STATE=" + nvml_state +
                            " FAULTLINE_AMDSMI_LIB=/nonexistent/libamd_smi.so";
    return Faultline("scan --node n1 --root " + root_ + " --kmsg " + kmsg_ + " " + flags, "", env);
  }

 private:
  std::string root_;
  std::string kmsg_;
  std::optional<FakeSysfsTree> tree_;
};

Json Parse(const RunResult& r) {
  Json j = Json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

const Json& Source(const Json& j, const std::string& name) {
  for (const Json& s : j["sources"]) {
    if (s["name"] == name) return s;
  }
  static const Json kNone;
  ADD_FAILURE() << "no source " << name << " in " << j["sources"].dump();
  return kNone;
}

bool PlanHas(const Json& j, const std::string& action) {
  for (const Json& p : j["plan"]) {
    if (p["action"] == action && p["refused"] == false) return true;
  }
  return false;
}

TEST(CliScanTest, GpuOffTheBusNeedsActionAndIsNamed) {
  ScanHost host("lost");
  RunResult r = host.Scan(NvmlState(R"(, "lost_after_s": 0)"));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  Json j = Parse(r);
  EXPECT_EQ(j["verdict"], "needs_action");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["primary"]["fault_class"], "gpu_fell_off_bus") << j["primary"].dump(1);
  EXPECT_EQ(j["primary"]["component"]["id"], "gpu/1");
  EXPECT_TRUE(PlanHas(j, "drain")) << j["plan"].dump();
  EXPECT_EQ(Source(j, "nvml")["state"], "read");
  EXPECT_EQ(Source(j, "sysfs")["state"], "read");

  RunResult human = host.Scan(NvmlState(R"(, "lost_after_s": 0)"), "");
  EXPECT_EQ(human.exit_code, 1);
  EXPECT_NE(human.out.find("NEEDS ACTION: gpu_fell_off_bus on gpu/1"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("Plan (what the agent's policy would do"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("  drain  (plan:gpu_fell_off_bus)"), std::string::npos) << human.out;
}

TEST(CliScanTest, DowntrainedLinkNeedsActionAndNamesTheDevice) {
  ScanHost host("downtrained");
  const std::string gpu = host.tree().Bdfs("gpu").at(1);
  ASSERT_TRUE(host.tree().SetLink(gpu, 32, 8).ok());
  RunResult r = host.Scan(NvmlState(), "");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("NEEDS ACTION: pcie_link_degraded"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(gpu), std::string::npos) << r.out;
}

TEST(CliScanTest, XidInTheKernelLogNeedsAction) {
  ScanHost host("xid", std::string(kBenignLog) + kXid79);
  RunResult r = host.Scan(NvmlState());
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  Json j = Parse(r);
  EXPECT_EQ(j["primary"]["fault_class"], "gpu_fell_off_bus") << j["primary"].dump(1);
  // The kernel's bus id 0000:2a:00 is NVML's GPU 1.
  EXPECT_EQ(j["primary"]["component"]["id"], "gpu/1");
  EXPECT_EQ(Source(j, "kmsg")["state"], "read");
}

TEST(CliScanTest, HealthyHostExitsZeroAndListsEverySource) {
  ScanHost host("healthy");
  RunResult r = host.Scan(NvmlState());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json j = Parse(r);
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_EQ(j["primary"]["fault_class"], "none");
  EXPECT_TRUE(j["plan"].empty());
  EXPECT_EQ(Source(j, "nvml")["state"], "read");
  EXPECT_GT(Source(j, "nvml")["observations"].get<int>(), 0);
  EXPECT_EQ(Source(j, "sysfs")["state"], "read");
  EXPECT_EQ(Source(j, "kmsg")["state"], "read");
  // No AMD GPU here: said, with why, not skipped.
  EXPECT_EQ(Source(j, "amd")["state"], "failed");
  EXPECT_NE(Source(j, "amd")["error"].get<std::string>().find("no AMD GPU"), std::string::npos);
  EXPECT_EQ(Source(j, "redfish")["state"], "not_configured");
  EXPECT_EQ(Source(j, "dcgm_exporter")["state"], "not_configured");
  EXPECT_EQ(j["sources"].size(), 8u);
}

TEST(CliScanTest, NothingReadableExitsThreeWithEveryError) {
  const std::string empty = testing::TempDir() + "/" + std::to_string(getpid()) + "-scan-empty-root";
  std::filesystem::create_directories(empty);
  // Port 9 (discard) on loopback: nothing listens there, so both peers refuse at once.
  const std::string scan = "scan --node n1 --root " + empty + " --kmsg " + empty + "/no-kern.log --nvml-lib " + empty +
                           "/no-libnvidia-ml.so.1" +
                           " --redfish https://127.0.0.1:9 --dcgm-url http://127.0.0.1:9/metrics --timeout 5";
  const std::string env = "FAULTLINE_AMDSMI_LIB=/nonexistent/libamd_smi.so";
  RunResult r = Faultline(scan + " --json", "", env);
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  Json j = Parse(r);
  EXPECT_EQ(j["verdict"], "could_not_see");
  EXPECT_TRUE(j["primary"].is_null());
  for (const char* name : {"kmsg", "nvml", "dcgm_exporter", "redfish", "sysfs", "amd"}) {
    const Json& s = Source(j, name);
    EXPECT_EQ(s["state"], "failed") << s.dump();
    EXPECT_FALSE(s.value("error", "").empty()) << s.dump();
  }
  EXPECT_NE(Source(j, "kmsg")["error"].get<std::string>().find("no-kern.log"), std::string::npos);
  EXPECT_NE(Source(j, "nvml")["error"].get<std::string>().find("no-libnvidia-ml"), std::string::npos);
  for (const Json& s : j["sources"]) EXPECT_NE(s["state"], "read") << s.dump();

  RunResult human = Faultline(scan, "", env);
  EXPECT_EQ(human.exit_code, 3);
  EXPECT_NE(human.out.find("COULD NOT SEE"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("FAILED"), std::string::npos) << human.out;
  std::filesystem::remove_all(empty);
}

// A program's segfault is its owner's business: reported, but the node is healthy.
TEST(CliScanTest, AProgramsFaultLeavesTheNodeHealthy) {
  ScanHost host("segfault", std::string(kBenignLog) +
                                "[ 9120.031337] python3[48213]: segfault at 0 ip 00007f3a2c1b2e10 sp 00007ffd4a1c9e80 "
                                "error 4 in libtorch_cuda.so[7f3a2a000000+3a00000]\n");
  RunResult r = host.Scan(NvmlState());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json j = Parse(r);
  EXPECT_EQ(j["verdict"], "healthy");
  ASSERT_FALSE(j["diagnoses"].empty()) << j.dump(1);
  EXPECT_EQ(j["diagnoses"][0]["fault_class"], "user_application");
}

// A peer that accepts the connection and never answers (a wedged exporter, a hung BMC)
// costs the scan its --timeout, not the peer's own request timeout of 5 s.
TEST(CliScanTest, ASourceThatNeverAnswersTimesOut) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(fd, 4), 0);  // the kernel completes the handshake; nobody reads
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/metrics";
  const std::string log = Temp("timeout.kern.log", kBenignLog);
  const auto start = std::chrono::steady_clock::now();
  RunResult r = Faultline("scan --json --node n1 --kmsg " + log + " --dcgm-url " + url +
                          " --timeout 0.5 --skip nvml --skip sysfs --skip amd --skip ethernet");
  const auto took = std::chrono::steady_clock::now() - start;
  close(fd);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json j = Parse(r);
  EXPECT_EQ(Source(j, "dcgm_exporter")["state"], "timed_out") << j["sources"].dump(1);
  EXPECT_EQ(Source(j, "kmsg")["state"], "read");
  EXPECT_LT(took, std::chrono::milliseconds(4500));
}

// The agent's own config says what to read; a flag overrides the file.
TEST(CliScanTest, AgentConfigChoosesTheSourcesAndFlagsOverrideIt) {
  const std::string xid = Temp("config.kern.log", std::string(kBenignLog) + kXid79);
  const std::string config = Temp("agent.toml", "[agent]\nnode = \"cfg-node\"\n[kmsg]\npath = \"" + xid +
                                                    "\"\n[nvml]\nenabled = false\n[sysfs]\nenabled = false\n"
                                                    "[ethernet]\nenabled = false\n");
  RunResult r = Faultline("scan --json --config " + config);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  Json j = Parse(r);
  EXPECT_EQ(j["node"], "cfg-node");
  EXPECT_EQ(j["primary"]["fault_class"], "gpu_fell_off_bus");
  EXPECT_EQ(Source(j, "nvml")["state"], "not_configured");
  EXPECT_EQ(Source(j, "amd")["state"], "not_configured");  // off in an agent config unless enabled

  RunResult clean = Faultline("scan --json --config " + config + " --kmsg " + Temp("clean.kern.log", kBenignLog));
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;

  RunResult bad = Faultline("scan --config " + Temp("bad.toml", "[kmsg]\npaht = \"/dev/kmsg\"\n"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("paht"), std::string::npos) << bad.err;
}

// A kernel log read without error but empty says nothing of the GPUs or the fabric: alone,
// it is not enough to call the node healthy.
TEST(CliScanTest, AnEmptyKernelLogAloneCannotSee) {
  const std::string log = Temp("empty.kern.log", "");
  RunResult r =
      Faultline("scan --json --node n1 --kmsg " + log + " --skip nvml --skip sysfs --skip amd --skip ethernet");
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  Json j = Parse(r);
  EXPECT_EQ(Source(j, "kmsg")["state"], "empty");
  EXPECT_EQ(Source(j, "nvml")["state"], "not_configured");
  EXPECT_NE(Source(j, "nvml")["detail"].get<std::string>().find("--skip nvml"), std::string::npos);
}

TEST(CliScanTest, StoreKeepsWhatWasRead) {
  ScanHost host("store", std::string(kBenignLog) + kXid79);
  const std::string db = testing::TempDir() + "/" + std::to_string(getpid()) + "-scan.db";
  std::filesystem::remove(db);
  RunResult r = host.Scan(NvmlState(), "--store " + db);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  StoreOptions options;
  options.read_only = true;
  auto store = Store::Open(db, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ObservationQuery oq;
  oq.node = "n1";
  auto observations = (*store)->QueryObservations(oq);
  ASSERT_TRUE(observations.ok());
  EXPECT_GT(observations->rows.size(), 10u);
  RecordQuery q;
  q.node = "n1";
  auto findings = (*store)->ListFindings(q);
  ASSERT_TRUE(findings.ok());
  EXPECT_FALSE(findings->rows.empty());
  auto diagnoses = (*store)->ListDiagnoses(q);
  ASSERT_TRUE(diagnoses.ok());
  ASSERT_EQ(diagnoses->rows.size(), 1u);
  EXPECT_EQ(diagnoses->rows[0].value.fault_class, FaultClass::kGpuFellOffBus);
  const size_t first_findings = findings->rows.size();

  // A second scan of the same node stores no second copy of the same kernel event.
  ASSERT_EQ(host.Scan(NvmlState(), "--store " + db).exit_code, 1);
  findings = (*store)->ListFindings(q);
  ASSERT_TRUE(findings.ok());
  EXPECT_EQ(findings->rows.size(), first_findings);
  diagnoses = (*store)->ListDiagnoses(q);
  ASSERT_TRUE(diagnoses.ok());
  EXPECT_EQ(diagnoses->rows.size(), 1u);
  EXPECT_TRUE((*store)->Close().ok());
  std::filesystem::remove(db);
}

TEST(CliScanTest, BadOptionsExitTwoBeforeReadingAnything) {
  const std::string skip_all = " --skip kmsg --skip nvml --skip sysfs --skip amd --skip ethernet";
  EXPECT_EQ(Faultline("scan --since yesterday-ish" + skip_all).exit_code, 2);
  RunResult r = Faultline("scan --store /nonexistent-dir/scan.db" + skip_all);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--store /nonexistent-dir/scan.db"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(Faultline("scan --skip bmc").exit_code, 2);
}

TEST(CliScanTest, HelpTeachesWithAnExample) {
  RunResult r = Faultline("scan --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Exit code: 0 healthy; 1 needs action"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sudo faultline scan"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace faultline
