#include "sources/kmsg/log_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/sanitizer.h"
#include "core/time.h"

namespace faultline {
namespace {

std::unique_ptr<KernelLogReader> NewReader(KernelLogOptions o = {}) {
  o.reference_ns = *ParseIso8601("2025-03-01T00:00:00Z");
  auto r = KernelLogReader::Create(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<Observation> ReadAll(std::string_view text, KernelLogStats* stats = nullptr, size_t chunk = 0) {
  auto r = NewReader();
  if (chunk == 0) chunk = text.size() + 1;
  for (size_t i = 0; i < text.size(); i += chunk) r->Feed(text.substr(i, chunk));
  r->Finish();
  if (stats) *stats = r->stats();
  return r->TakeObservations();
}

const char* kMixedLog =
    "[  100.000001] usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
    "[  101.000000] NVRM: GPU at PCI:0000:b5:00: GPU-5f1b6c2a-0000-1111-2222-333344445555\n"
    "[  101.000001] NVRM: GPU Board Serial Number: 1320220053911\n"
    "[  102.500000] pcieport 0000:b0:01.0: AER: Corrected error received: 0000:b5:00.0\n"
    "[  102.500001] nvidia 0000:b5:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
    "[  102.500002] nvidia 0000:b5:00.0:   device [10de:2330] error status/mask=00000001/0000e000\n"
    "[  102.500003] nvidia 0000:b5:00.0:    [ 0] RxErr                  (First)\n"
    "[  103.000000] NVRM: The NVIDIA GPU 0000:b5:00.0\n"
    "[  103.000001] NVRM: (PCI ID: 10de:2330) installed in this system has\n"
    "[  103.000002] NVRM: fallen off the bus and is not responding to commands.\n"
    "[  103.100000] systemd[1]: Started Session 4 of user root.\n";

TEST(KernelLogReaderTest, AssemblesMultiLineEventsInOrder) {
  KernelLogStats stats;
  auto obs = ReadAll(kMixedLog, &stats);
  ASSERT_EQ(obs.size(), 4u);
  EXPECT_EQ(obs[0].kind, ObsKind::kGpuIdentity);
  EXPECT_EQ(obs[0].attrs.at("uuid"), "GPU-5f1b6c2a-0000-1111-2222-333344445555");
  EXPECT_EQ(obs[1].kind, ObsKind::kGpuIdentity);
  EXPECT_EQ(obs[1].attrs.at("serial"), "1320220053911");
  EXPECT_EQ(obs[1].component.name, "0000:b5:00.0");
  EXPECT_EQ(obs[2].kind, ObsKind::kPcieAer);
  EXPECT_EQ(obs[2].component.Id(), "pcie/0000:b5:00.0");
  EXPECT_EQ(obs[2].attrs.at("reporting_port"), "0000:b0:01.0");
  EXPECT_EQ(obs[2].attrs.at("errors"), "RxErr");
  EXPECT_EQ(obs[2].attrs.at("type"), "Physical Layer");
  EXPECT_EQ(obs[2].mono_us, 102500001);
  EXPECT_EQ(obs[3].kind, ObsKind::kGpuFellOffBus);
  EXPECT_EQ(obs[3].component.Id(), "gpu/0000:b5:00.0");
  EXPECT_EQ(stats.lines, 11u);
  EXPECT_EQ(stats.classified_lines, 8u);  // the "(PCI ID ...)" middle line and 2 benign lines are not
}

TEST(KernelLogReaderTest, ChunkBoundariesDoNotChangeTheResult) {
  auto whole = ReadAll(kMixedLog);
  for (size_t chunk : {1, 7, 64, 1000}) {
    auto pieces = ReadAll(kMixedLog, nullptr, chunk);
    ASSERT_EQ(pieces.size(), whole.size()) << "chunk " << chunk;
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(pieces[i], whole[i]) << "chunk " << chunk << " obs " << i;
  }
}

TEST(KernelLogReaderTest, EveryTextFormIsRecognized) {
  const std::string msg = "NVRM: Xid (PCI:0000:b5:00): 48, pid=1234, name=python3, An uncorrectable double bit error";
  const std::string forms[] = {
      "[ 1234.567890] " + msg,
      "[Sun Feb 23 16:24:18 2025] " + msg,
      "kern  :err   : 2025-01-21T04:41:44,283302+00:00 " + msg,
      "Feb 02 09:56:04 node1 kernel: " + msg,
      "Feb  2 09:56:04 node1 kernel: [ 1234.567890] " + msg,
      "2025-01-21T04:41:44.283302+00:00 node1 kernel: " + msg,
      "3,3973,227996636,-;" + msg,
      msg,
  };
  for (const std::string& line : forms) {
    auto obs = ReadAll(line + "\n");
    ASSERT_EQ(obs.size(), 1u) << line;
    EXPECT_EQ(obs[0].kind, ObsKind::kXid) << line;
    EXPECT_EQ(obs[0].code, 48) << line;
    EXPECT_EQ(obs[0].attrs.at("process"), "python3") << line;
    EXPECT_EQ(obs[0].raw, line);
  }
}

TEST(KernelLogReaderTest, SyslogLinesFromOtherProgramsAreNotKernelEvidence) {
  auto obs = ReadAll("Feb 02 09:56:04 node1 myapp[77]: NVRM: Xid (PCI:0000:b5:00): 79, pretend\n");
  EXPECT_TRUE(obs.empty());
}

TEST(KernelLogReaderTest, IdenticalLinesFoldIntoOneWithACount) {
  std::string log;
  const std::string line =
      "NVRM: Xid (PCI:0000:b5:00): 95, pid=1234, name=train, Uncontained: FBHUB. RST: No, D-RST: No\n";
  // 800,000 lines; 80,000 under ASan (the same folding, ten times fewer).
  const int lines = static_cast<int>(SweepSize(800'000, 80'000));
  for (int i = 0; i < lines; ++i) {
    log += "[" + std::to_string(1000 + i / 1000) + "." + std::to_string(100000 + i % 1000) + "] " + line;
  }
  KernelLogStats stats;
  auto obs = ReadAll(log, &stats, 1 << 20);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].count, static_cast<uint64_t>(lines));
  EXPECT_EQ(stats.folded_duplicates, static_cast<uint64_t>(lines - 1));
  EXPECT_EQ(obs[0].mono_us, 1000100000);
  // The last line's stamp: [<1000 + (lines-1)/1000>.100999].
  EXPECT_EQ(obs[0].attrs.at("last_mono_us"), std::to_string(1000 + (lines - 1) / 1000) + "100999");
}

TEST(KernelLogReaderTest, RepeatsFarApartAreSeparate) {
  auto obs = ReadAll(
      "[ 10.000000] NVRM: Xid (PCI:0000:b5:00): 31, pid=1, name=a, MMU Fault\n"
      "[ 9000.000000] NVRM: Xid (PCI:0000:b5:00): 31, pid=1, name=a, MMU Fault\n");
  ASSERT_EQ(obs.size(), 2u);
  EXPECT_EQ(obs[0].count, 1u);
}

TEST(KernelLogReaderTest, DamagedInputIsReadAroundTheDamage) {
  std::string log = "[ 1.000000] NVRM: Xid (PCI:0000:b5:00): 79, GPU has fallen off the bus.\n";
  log += std::string("\x00\x01\xff\xfe garbage \x00\n", 16);
  log += std::string(1 << 20, 'x') + " NVRM: Xid (PCI:0000:b5:00): 13, hidden at the end of a 1 MB line\n";
  log += "6,100,2000000,-;NVRM: Xid (PCI:0000:17:00): 48, pid=9, name=b, DBE\n";
  log += "6,101,20";  // truncated record at end of file
  KernelLogStats stats;
  auto obs = ReadAll(log, &stats, 4096);
  ASSERT_EQ(obs.size(), 2u);
  EXPECT_EQ(obs[0].code, 79);
  EXPECT_EQ(obs[1].code, 48);
  EXPECT_EQ(stats.binary_lines, 1u);
  EXPECT_EQ(stats.truncated_lines, 1u);
  EXPECT_EQ(stats.lines, 5u);
}

std::string TempPath(const std::string& name) { return testing::TempDir() + "/" + name; }

TEST(KernelLogReaderTest, ReadsPlainAndGzipFilesAndReportsMissingOnes) {
  const std::string plain = TempPath("plain.log");
  { std::ofstream(plain) << kMixedLog; }
  const std::string gz = TempPath("log.gz");
  gzFile f = gzopen(gz.c_str(), "wb");
  gzwrite(f, kMixedLog, static_cast<unsigned>(std::strlen(kMixedLog)));
  gzclose(f);
  for (const std::string& path : {plain, gz}) {
    auto r = NewReader();
    ASSERT_TRUE(r->ReadFile(path).ok()) << path;
    EXPECT_EQ(r->TakeObservations().size(), 4u) << path;
  }
  auto r = NewReader();
  Status st = r->ReadFile(TempPath("does-not-exist.log"));
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("does-not-exist.log"), std::string::npos);
  std::remove(plain.c_str());
  std::remove(gz.c_str());
}

TEST(KernelLogReaderTest, CorruptGzipKeepsWhatWasRead) {
  const std::string gz = TempPath("broken.gz");
  gzFile f = gzopen(gz.c_str(), "wb");
  std::string big;
  for (int i = 0; i < 2000; ++i) big += "[ 1.0] NVRM: Xid (PCI:0000:b5:00): 79, GPU has fallen off the bus.\n";
  gzwrite(f, big.data(), static_cast<unsigned>(big.size()));
  gzclose(f);
  std::string bytes;
  {
    std::ifstream in(gz, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.resize(bytes.size() - 20);  // cut the trailer and some data
  { std::ofstream(gz, std::ios::binary) << bytes; }
  auto r = NewReader();
  Status st = r->ReadFile(gz);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_FALSE(r->stats().warnings.empty());
  EXPECT_GE(r->TakeObservations().size(), 1u);
  std::remove(gz.c_str());
}

TEST(KernelLogReaderTest, BootTimeDatesUptimeLines) {
  KernelLogOptions o;
  o.boot_time_ns = *ParseIso8601("2025-01-01T00:00:00Z");
  auto r = NewReader(o);
  r->Feed("[   60.000000] NVRM: Xid (PCI:0000:b5:00): 79, GPU has fallen off the bus.\n");
  r->Finish();
  auto obs = r->TakeObservations();
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].time_ns, *ParseIso8601("2025-01-01T00:01:00Z"));
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

// Every form the classifier recognizes must pass the Hyperscan prefilter, or the reader
// would silently skip it.
TEST(KernelLogReaderTest, PrefilterPassesEveryRecognizedForm) {
  const char* lines[] = {
      "NVRM: Xid (PCI:0000:b5:00): 13, pid=1, name=a, Graphics SM Warp Exception",
      "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 46 LTSSM Fault Up",
      "NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.",
      "NVRM: GPU at PCI:0000:3b:00: GPU-7f3c2e1a",
      "pcieport 0000:00:03.1: AER: Corrected error received: 0000:3b:00.0",
      "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
      "nvidia 0000:3b:00.0:   device [10de:2330] error status/mask=00000001/0000e000",
      "nvidia 0000:3b:00.0:    [ 0] RxErr                  (First)",
      "mce: [Hardware Error]: Machine check events logged",
      "EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#0_DIMM#0",
      "mlx5_core 0000:0c:00.0: mlx5_pcie_event:301:(pid 0): Detected insufficient power on the PCIe slot (27W).",
      "mlx5_core 0000:0c:00.0 ibp12s0: Link down",
      "watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:12345]",
      "INFO: task kworker/u16:2:341 blocked for more than 120 seconds.",
      "python3[48213]: segfault at 7f1c2b3a4000 ip 00007f1c29e1b2a4 sp 00007ffd5c9e0a10 error 4 in libnccl.so.2[7f+2]",
      "traps: pt_main_thread[9912] general protection fault ip:7f00 sp:7ffd error:0 in libcuda.so.1[7f00+1a]",
      "Out of memory: Killed process 77123 (python3) total-vm:8123kB",
      "NVRM: API mismatch: the client has the version 535.129.03, but",
      "NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x22:0x56:742)",
  };
  for (const char* line : lines) {
    KernelLogStats stats;
    ReadAll(std::string("[ 1.000000] ") + line + "\n", &stats);
    EXPECT_EQ(stats.classified_lines, 1u) << line;
  }
}

}  // namespace
}  // namespace faultline
