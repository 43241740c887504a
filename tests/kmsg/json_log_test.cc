// Kernel logs saved as JSON (journalctl -o json / json-pretty / json-seq, dmesg --json):
// sniffed, turned back into lines, and read by the kernel log reader like any log.
#include "parse/json_log.h"

#include <gtest/gtest.h>

#include <string>

#include "core/time.h"
#include "engine/offline/snapshot.h"
#include "kmsg_test_util.h"

namespace faultline {
namespace {

using kmsg_test::Read;

const std::string kFell = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";
// 2026-02-10T08:15:30.250000Z in microseconds, as the journal writes it.
const std::string kUs = "1770711330250000";
const int64_t kNs = 1770711330250000LL * 1000;

std::string JournalRecord(const std::string& message_json, const std::string& extra = "") {
  return R"({"__CURSOR":"s=1;i=2","__REALTIME_TIMESTAMP":")" + kUs +
         R"(","_BOOT_ID":"b1","PRIORITY":"3","_TRANSPORT":"kernel","SYSLOG_IDENTIFIER":"kernel","_HOSTNAME":"gpu-b07",)" +
         extra + R"("MESSAGE":)" + message_json + "}";
}

std::string Convert(JsonLogForm form, const std::string& text, JsonLogStats* stats = nullptr, size_t chunk = 0) {
  JsonLogToText conv(form, 4096);
  std::string out;
  if (chunk == 0) chunk = text.size() + 1;
  for (size_t i = 0; i < text.size(); i += chunk) conv.Feed(std::string_view(text).substr(i, chunk), out);
  if (stats) *stats = conv.stats();
  return out;
}

std::string Quoted(const std::string& s) { return Json(s).dump(); }

TEST(JsonLogTest, SniffsJournalAndDmesgFormsAndLeavesOtherJsonAlone) {
  const std::string rec = JournalRecord(Quoted(kFell));
  EXPECT_EQ(SniffJsonLog(rec + "\n" + rec + "\n"), JsonLogForm::kJournal);
  EXPECT_EQ(SniffJsonLog("{\n\t\"__CURSOR\" : \"s=1\",\n\t\"MESSAGE\" : \"x\"\n}\n"), JsonLogForm::kJournal);
  EXPECT_EQ(SniffJsonLog("\x1e" + rec + "\n"), JsonLogForm::kJournal);  // json-seq
  EXPECT_EQ(SniffJsonLog("{\n   \"dmesg\": [\n"), JsonLogForm::kDmesg);
  EXPECT_EQ(SniffJsonLog(R"({"observations":[{"kind":"xid","MESSAGE":"x"}]})"), JsonLogForm::kNone);
  EXPECT_EQ(SniffJsonLog(R"({"MESSAGE":"a message in some other JSON"})"), JsonLogForm::kNone);
  EXPECT_EQ(SniffJsonLog("[1,2]"), JsonLogForm::kNone);
  EXPECT_EQ(SniffJsonLog(""), JsonLogForm::kNone);
  // The diagnose sniffer hands them to the kernel log reader.
  EXPECT_EQ(SniffSnapshot(rec + "\n"), SnapshotFormat::kJournalJson);
  EXPECT_EQ(SniffSnapshot("{\"dmesg\":[{\"pri\":3,\"time\":1.5,\"msg\":\"x\"}]}"), SnapshotFormat::kDmesgJson);
  EXPECT_EQ(SniffSnapshot("{\"observations\":[]}"), SnapshotFormat::kJson);
  EXPECT_TRUE(IsKernelLogFormat(SnapshotFormat::kJournalJson));
  EXPECT_FALSE(IsKernelLogFormat(SnapshotFormat::kJson));
}

