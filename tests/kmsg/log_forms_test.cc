// Every text form of a kernel log a user may have, several made-up variants each, read
// by ParseLogLine alone (forms) and through the whole reader (XID recognized and dated),
// plus hostile and damaged prefixes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/time.h"
#include "kmsg_test_util.h"
#include "parse/log_line.h"
#include "sources/kmsg/log_reader.h"

namespace faultline {
namespace {

using namespace std::string_literals;

using kmsg_test::kRef;
using kmsg_test::Read;

int64_t Utc(const char* iso) { return *ParseIso8601(iso); }

const std::string kXid = "NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=trainer, Ch 00000010, MMU Fault";

struct FormCase {
  std::string line;
  LogFormat format;
  int64_t time_ns;                 // 0 = undated
  std::optional<int64_t> mono_us;  // when printed
  std::string host;
  std::string tag;
};

std::vector<FormCase> Cases() {
  const std::string& m = kXid;
  return {
      // syslog, host name, no host name, single-digit day, uptime after the tag
      {"Feb 14 07:03:59 gpu-a17 kernel: " + m,
       LogFormat::kSyslog,
       Utc("2025-02-14T07:03:59Z"),
       {},
       "gpu-a17",
       "kernel"},
      {"Feb  4 07:03:59 n0042.cluster.example kernel: " + m,
       LogFormat::kSyslog,
       Utc("2025-02-04T07:03:59Z"),
       {},
       "n0042.cluster.example",
       "kernel"},
      {"Jan 30 23:59:01 kernel: " + m, LogFormat::kSyslog, Utc("2025-01-30T23:59:01Z"), {}, "", "kernel"},
      {"Jan  3 00:00:09 kernel: [ 5501.000250] " + m, LogFormat::kSyslog, Utc("2025-01-03T00:00:09Z"), 5501000250, "",
       "kernel"},
      {"Feb 28 11:12:13 10.20.30.40 kernel: [   17.5] " + m, LogFormat::kSyslog, Utc("2025-02-28T11:12:13Z"), 17500000,
       "10.20.30.40", "kernel"},
      // journalctl short-precise (microseconds)
      {"Feb 14 07:03:59.012345 gpu-a17 kernel: " + m,
       LogFormat::kSyslog,
       Utc("2025-02-14T07:03:59.012345Z"),
       {},
       "gpu-a17",
       "kernel"},
      {"Feb 14 07:03:59.5 kernel: " + m, LogFormat::kSyslog, Utc("2025-02-14T07:03:59.5Z"), {}, "", "kernel"},
      // no date at all
      {"18:27:36 kernel: " + m, LogFormat::kTimeOfDay, 0, {}, "", "kernel"},
      {"18:27:36 node9 kernel: [  88.000001] " + m, LogFormat::kTimeOfDay, 0, 88000001, "node9", "kernel"},
      {"06:00:00.250 kernel: " + m, LogFormat::kTimeOfDay, 0, {}, "", "kernel"},
      // dmesg -T
      {"[Fri Feb 14 07:03:59 2025] " + m, LogFormat::kDmesgCtime, Utc("2025-02-14T07:03:59Z"), {}, "", ""},
      {"[Mon Mar  3 01:02:03 2025] " + m, LogFormat::kDmesgCtime, Utc("2025-03-03T01:02:03Z"), {}, "", ""},
      // dmesg, dmesg -d / --show-delta, dmesg -r, journal short-monotonic
      {"[  991.250000] " + m, LogFormat::kDmesg, 0, 991250000, "", ""},
      {"[    0.000001] " + m, LogFormat::kDmesg, 0, 1, "", ""},
      {"[  991.250000 <    0.000844>] " + m, LogFormat::kDmesg, 0, 991250000, "", ""},
      {"<3>[  991.250000] " + m, LogFormat::kDmesg, 0, 991250000, "", ""},
      {"[  991.250000] gpu-a17 kernel: " + m, LogFormat::kDmesg, 0, 991250000, "gpu-a17", "kernel"},
      // dmesg --reltime / --time-format delta
      {"[  +0.000844] " + m, LogFormat::kDmesgReltime, 0, {}, "", ""},
      {"[+12.500000] " + m, LogFormat::kDmesgReltime, 0, {}, "", ""},
      {"[<    0.000844>] " + m, LogFormat::kDmesgReltime, 0, {}, "", ""},
      {"[Feb14 07:03] " + m, LogFormat::kDmesgReltime, Utc("2025-02-14T07:03:00Z"), {}, "", ""},
      {"[Dec 1 10:00] " + m, LogFormat::kDmesgReltime, Utc("2024-12-01T10:00:00Z"), {}, "", ""},
      {"[Jan  9 22:41] " + m, LogFormat::kDmesgReltime, Utc("2025-01-09T22:41:00Z"), {}, "", ""},
      // dmesg -x and --time-format iso (a comma fraction, no host or tag)
      {"kern  :err   : [  991.250000] " + m, LogFormat::kDmesgDecode, 0, 991250000, "", ""},
      {"kern  :warn  : 2025-02-14T07:03:59,012345+00:00 " + m,
       LogFormat::kDmesgDecode,
       Utc("2025-02-14T07:03:59.012345Z"),
       {},
       "",
       ""},
      {"2025-02-14T07:03:59,012345+01:00 " + m, LogFormat::kIso, Utc("2025-02-14T06:03:59.012345Z"), {}, "", ""},
      // journalctl short-iso / short-iso-precise / rsyslog high precision
      {"2025-02-14T07:03:59+0000 gpu-a17 kernel: " + m,
       LogFormat::kIso,
       Utc("2025-02-14T07:03:59Z"),
       {},
       "gpu-a17",
       "kernel"},
      {"2025-02-14T07:03:59.012345+00:00 gpu-a17 kernel: " + m,
       LogFormat::kIso,
       Utc("2025-02-14T07:03:59.012345Z"),
       {},
       "gpu-a17",
       "kernel"},
      {"2025-02-14T09:03:59.012345+02:00 kernel: [ 12.000003] " + m, LogFormat::kIso,
       Utc("2025-02-14T07:03:59.012345Z"), 12000003, "", "kernel"},
      {"2025-02-14 07:03:59 gpu-a17 kernel: " + m,
       LogFormat::kIso,
       Utc("2025-02-14T07:03:59Z"),
       {},
       "gpu-a17",
       "kernel"},
      // journalctl short-unix
      {"1739516639.012345 gpu-a17 kernel: " + m,
       LogFormat::kUnix,
       Utc("2025-02-14T07:03:59.012345Z"),
       {},
       "gpu-a17",
       "kernel"},
      // RFC 5424, as rsyslog/syslog-ng forward it: nil fields, structured data with a
      // quoted ']' and an escaped quote, a BOM before the message, a zone offset
      {"<3>1 2025-02-14T07:03:59.012345Z gpu-a17 kernel - - - " + m,
       LogFormat::kRfc5424,
       Utc("2025-02-14T07:03:59.012345Z"),
       {},
       "gpu-a17",
       "kernel"},
      {"<4>1 2025-02-14T08:03:59+01:00 n7.example kernel 0 KERN [meta sequenceId=\"12\" note=\"a ] \\\"b\"][x@1 y=\"z\"] " + m,
       LogFormat::kRfc5424, Utc("2025-02-14T07:03:59Z"), {}, "n7.example", "kernel"},
      {"<3>1 2025-02-14T07:03:59Z gpu-a17 kernel - - - \xEF\xBB\xBF[ 5501.000250] " + m, LogFormat::kRfc5424,
       Utc("2025-02-14T07:03:59Z"), 5501000250, "gpu-a17", "kernel"},
      {"<3>1 - - kernel - - - " + m, LogFormat::kRfc5424, 0, {}, "", "kernel"},
      // raw /dev/kmsg record, and journalctl -o cat with its tag
      {"4,1234,991250000,-;" + m, LogFormat::kKmsgRaw, 0, 991250000, "", ""},
      {"kernel: " + m, LogFormat::kPlain, 0, {}, "", "kernel"},
      // bare message, as pasted into a ticket
      {m, LogFormat::kPlain, 0, {}, "", ""},
  };
}

TEST(LogFormsTest, EachFormIsSplitAndDated) {
  for (const FormCase& c : Cases()) {
    const LogLine l = ParseLogLine(c.line, kRef);
    EXPECT_EQ(ToString(l.format), ToString(c.format)) << c.line;
    EXPECT_EQ(l.message, kXid) << c.line;
    EXPECT_EQ(l.time_ns, c.time_ns) << c.line;
    EXPECT_EQ(l.mono_us, c.mono_us) << c.line;
    EXPECT_EQ(l.host, c.host) << c.line;
    EXPECT_EQ(l.tag, c.tag) << c.line;
    EXPECT_FALSE(l.indented) << c.line;
  }
}

TEST(LogFormsTest, TheReaderRecognizesAndDatesTheXidInEveryForm) {
  for (const FormCase& c : Cases()) {
    auto obs = Read("Feb 14 07:00:00 gpu-a17 systemd[1]: Started Session 9 of User ops.\n" + c.line + "\n");
    ASSERT_EQ(obs.size(), 1u) << c.line;
    EXPECT_EQ(obs[0].kind, ObsKind::kXid) << c.line;
    EXPECT_EQ(obs[0].code, 31) << c.line;
    EXPECT_EQ(obs[0].attrs.at("pid"), "4242") << c.line;
    EXPECT_EQ(obs[0].time_ns, c.time_ns) << c.line;
    EXPECT_EQ(obs[0].raw, c.line);
  }
}

TEST(LogFormsTest, AnXidLineIsAnXidLineWhateverPrecedesNvrm) {
  for (const std::string prefix : {"ticket #4411: customer says ", "gpu-a17 | 2025/02/14 07:03:59 | ",
                                   "<kern.warning> ", "*** ", "[drm] ", "kernel: [  12.5] foo "}) {
    auto obs = Read(prefix + kXid + "\n");
    ASSERT_EQ(obs.size(), 1u) << prefix;
    EXPECT_EQ(obs[0].kind, ObsKind::kXid) << prefix;
    EXPECT_EQ(obs[0].code, 31) << prefix;
    EXPECT_EQ(obs[0].component.Id(), "gpu/0000:3b:00.0") << prefix;
  }
}

TEST(LogFormsTest, IndentedLinesAreContinuationsNotKmsgDictionary) {
  for (const char* s : {"  device [10de:2330] error status/mask=00004000/00000000", "\t[14] CmpltTO",
                        "   NVRM: installed in this system has fallen off the bus", " lower case=1", " A B=C"}) {
    const LogLine l = ParseLogLine(s, kRef);
    EXPECT_EQ(l.format, LogFormat::kIndented) << s;
    EXPECT_TRUE(l.indented) << s;
  }
  for (const char* s : {" SUBSYSTEM=pci", " DEVICE=+pci:0000:3b:00.0", " X_1=2"}) {
    const LogLine l = ParseLogLine(s, kRef);
    EXPECT_EQ(l.format, LogFormat::kKmsgContinuation) << s;
    EXPECT_FALSE(l.indented) << s;
  }
  // Indented after the prefix: the message starts with a blank.
  for (const char* s : {"[  12.000001]    [14] CmpltTO", "Feb 14 07:03:59 gpu-a17 kernel:   TLP Header: 4a000001",
                        "2025-02-14T07:03:59.5+00:00 gpu-a17 kernel:  device [10de:2330] error status/mask=1/0",
                        "kern  :err   : [  1.5]    [ 5] SDES"}) {
    EXPECT_TRUE(ParseLogLine(s, kRef).indented) << s;
  }
  EXPECT_FALSE(ParseLogLine("[  12.000001] NVRM: Xid (PCI:0000:3b:00): 31, x", kRef).indented);
}

// An eleven-digit short-unix stamp has the shape but not the range of a time: it must not
// overflow into a date (UBSan traps the multiplication in the sanitizer build).
TEST(LogFormsTest, AnOutOfRangeUnixStampIsNotADate) {
  const LogLine l = ParseLogLine("99999999999.123456 gpu-a17 kernel: " + kXid, kRef);
  EXPECT_NE(l.format, LogFormat::kUnix);
  EXPECT_EQ(l.time_ns, 0);
  const LogLine ok = ParseLogLine("3999999999.854775 gpu-a17 kernel: " + kXid, kRef);
  EXPECT_EQ(ok.format, LogFormat::kUnix);
  EXPECT_EQ(ok.time_ns, 3999999999854775000);
  // The same bound on a dmesg uptime, which the reader later adds to the boot time in ns.
  EXPECT_FALSE(ParseLogLine("[99999999999.000000] " + kXid, kRef).mono_us.has_value());
}

// Every view the parser returns lies inside the line it was given.
void ExpectInside(std::string_view line, const LogLine& l) {
  for (std::string_view v : {l.message, l.host, l.tag}) {
    if (v.empty()) continue;
    EXPECT_GE(v.data(), line.data());
    EXPECT_LE(v.data() + v.size(), line.data() + line.size());
  }
}

TEST(LogFormsTest, TruncatedHugeBinaryAndHostilePrefixesStayPlainAndBounded) {
  std::vector<std::string> lines = {
      "Feb 14 07:0",
      "Feb 14 07:03:59",
      "Feb 14 07:03:59.",
      "Feb 14 07:03:59.123",
      "2025-02-14T07:0",
      "2025-02-14T07:03:59",
      "2025-02-14T07:03:59+00:00",
      "1739516639.",
      "1739516639.5",
      "18:27:3",
      "18:27:36",
      "18:27:36 ",
      "[",
      "[ ",
      "[  12.",
      "[  +",
      "[  +0.1",
      "[<",
      "[<  0.1",
      "[Feb14",
      "[Feb14 07:0",
      "[Feb99 07:03] x",
      "[Feb14 25:61] x",
      "<",
      "<4",
      "<4>",
      "<99999999999>x",
      "<->x",
      "kern  :",
      "kern  :err   :",
      "kernel:",
      "Feb 14 07:03:59 host kernel:",
      "6,1,2,-",
      "6,1,2,-;",
      " ",
      "\t",
      "\r",
      "[Sun Feb 30 07:03:59 2025] x",
      "Feb 30 07:03:59 host kernel: x",
      "9999-99-99T99:99:99 host kernel: x",
      "99999999999999.1 host kernel: x",
  };
  lines.push_back(std::string(1 << 20, '['));                                     // huge, one bracket after another
  lines.push_back("[" + std::string(100000, ' ') + "12.5] " + kXid);              // prefix far past any real one
  lines.push_back(std::string(200000, '9') + "." + std::string(10, '1'));         // digits forever
  lines.push_back("Feb 14 07:03:59 " + std::string(100000, 'h') + " kernel: x");  // endless host
  lines.push_back("Feb 14 07:03:59 h " + std::string(100000, 't') + ": x");       // endless tag
  lines.push_back("\x00\xff\xfe[ 1.0]\x01\x02 NVRM:\x00"s);
  lines.push_back("Feb 14 07:03:59 h kernel: \x00\x00\x00"s);
  for (const std::string& s : lines) {
    const LogLine l = ParseLogLine(s, kRef);
    ExpectInside(s, l);
    EXPECT_LE(l.message.size(), s.size());
  }
  // The hostile long prefix is not read as a stamp (no scan past 64 bytes), so the
  // whole line is the message.
  const std::string far = "[" + std::string(100000, ' ') + "12.5] " + kXid;
  EXPECT_EQ(ParseLogLine(far, kRef).format, LogFormat::kPlain);
  EXPECT_EQ(ParseLogLine("[Feb99 07:03] x", kRef).format, LogFormat::kPlain);
  EXPECT_EQ(ParseLogLine("<4>", kRef).priority, -1);  // nothing after it: no record
}

TEST(LogFormsTest, DamagedFormsThroughTheReaderNeverCrashAndKeepGoodLines) {
  std::string log;
  log += "Feb 14 07:0\n[  +\n18:27:3\n<4\n" + std::string(70000, '[') + "\n";
  log += "\x00\xff kernel: NVRM: Xid (PCI:0000:3b:00): 31, x\n"s;
  log += "Feb 14 07:03:59 gpu-a17 kernel: " + kXid + "\n";
  log += "   \n\t\n";  // blank indented lines after it continue nothing
  KernelLogStats stats;
  auto obs = Read(log, &stats);
  ASSERT_GE(obs.size(), 1u);
  EXPECT_EQ(obs.back().kind, ObsKind::kXid);
  EXPECT_EQ(obs.back().time_ns, Utc("2025-02-14T07:03:59Z"));
  EXPECT_EQ(stats.truncated_lines, 1u);
  EXPECT_EQ(stats.binary_lines, 1u);
}

}  // namespace
}  // namespace faultline
