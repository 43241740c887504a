// End-to-end: `faultline diagnose` over saved snapshots of every layer (Redfish, NVML,
// sysfs, dcgm-exporter, generic observations) alone, mixed with kernel logs, and damaged.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "run_faultline.h"
#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline {
namespace {

using testing_cli::Faultline;
using testing_cli::RunResult;
using testing_cli::Slurp;

std::string Data(const std::string& name) { return std::string(FAULTLINE_SOURCE_DIR) + "/tests/cli/data/" + name; }

std::string Temp(const std::string& name, const std::string& content) {
  const std::string path = testing::TempDir() + "/" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

Json Diagnose(const std::string& files) {
  RunResult r = Faultline("diagnose --json " + files);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

const Json* Diagnosis(const Json& j, const std::string& fault_class) {
  for (const Json& d : j["diagnoses"]) {
    if (d["fault_class"] == fault_class) return &d;
  }
  return nullptr;
}

bool Explains(const Json& d, const std::string& text) {
  for (const Json& e : d["explains"]) {
    if (e.dump().find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(CliSnapshotTest, FailedPsuExplainsTheGpuPowerBrake) {
  Json j = Diagnose(Data("redfish-psu-failed.json") + " " + Data("nvml-power-brake.jsonl"));
  const Json& p = j["primary"];
  EXPECT_EQ(p["fault_class"], "power_supply");
  EXPECT_EQ(p["layer"], "oob");
  EXPECT_EQ(p["component"]["type"], "psu");
  EXPECT_TRUE(Explains(p, "gpu_power_brake")) << p["explains"].dump();
  EXPECT_TRUE(Explains(p, "gpu/1")) << p["explains"].dump();
  EXPECT_EQ(Diagnosis(j, "gpu_power_brake"), nullptr);  // a symptom, never a root cause of its own
  EXPECT_EQ(j["node"], "gpu-node-07");
  ASSERT_EQ(j["inputs"].size(), 2u);
  EXPECT_EQ(j["inputs"][0]["format"], "json");
  EXPECT_EQ(j["inputs"][0]["sources"], Json::array({"redfish"}));
  EXPECT_EQ(j["inputs"][1]["sources"], Json::array({"nvml"}));
  EXPECT_GT(j["inputs"][1]["observations"].get<int>(), 0);
}

TEST(CliSnapshotTest, PowerBrakeAloneIsTheGpusOwnFinding) {
  Json j = Diagnose(Data("nvml-power-brake.jsonl"));
  EXPECT_EQ(j["primary"]["fault_class"], "gpu_power_brake");
  EXPECT_EQ(j["primary"]["component"]["id"], "gpu/1");
}

TEST(CliSnapshotTest, NvmlDoubleBitErrorWithRemapPendingNamesTheGpu) {
  Json j = Diagnose(Data("nvml-dbe-1000.jsonl"));
  const Json& p = j["primary"];
  EXPECT_EQ(p["fault_class"], "row_remap_pending");
  EXPECT_EQ(p["component"]["id"], "gpu/1");
  EXPECT_EQ(p["component"]["keys"]["serial"], "1654223001001");
  EXPECT_EQ(p["action"], "reset_gpu");
  EXPECT_TRUE(Explains(p, "hbm_uncorrectable")) << p.dump();
}

TEST(CliSnapshotTest, TwoNvmlSnapshotsAnHourApartInEitherFileOrder) {
  for (const std::string& files : {Data("nvml-healthy-0900.jsonl") + " " + Data("nvml-dbe-1000.jsonl"),
                                   Data("nvml-dbe-1000.jsonl") + " " + Data("nvml-healthy-0900.jsonl")}) {
    Json j = Diagnose(files);
    EXPECT_EQ(j["primary"]["fault_class"], "row_remap_pending") << files;
    EXPECT_EQ(j["primary"]["component"]["id"], "gpu/1") << files;
    // The DBE counter rose between the samples: both readings of the hour are evidence.
    std::set<std::string> times;
    for (const Json& f : j["findings"]) {
      for (const Json& e : f["evidence"]) times.insert(e["time"].get<std::string>().substr(0, 13));
    }
    EXPECT_TRUE(times.count("2025-03-14T10")) << files;
  }
}

TEST(CliSnapshotTest, KernelLogAndNvmlSnapshotLandOnOneGpu) {
  Json j = Diagnose(Data("gpu-node-07.kern.log") + " " + Data("nvml-dbe-1000.jsonl"));
  const Json& p = j["primary"];
  EXPECT_EQ(p["component"]["id"], "gpu/1");
  std::set<std::string> sources;
  for (const Json& e : p["evidence"]) sources.insert(e["source"].get<std::string>());
  EXPECT_TRUE(sources.count("kmsg")) << p.dump();
  EXPECT_TRUE(sources.count("nvml")) << p.dump();
  // Every GPU finding is on gpu/1: the kernel's bus id 0000:2a:00 joined NVML's identity.
  for (const Json& f : j["findings"]) {
    if (f["component"]["type"] == "gpu") {
      EXPECT_EQ(f["component"]["id"], "gpu/1") << f.dump();
    }
  }
  EXPECT_EQ(j["inputs"][0]["format"], "kernel_log");
  EXPECT_EQ(j["inputs"][0]["classified_lines"], 2);
}

TEST(CliSnapshotTest, DcgmExporterScrape) {
  Json j = Diagnose(Data("dcgm-remap-pending.prom"));
  EXPECT_EQ(j["primary"]["fault_class"], "row_remap_pending");
  EXPECT_EQ(j["primary"]["component"]["id"], "gpu/1");
  EXPECT_EQ(j["inputs"][0]["format"], "prometheus");
  EXPECT_EQ(j["inputs"][0]["sources"], Json::array({"dcgm-exporter"}));
  EXPECT_EQ(j["node"], "gpu-node-07");
}

TEST(CliSnapshotTest, SysfsSnapshotWithADowntrainedLink) {
  Json j = Diagnose(Data("sysfs-downtrained.jsonl"));
  const Json* d = Diagnosis(j, "pcie_link_degraded");
  ASSERT_NE(d, nullptr) << j.dump(1);
  EXPECT_NE((*d)["component"].dump().find("0000:04:00.0"), std::string::npos) << (*d)["component"].dump();
}

// The real collector's output, not a fixture: `collect sysfs --json` over a fake tree with
// one GPU link trained at x8 of x16, saved, then diagnosed.
TEST(CliSnapshotTest, CollectSysfsOutputRoundTrips) {
  const std::string root = FakeSysfsScratchDir("snapshot_cli");
  auto tree = FakeSysfsTree::Create(root);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  const std::string gpu = tree->Bdfs("gpu").at(1);
  ASSERT_TRUE(tree->SetLink(gpu, 32, 8).ok());
  RunResult c = Faultline("collect sysfs --json --node n1 --root " + root);
  std::filesystem::remove_all(root);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  Json j = Diagnose(Temp("sysfs.jsonl", c.out));
  const Json* d = Diagnosis(j, "pcie_link_degraded");
  ASSERT_NE(d, nullptr) << j.dump(1);
  EXPECT_NE((*d)["component"].dump().find(gpu), std::string::npos) << (*d)["component"].dump();
  EXPECT_EQ(j["inputs"][0]["sources"], Json::array({"sysfs"}));
}

// The real collector again: `collect nvml --json` through the fake NVML library, with
// GPU 1 reporting double-bit errors and a pending row remap.
TEST(CliSnapshotTest, CollectNvmlOutputRoundTrips) {
  const std::string state = Temp("nvml-state.json", R"({"gpus": [
    {"uuid": "GPU-0000", "serial": "1654223001000", "pci_bus_id": "00000000:18:00.0",
     "ecc": {"volatile": {"corrected": 0, "uncorrected": 0}}, "clock_event_reasons": 0},
    {"uuid": "GPU-0001", "serial": "1654223001001", "pci_bus_id": "00000000:2A:00.0",
     "ecc": {"volatile": {"corrected": 3, "uncorrected": 2}},
     "ecc_locations": {"volatile": {"uncorrected": {"dram": 2}}},
     "remapped_rows": {"correctable": 0, "uncorrectable": 1, "pending": true}, "clock_event_reasons": 0}]})");
  const std::string env = "FAULTLINE_NVML_LIB=" + std::string(FAULTLINE_BINARY_DIR) +
                          "/src/sim/fake_nvml/libnvidia-ml.so.1 FAKE_NVML_STATE=" + state + " ";
  const std::string out = testing::TempDir() + "/nvml-collected.jsonl";
  const std::string cmd = env + FAULTLINE_BINARY_DIR + "/faultline collect nvml --json --node n1 > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Json j = Diagnose(out);
  EXPECT_EQ(j["primary"]["fault_class"], "row_remap_pending") << j.dump(1);
  EXPECT_EQ(j["primary"]["component"]["id"], "gpu/1");
  EXPECT_EQ(j["primary"]["component"]["keys"]["uuid"], "GPU-0001");
  EXPECT_EQ(j["node"], "n1");
}

TEST(CliSnapshotTest, GenericObservationsFromStdinAndGzip) {
  RunResult r = Faultline("diagnose --json -", Data("nvml-dbe-1000.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["primary"]["fault_class"], "row_remap_pending");

  // A JSON array of observations (core/json.h), as any tool can write it, gzip-compressed.
  Json sample = Json::parse(Slurp(Data("nvml-dbe-1000.jsonl")));
  const std::string plain = Temp("observations.json", sample["observations"].dump(1));
  ASSERT_EQ(std::system(("gzip -f " + plain).c_str()), 0);
  Json j = Diagnose(plain + ".gz");
  EXPECT_EQ(j["primary"]["fault_class"], "row_remap_pending");
  EXPECT_EQ(j["primary"]["component"]["id"], "gpu/1");
}

TEST(CliSnapshotTest, HumanOutputSummarisesEveryInput) {
  RunResult r = Faultline("diagnose " + Data("gpu-node-07.kern.log") + " " + Data("redfish-psu-failed.json") + " " +
                          Data("nvml-power-brake.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3 file(s), 1 kernel log(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 snapshot(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(nvml, redfish)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("power_supply"), std::string::npos) << r.out;
}

TEST(CliSnapshotTest, WindowAppliesToSnapshots) {
  Json j =
      Diagnose("--until 2025-03-14T09:30:00Z " + Data("nvml-healthy-0900.jsonl") + " " + Data("nvml-dbe-1000.jsonl"));
  EXPECT_TRUE(j["diagnoses"].empty()) << j["diagnoses"].dump();
  EXPECT_EQ(j["primary"]["fault_class"], "none");
}

// Each damaged input is reported and skipped; the good file beside it is still diagnosed.
TEST(CliSnapshotTest, BadSnapshotsAreReportedAndTheOtherFilesStillCount) {
  const std::string redfish = Slurp(Data("redfish-psu-failed.json"));
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated.json", redfish.substr(0, redfish.size() / 2)},
      {"wrong-type.json", "{\"observations\": {\"kind\": \"xid\"}}\n"},
      {"not-observations.json", "[1, 2, 3]\n"},
      {"deep.json", deep},
      {"binary.json", std::string("{\x00\xff\xfe\x01", 5) + "garbage"},
      {"empty-prom.prom", "# HELP DCGM_FI_DEV_GPU_TEMP x\n{{{{\n"},
  };
  for (const auto& c : cases) {
    const std::string bad = Temp(c.first, c.second);
    RunResult r = Faultline("diagnose --json " + bad + " " + Data("nvml-power-brake.jsonl"));
    ASSERT_EQ(r.exit_code, 0) << c.first << ": " << r.err;
    Json j = Json::parse(r.out);
    EXPECT_EQ(j["primary"]["fault_class"], "gpu_power_brake") << c.first;
    EXPECT_TRUE(j["inputs"][0].contains("error")) << c.first << ": " << j["inputs"][0].dump();
    EXPECT_NE(r.err.find("error: " + bad + ": skipped"), std::string::npos) << c.first << ": " << r.err;
  }
}

TEST(CliSnapshotTest, DamagedLinesInsideASnapshotAreWarnedAbout) {
  std::string text = Slurp(Data("nvml-dbe-1000.jsonl"));
  text = "{\"observations\": [{\"kind\": \"xid\"\n" + text + "not json at all\n";
  RunResult r = Faultline("diagnose --json " + Temp("damaged.jsonl", text));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["primary"]["fault_class"], "row_remap_pending");
  EXPECT_EQ(j["inputs"][0]["rejected"], 2);
  EXPECT_NE(r.err.find("line 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
}

TEST(CliSnapshotTest, HugeSnapshotIsSkippedWithAClearError) {
  const std::string line = Slurp(Data("nvml-healthy-0900.jsonl"));
  std::string big;
  while (big.size() < (2u << 20)) big += line;
  const std::string path = Temp("huge.jsonl", big);
  RunResult r = Faultline("diagnose --json --max-snapshot-mb 1 " + path + " " + Data("nvml-dbe-1000.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_NE(j["inputs"][0]["error"].get<std::string>().find("larger than 1 MiB"), std::string::npos);
  EXPECT_EQ(j["primary"]["fault_class"], "row_remap_pending");
  // Under the default limit the same file is read.
  EXPECT_FALSE(Diagnose(path)["inputs"][0].contains("error"));
}

TEST(CliSnapshotTest, MissingFilesAndBadOptionsAreExitCode2) {
  EXPECT_EQ(Faultline("diagnose " + Data("nvml-dbe-1000.jsonl") + " /nonexistent/snapshot.json").exit_code, 2);
  EXPECT_EQ(Faultline("diagnose --topology /nonexistent/topology.json " + Data("nvml-dbe-1000.jsonl")).exit_code, 2);
  EXPECT_EQ(
      Faultline("diagnose --topology " + Temp("bad-topology.json", "{\"gpus\": 7}") + " " + Data("nvml-dbe-1000.jsonl"))
          .exit_code,
      2);
  EXPECT_EQ(Faultline("diagnose --max-snapshot-mb 0 " + Data("nvml-dbe-1000.jsonl")).exit_code, 2);
}

TEST(CliSnapshotTest, HelpNamesTheSnapshotForms) {
  RunResult r = Faultline("diagnose --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s :
       {"collect redfish", "nvml", "sysfs", "dcgm-exporter", "Prometheus", "--topology", "--max-snapshot-mb"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace faultline