TEST(JsonLogTest, JournalRecordIsReadAsADatedKernelLine) {
  for (const std::string& text : {JournalRecord(Quoted(kFell)) + "\n",  // json
                                  "\x1e" + JournalRecord(Quoted(kFell)) + "\n",  // json-seq
                                  // json-pretty: same record over several lines
                                  "{\n\t\"__REALTIME_TIMESTAMP\" : \"" + kUs +
                                      "\",\n\t\"SYSLOG_IDENTIFIER\" : \"kernel\",\n\t\"_HOSTNAME\" : \"gpu-b07\",\n\t"
                                      "\"MESSAGE\" : " +
                                      Quoted(kFell) + "\n}\n"}) {
    JsonLogStats stats;
    const std::string lines = Convert(JsonLogForm::kJournal, text, &stats);
    EXPECT_EQ(stats.records, 1u) << text;
    KernelLogStats read;
    auto obs = Read(lines, &read);
    ASSERT_EQ(obs.size(), 1u) << lines;
    EXPECT_EQ(obs[0].kind, ObsKind::kXid);
    EXPECT_EQ(obs[0].code, 79);
    EXPECT_EQ(obs[0].time_ns, kNs) << lines;
    EXPECT_EQ(read.host, "gpu-b07");
  }
}

TEST(JsonLogTest, MultiLineMessageStaysOneEvent) {
  // The driver's fallen-off-the-bus pair, and an AER header with its detail lines, as the
  // journal stores a message printed with embedded newlines.
  const std::string aer =
      "pcieport 0000:3a:00.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0\n"
      "  [ 5] SDES                  (First)\n";
  const std::string text = JournalRecord(Quoted("NVRM: GPU at PCI:0000:3b:00: GPU-0b1c\nNVRM: GPU Board Serial "
                                                "Number: 1650123456789\nNVRM: Xid (PCI:0000:3b:00): 79, GPU has "
                                                "fallen off the bus.")) +
                           "\n" + JournalRecord(Quoted(aer)) + "\n";
  const std::string lines = Convert(JsonLogForm::kJournal, text);
  EXPECT_NE(lines.find("\n   [ 5] SDES"), std::string::npos) << lines;  // detail line kept indented
  EXPECT_EQ(lines.find('\r'), std::string::npos);
  KernelLogStats stats;
  auto obs = Read(lines, &stats);
  bool xid79 = false;
  for (const Observation& o : obs) xid79 |= (o.kind == ObsKind::kXid && o.code == 79) || o.kind == ObsKind::kGpuFellOffBus;
  EXPECT_TRUE(xid79) << lines;
}

TEST(JsonLogTest, MessageAsByteArrayAndControlCharactersAreSafe) {
  std::string bytes = "[";
  const std::string msg = "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=x, DBE (0x1,0x2) \xff";
  for (size_t i = 0; i < msg.size(); ++i) bytes += (i ? "," : "") + std::to_string(static_cast<unsigned char>(msg[i]));
  bytes += "]";
  std::string lines = Convert(JsonLogForm::kJournal, JournalRecord(bytes) + "\n");
  auto obs = Read(lines);
  ASSERT_EQ(obs.size(), 1u) << lines;
  EXPECT_EQ(obs[0].code, 48);
  // A carriage return or escape sequence inside a message cannot start a new line.
  lines = Convert(JsonLogForm::kJournal, JournalRecord(Quoted("a\rb\x1b[31mc\x01")) + "\n");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1) << lines;
  // Host and identifier are single words whatever the record says.
  lines = Convert(JsonLogForm::kJournal,
                  R"({"__REALTIME_TIMESTAMP":")" + kUs +
                      R"(","_HOSTNAME":"evil host: kernel","SYSLOG_IDENTIFIER":"a b","MESSAGE":"m"})");
  EXPECT_NE(lines.find(" evilhostkernel ab: m\n"), std::string::npos) << lines;
}

TEST(JsonLogTest, ChunkingDoesNotChangeTheOutput) {
  std::string text;
  for (int i = 0; i < 20; ++i) text += JournalRecord(Quoted(kFell + " {\"brace\": [in a string]}")) + "\n";
  const std::string whole = Convert(JsonLogForm::kJournal, text);
  for (size_t chunk : {1u, 3u, 64u, 1000u}) EXPECT_EQ(Convert(JsonLogForm::kJournal, text, nullptr, chunk), whole);
}

