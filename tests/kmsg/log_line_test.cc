#include "parse/log_line.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace faultline {
namespace {

const int64_t kRef = *ParseIso8601("2025-03-01T00:00:00Z");

TEST(LogLineTest, RawKmsg) {
  auto l = ParseLogLine("6,3973,227996636,-;NVRM: Xid (PCI:0000:b5:00): 79, GPU has fallen off the bus.", kRef);
  EXPECT_EQ(l.format, LogFormat::kKmsgRaw);
  EXPECT_EQ(l.priority, 6);
  EXPECT_EQ(l.seq, 3973u);
  EXPECT_EQ(l.mono_us, 227996636);
  EXPECT_EQ(l.message.substr(0, 9), "NVRM: Xid");
  auto extra = ParseLogLine("4,12,5000,c,caller=T123;hello", kRef);
  EXPECT_EQ(extra.format, LogFormat::kKmsgRaw);
  EXPECT_EQ(extra.message, "hello");
  EXPECT_EQ(ParseLogLine(" SUBSYSTEM=pci", kRef).format, LogFormat::kKmsgContinuation);
}

TEST(LogLineTest, DmesgUptimeAndCtime) {
  auto l = ParseLogLine("[  123.456789] nvidia 0000:3b:00.0: PCIe Bus Error", kRef);
  EXPECT_EQ(l.format, LogFormat::kDmesg);
  EXPECT_EQ(l.mono_us, 123456789);
  EXPECT_EQ(l.message, "nvidia 0000:3b:00.0: PCIe Bus Error");
  auto t = ParseLogLine("[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:b5:00): 48, pid=1, name=x, DBE", kRef);
  EXPECT_EQ(t.format, LogFormat::kDmesgCtime);
  EXPECT_EQ(t.time_ns, *ParseIso8601("2025-02-23T16:24:18Z"));
  EXPECT_EQ(t.message.substr(0, 4), "NVRM");
}

TEST(LogLineTest, DmesgDecodeIsoAndUptime) {
  auto l = ParseLogLine("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:b5:00): 95, x", kRef);
  EXPECT_EQ(l.format, LogFormat::kDmesgDecode);
  EXPECT_EQ(l.time_ns, *ParseIso8601("2025-01-21T04:41:44.283302Z"));
  EXPECT_EQ(l.message.substr(0, 4), "NVRM");
  auto u = ParseLogLine("kern  :err   : [ 5.000001] mce: [Hardware Error]: Machine check events logged", kRef);
  EXPECT_EQ(u.mono_us, 5000001);
  EXPECT_EQ(u.message.substr(0, 4), "mce:");
}

TEST(LogLineTest, SyslogAndJournal) {
  auto l = ParseLogLine("Feb 02 09:56:04 node1 kernel: NVRM: Xid (PCI:0000:b5:00): 79, x", kRef);
  EXPECT_EQ(l.format, LogFormat::kSyslog);
  EXPECT_EQ(l.host, "node1");
  EXPECT_EQ(l.tag, "kernel");
  EXPECT_EQ(l.time_ns, *ParseIso8601("2025-02-02T09:56:04Z"));
  auto up = ParseLogLine("Feb  2 09:56:04 gpu-07 kernel: [ 1234.567890] NVRM: GPU at PCI:0000:3b:00: GPU-1", kRef);
  EXPECT_EQ(up.mono_us, 1234567890);
  EXPECT_EQ(up.message.substr(0, 4), "NVRM");
  auto iso = ParseLogLine("2025-01-21T04:41:44+0000 gpu-07 kernel: pcieport 0000:00:03.1: AER: x", kRef);
  EXPECT_EQ(iso.format, LogFormat::kIso);
  EXPECT_EQ(iso.host, "gpu-07");
  EXPECT_EQ(iso.message.substr(0, 8), "pcieport");
  auto other = ParseLogLine("Feb 02 09:56:04 node1 systemd[1]: Started foo.", kRef);
  EXPECT_EQ(other.tag, "systemd");
}

TEST(LogLineTest, PlainAndDamagedLines) {
  EXPECT_EQ(ParseLogLine("NVRM: Xid (PCI:0000:b5:00): 79, x", kRef).format, LogFormat::kPlain);
  for (const char* s :
       {"[", "[ 12.", "[abc] x", "6,", "6,1;", "6,1,2", "Feb 30 99:99:99 x kernel: y", "kern:", "1234567890", "\r"}) {
    LogLine l = ParseLogLine(s, kRef);
    EXPECT_LE(l.message.size(), std::string_view(s).size()) << s;
  }
  EXPECT_EQ(ParseLogLine("6,-1,5;x", kRef).format, LogFormat::kPlain);
}

}  // namespace
}  // namespace faultline
