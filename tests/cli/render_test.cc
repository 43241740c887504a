// The terminal rendering (cli/render.h): repeats that differ only in numbers fold into one
// line with a count, the latest text and the range of the one number that moved.
#include "cli/render.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace faultline::cli {
namespace {

constexpr int64_t kT0 = 1764460800LL * 1'000'000'000;  // 2025-11-30T00:00:00Z
constexpr int64_t kSec = 1'000'000'000;

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

Evidence Line(int64_t t, Source source, std::string component, std::string text) {
  return Evidence{t, std::nullopt, source, std::move(component), std::move(text), 1};
}

std::string Evidences(const std::vector<Evidence>& evidence, size_t max_lines = 12) {
  std::ostringstream out;
  RenderEvidence(out, evidence, max_lines);
  return out.str();
}

TEST(CliRender, MaskNumbersKeepsPciAddressesWhole) {
  MaskedText m = MaskNumbers("/sys/bus/pci/devices/0000:89:00.0/aer_dev_correctable: TOTAL_ERR_COR 181");
  EXPECT_EQ(m.mask, "/sys/bus/pci/devices/0000:89:00.0/aer_dev_correctable: TOTAL_ERR_COR #");
  EXPECT_EQ(m.numbers, std::vector<double>{181});
  m = MaskNumbers("NVRM: Xid (PCI:0000:0e:00): 13, pid=52109 at 1.5 s, mask 0x68");
  EXPECT_EQ(m.mask, "NVRM: Xid (PCI:0000:0e:00): #, pid=# at # s, mask #");
  EXPECT_EQ(m.numbers, (std::vector<double>{13, 52109, 1.5, 0x68}));
  // Two devices stay two texts; a time of day is numbers.
  EXPECT_NE(MaskNumbers("AER on 3b:00.0").mask, MaskNumbers("AER on 3b:00.1").mask);
  EXPECT_EQ(MaskNumbers("at 10:00:05").mask, "at #:#:#");
}

TEST(CliRender, CounterReadAgainFoldsToTheLatestWithItsRange) {
  std::vector<Evidence> ev;
  int value = 6;
  for (int i = 0; i < 8; ++i, value += 25) {
    ev.push_back(
        Line(kT0 + i * 5 * kSec, Source::kNvml, "gpu/6", "nvmlDeviceGetPcieReplayCounter=" + std::to_string(value)));
  }
  ev.push_back(Line(kT0 + 60 * kSec, Source::kNvml, "gpu/5", "nvmlDeviceGetPcieReplayCounter=0"));
  const std::string text = Evidences(ev);
  EXPECT_EQ(Lines(text), 2u) << text;
  EXPECT_NE(text.find("gpu/6: nvmlDeviceGetPcieReplayCounter=181  (x8 since 2025-11-30T00:00:00.000000Z, 6 .. 181)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("ReplayCounter=31"), std::string::npos) << text;  // no version but the latest
  EXPECT_NE(text.find("gpu/5: nvmlDeviceGetPcieReplayCounter=0\n"), std::string::npos) << text;
}

TEST(CliRender, LogStormFoldsWithACountButNoRange) {
  std::vector<Evidence> ev;
  for (int i = 0; i < 12; ++i) {
    ev.push_back(Line(kT0 + i * 2 * kSec, Source::kKmsg, "gpu/3",
                      "4," + std::to_string(19 + i) + ",259309000000,-;NVRM: Xid (PCI:0000:0e:00): 13, pid=52109, " +
                          "Graphics SM Warp Exception on (GPC " + std::to_string(i % 8) + ", TPC 0, SM 0)"));
  }
  ev.back().count = 4;  // repeats the source already folded count as theirs
  const std::string text = Evidences(ev);
  EXPECT_EQ(Lines(text), 1u) << text;
  EXPECT_NE(text.find("(GPC 3, TPC 0, SM 0)  (x15 since 2025-11-30T00:00:00.000000Z)"), std::string::npos) << text;
}

TEST(CliRender, LinesWithoutAComponentOrWithOtherWordsNeverFold) {
  const std::vector<Evidence> ev{
      Line(kT0, Source::kKmsg, "", "pcieport 0000:00:01.0: AER: Corrected error 1"),
      Line(kT0 + kSec, Source::kKmsg, "", "pcieport 0000:00:01.0: AER: Corrected error 2"),
      Line(kT0 + 2 * kSec, Source::kKmsg, "gpu/1", "Xid 48: double bit error"),
      Line(kT0 + 3 * kSec, Source::kKmsg, "gpu/1", "Xid 63: row remapping"),
  };
  EXPECT_EQ(Lines(Evidences(ev)), 4u) << Evidences(ev);
}

TEST(CliRender, EvidenceCapCountsTheHiddenLines) {
  std::vector<Evidence> ev;
  for (int g = 0; g < 4; ++g) {
    for (int i = 0; i < 3; ++i) ev.push_back(Line(kT0 + i * kSec, Source::kNvml, "gpu/" + std::to_string(g), "t=1"));
  }
  const std::string text = Evidences(ev, 2);
  EXPECT_EQ(Lines(text), 3u) << text;
  EXPECT_NE(text.find("... 6 more (see --json)"), std::string::npos) << text;
}

Finding Thermal(int64_t first, int64_t last, uint64_t count, double celsius, const std::string& key = "thermal|7") {
  Finding f;
  f.layer = Layer::kGpu;
  f.component = GpuComponent("7");
  f.fault_class = FaultClass::kGpuThermal;
  f.severity = Severity::kWarning;
  f.action = Action::kMonitor;
  f.first_ns = first;
  f.last_ns = last;
  f.count = count;
  f.key = key;
  char buf[96];
  std::snprintf(buf, sizeof buf, "GPU temperature %g C above its slowdown threshold 87 C on gpu/7", celsius);
  f.summary = buf;
  return f;
}

TEST(CliRender, VersionsOfOneFindingSayTheLatestValueAndTheRange) {
  std::ostringstream out;
  RenderFindings(out, {Thermal(kT0, kT0 + 5 * kSec, 1, 88), Thermal(kT0, kT0 + 10 * kSec, 2, 91),
                       Thermal(kT0, kT0 + 15 * kSec, 3, 90)});
  const std::string text = out.str();
  EXPECT_EQ(Lines(text), 2u) << text;
  EXPECT_NE(text.find("- gpu_thermal [gpu] gpu/7  action monitor  severity warning  x3\n"), std::string::npos)
      << text;  // one finding at its latest count, not 1 + 2 + 3
  EXPECT_NE(text.find("GPU temperature 90 C above its slowdown threshold 87 C on gpu/7  (latest of 3; 88 .. 91)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("91 C"), std::string::npos) << text;
}

TEST(CliRender, DistinctEventsAlikeFoldIntoOneLineWithTheirCount) {
  std::vector<Finding> findings;
  for (int i = 0; i < 12; ++i)
    findings.push_back(Thermal(kT0 + i * kSec, kT0 + i * kSec, 1, 88 + i % 3, "e" + std::to_string(i)));
  Finding other = Thermal(kT0, kT0, 1, 95);
  other.component = GpuComponent("6");
  findings.push_back(other);
  std::ostringstream out;
  RenderFindings(out, findings);
  const std::string text = out.str();
  EXPECT_EQ(Lines(text), 4u) << text;
  EXPECT_NE(text.find("gpu/7  action monitor  severity warning  x12  (12 findings)"), std::string::npos) << text;
  EXPECT_NE(text.find("- gpu_thermal [gpu] gpu/6  action monitor  severity warning  x1\n"), std::string::npos) << text;
}

TEST(CliRender, DiagnosesAlikeFoldUnderTheFirst) {
  Diagnosis a;
  a.fault_class = FaultClass::kUserApplication;
  a.layer = Layer::kOs;
  a.component = GpuComponent("3");
  a.action = Action::kNotifyUser;
  a.severity = Severity::kWarning;
  a.confidence = 0.8;
  a.summary = "XID 13 on GPU 3 GPC 0 TPC 0 from program python3 (pid 52109)";
  Diagnosis b = a;
  b.summary = "XID 13 on GPU 3 GPC 4 TPC 3 from program python3 (pid 52109)";
  Diagnosis c = a;
  c.component = GpuComponent("4");
  std::ostringstream out;
  RenderDiagnoses(out, {a, b, c});
  const std::string text = out.str();
  EXPECT_NE(text.find("1. user_application  [os]  gpu/3  x2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("GPC 0 TPC 0"), std::string::npos) << text;  // the first (most important) one
  EXPECT_EQ(text.find("GPC 4 TPC 3"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 more like it, differing only in numbers: see --json)"), std::string::npos) << text;
  EXPECT_NE(text.find("2. user_application  [os]  gpu/4\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace faultline::cli