TEST(JsonLogTest, DamagedRecordsCostOnlyThemselves) {
  const std::string good = JournalRecord(Quoted(kFell));
  std::string text = good + "\n";
  text += good.substr(0, good.size() / 2) + "\n";               // cut inside the message string
  text += good.substr(0, good.find("\"MESSAGE\"")) + "\n";      // cut between fields
  text += "{\"__REALTIME_TIMESTAMP\":\"x\",\"MESSAGE\":17}\n";  // message of the wrong type
  text += "garbage line\n";
  text += R"({"MESSAGE":"big","PAD":")" + std::string(10000, 'p') + "\"}\n";  // over the 4 KiB cap
  text += good + "\n";
  JsonLogStats stats;
  const std::string lines = Convert(JsonLogForm::kJournal, text, &stats);
  EXPECT_EQ(stats.records, 2u) << lines;
  EXPECT_EQ(stats.bad, 3u);
  EXPECT_EQ(stats.oversized, 1u);
  EXPECT_EQ(Read(lines).size(), 1u);  // the same XID twice folds into one
}

// A stamp past what nanoseconds hold, as a string or a bare number, leaves the line undated
// rather than wrapping into a negative or bogus time.
TEST(JsonLogTest, AnOutOfRangeStampLeavesTheLineUndated) {
  for (const std::string stamp : {"18446744073709551615", "\"18446744073709551615\"", "9000000000000001"}) {
    const std::string text = R"({"__REALTIME_TIMESTAMP":)" + stamp + R"(,"_TRANSPORT":"kernel","MESSAGE":)" +
                             Quoted(kFell) + "}\n";
    JsonLogStats stats;
    const std::string lines = Convert(JsonLogForm::kJournal, text, &stats);
    EXPECT_EQ(stats.records, 1u) << stamp;
    EXPECT_EQ(lines.rfind("NVRM: Xid", 0), 0u) << lines;
    auto obs = Read(lines);
    ASSERT_EQ(obs.size(), 1u) << stamp;
    EXPECT_EQ(obs[0].code, 79);
  }
}

TEST(JsonLogTest, HostileNestingAndBracketsAreBounded) {
  std::string deep = "{\"MESSAGE\":" + std::string(100000, '[') + "\n";
  deep += JournalRecord(Quoted(kFell)) + "\n";
  JsonLogStats stats;
  const std::string lines = Convert(JsonLogForm::kJournal, deep, &stats);
  EXPECT_EQ(stats.records, 1u) << stats.bad << " " << stats.oversized;
  EXPECT_EQ(Convert(JsonLogForm::kJournal, std::string(100000, '}') + std::string(100000, ']')), "");
}

TEST(JsonLogTest, DmesgJsonRecordsKeepTheirStamps) {
  const std::string text = "{\n   \"dmesg\": [\n      {\n         \"pri\": 6,\n         \"time\":     0.000000,\n"
                           "         \"msg\": \"Linux version 6.1.0\"\n      },{\n         \"pri\": 3,\n"
                           "         \"time\":  1234.567890,\n         \"msg\": " +
                           Quoted(kFell) +
                           "\n      },{\n         \"pri\": 3,\n         \"time\": \"2026-02-10T08:15:31,000000+00:00\",\n"
                           "         \"msg\": " +
                           Quoted(kFell) + "\n      }\n   ]\n}\n";
  JsonLogStats stats;
  const std::string lines = Convert(JsonLogForm::kDmesg, text, &stats, 7);
  EXPECT_EQ(stats.records, 3u) << lines;
  EXPECT_NE(lines.find("[ 1234.567890] NVRM: Xid"), std::string::npos) << lines;
  EXPECT_NE(lines.find("2026-02-10T08:15:31,000000+00:00 NVRM: Xid"), std::string::npos) << lines;
  KernelLogOptions o;
  o.boot_time_ns = kNs - 1234'567'890'000LL;
  auto obs = Read(lines, nullptr, o);
  ASSERT_FALSE(obs.empty()) << lines;
  EXPECT_EQ(obs[0].code, 79);
  EXPECT_EQ(obs[0].time_ns, kNs);
}

}  // namespace
}  // namespace faultline
