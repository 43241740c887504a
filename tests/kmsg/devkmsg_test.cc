#include "sources/kmsg/devkmsg.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>

namespace faultline {
namespace {

// Scripted /dev/kmsg: each entry is one read() result (a record, or an errno).
class ScriptedKmsg final : public KmsgDevice {
 public:
  struct Step {
    std::string record;
    int err = 0;
  };
  explicit ScriptedKmsg(std::deque<Step> steps) : steps_(std::move(steps)) {}
  long Read(char* buf, size_t len, int& err) override {
    if (steps_.empty()) {
      err = EAGAIN;
      return -1;
    }
    Step s = steps_.front();
    steps_.pop_front();
    if (s.err) {
      err = s.err;
      return -1;
    }
    if (s.record.size() > len) {
      err = EINVAL;
      return -1;
    }
    std::memcpy(buf, s.record.data(), s.record.size());
    err = 0;
    return static_cast<long>(s.record.size());
  }
  Status SeekOldest() override { return Status::Ok(); }
  Status SeekEnd() override { return Status::Ok(); }
  bool Wait(int) override { return !steps_.empty(); }

 private:
  std::deque<Step> steps_;
};

const FakeClock kClock(/*now=*/1'700'000'000'000'000'000, /*boot=*/1'000'000'000'000);

TEST(KmsgRecordTest, ParsesRecordWithDictionary) {
  auto rec = ParseKmsgRecord(
      "3,3973,227996636,-;nvidia 0000:3b:00.0: PCIe Bus Error\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->priority, 3);
  EXPECT_EQ(rec->seq, 3973u);
  EXPECT_EQ(rec->ts_us, 227996636);
  EXPECT_EQ(rec->dict.at("DEVICE"), "+pci:0000:3b:00.0");
  EXPECT_EQ(ParseKmsgRecord("garbage").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseKmsgRecord("").status().code(), StatusCode::kCorrupt);
}

TEST(KmsgReaderTest, ReadsRecordsReportsGapsAndResumes) {
  std::deque<ScriptedKmsg::Step> steps = {
      {"6,10,1000000,-;NVRM: Xid (PCI:0000:b5:00): 13, pid=5, name=a, Graphics Exception\n"},
      {"", EPIPE},  // ring overwrote records 11..14
      {"6,15,2000000,-;NVRM: Xid (PCI:0000:b5:00): 48, pid=5, name=a, DBE\n"},
      {"not a record"},
      {"6,16,3000000,-;usb 1-1: new device\n"},
  };
  KmsgReader reader(std::make_unique<ScriptedKmsg>(steps), KmsgReaderOptions{"n1", std::nullopt, false}, kClock);
  ASSERT_TRUE(reader.Start().ok());
  auto batch = reader.ReadAvailable();
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->records, 3u);
  EXPECT_EQ(batch->corrupt_records, 1u);
  ASSERT_EQ(batch->gaps.size(), 1u);
  EXPECT_EQ(batch->gaps[0].first_lost_seq, 11u);
  EXPECT_EQ(batch->gaps[0].last_lost_seq, 14u);
  ASSERT_EQ(batch->observations.size(), 2u);
  EXPECT_EQ(batch->observations[0].code, 13);
  EXPECT_EQ(batch->observations[1].seq, 15u);
  // UTC = (now - boottime) + monotonic.
  EXPECT_EQ(batch->observations[0].time_ns, kClock.NowNs() - kClock.BootTimeNs() + 1'000'000'000);
  EXPECT_EQ(batch->last_seq, 16u);
}

TEST(KmsgReaderTest, ResumeSkipsRecordsAlreadyProcessed) {
  std::deque<ScriptedKmsg::Step> steps = {
      {"6,10,1000000,-;NVRM: Xid (PCI:0000:b5:00): 13, pid=5, name=a, x\n"},
      {"6,11,1000001,-;NVRM: Xid (PCI:0000:b5:00): 31, pid=5, name=a, y\n"},
  };
  KmsgReader reader(std::make_unique<ScriptedKmsg>(steps), KmsgReaderOptions{"n1", 10, false}, kClock);
  auto batch = reader.ReadAvailable();
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->observations.size(), 1u);
  EXPECT_EQ(batch->observations[0].code, 31);
  EXPECT_TRUE(batch->gaps.empty());
}

TEST(KmsgReaderTest, MissedRecordsWhileDownAreAGap) {
  std::deque<ScriptedKmsg::Step> steps = {{"6,20,1000000,-;hello\n"}};
  KmsgReader reader(std::make_unique<ScriptedKmsg>(steps), KmsgReaderOptions{"n1", 10, false}, kClock);
  auto batch = reader.ReadAvailable();
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->gaps.size(), 1u);
  EXPECT_EQ(batch->gaps[0].first_lost_seq, 11u);
  EXPECT_EQ(batch->gaps[0].last_lost_seq, 19u);
}

TEST(KmsgReaderTest, RealDevKmsgWhenReadable) {
  auto dev = FdKmsgDevice::Open("/dev/kmsg");
  if (!dev.ok()) GTEST_SKIP() << dev.status().ToString();
  SystemClock clock;
  KmsgReader reader(std::move(dev).value(), KmsgReaderOptions{"local", std::nullopt, false}, clock);
  if (!reader.Start().ok()) GTEST_SKIP() << "cannot seek /dev/kmsg";
  auto batch = reader.ReadAvailable();
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->corrupt_records, 0u);
}

TEST(KmsgReaderTest, MissingDeviceIsUnavailableNotACrash) {
  auto dev = FdKmsgDevice::Open("/nonexistent/kmsg");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("/nonexistent/kmsg"), std::string::npos);
}

}  // namespace
}  // namespace faultline
