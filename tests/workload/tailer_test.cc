#include "sources/workload/tailer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/clock.h"
#include "sources/workload/file_source.h"

namespace faultline {
namespace {

class WorkloadTailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("faultline-workload-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "steps.log").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Append(const std::string& text) {
    std::ofstream out(path_, std::ios::app | std::ios::binary);
    out << text;
  }
  void Rewrite(const std::string& text) {
    std::ofstream out(path_, std::ios::trunc | std::ios::binary);
    out << text;
  }
  TailOptions Options() const {
    TailOptions o;
    o.path = path_;
    return o;
  }
  std::vector<std::string> PollLines(FileTailer& t) {
    auto b = t.Poll();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? b->lines : std::vector<std::string>{};
  }

  std::filesystem::path dir_;
  std::string path_;
};

using Lines = std::vector<std::string>;

TEST_F(WorkloadTailTest, MissingFileIsNotFoundUntilItAppears) {
  FileTailer t(Options());
  EXPECT_EQ(t.Poll().status().code(), StatusCode::kNotFound);
  Append("a\n");
  EXPECT_EQ(PollLines(t), Lines{"a"});
}

TEST_F(WorkloadTailTest, HoldsBackPartialLinesUntilTheNewline) {
  Append("one\ntw");
  FileTailer t(Options());
  EXPECT_EQ(PollLines(t), Lines{"one"});
  EXPECT_EQ(t.position().offset, 4u);
  Append("o\r\n\nthree\n");
  EXPECT_EQ(PollLines(t), (Lines{"two", "three"}));
  EXPECT_EQ(PollLines(t), Lines{});
}

TEST_F(WorkloadTailTest, ResumesFromSavedPosition) {
  Append("one\ntwo\n");
  TailPosition saved;
  {
    FileTailer t(Options());
    EXPECT_EQ(PollLines(t).size(), 2u);
    saved = t.position();
  }
  Append("three\n");
  FileTailer t(Options(), saved);
  EXPECT_EQ(PollLines(t), Lines{"three"});
  EXPECT_EQ(ParseTailPosition(FormatTailPosition(saved)), saved);
}

TEST_F(WorkloadTailTest, SavedPositionOfAnotherFileStartsAtZero) {
  Append("one\n");
  FileTailer t(Options(), TailPosition{123456789, 2});
  EXPECT_EQ(PollLines(t), Lines{"one"});
}

TEST_F(WorkloadTailTest, FollowsRotationReadingTheOldFileToItsEnd) {
  Append("one\n");
  FileTailer t(Options());
  EXPECT_EQ(PollLines(t), Lines{"one"});
  Append("two\nlast-unterminated");
  std::filesystem::rename(path_, path_ + ".1");
  Append("new-one\n");
  auto b = t.Poll();
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->rotated);
  EXPECT_EQ(b->lines, (Lines{"two", "last-unterminated", "new-one"}));
  Append("new-two\n");
  EXPECT_EQ(PollLines(t), Lines{"new-two"});
}

TEST_F(WorkloadTailTest, RestartAfterRotationFinishesTheRotatedFileFirst) {
  Append("one\n");
  TailPosition saved;
  {
    FileTailer t(Options());
    EXPECT_EQ(PollLines(t), Lines{"one"});
    saved = t.position();
  }
  Append("two\n");  // written after the last save, before the rotation
  std::filesystem::rename(path_, path_ + ".1");
  Append("new-one\n");
  FileTailer t(Options(), saved);
  EXPECT_EQ(PollLines(t), (Lines{"two", "new-one"}));
  TailOptions no_suffix = Options();
  no_suffix.rotated_suffix.clear();
  FileTailer plain(no_suffix, saved);
  EXPECT_EQ(PollLines(plain), Lines{"new-one"});
}

TEST_F(WorkloadTailTest, FollowsTruncation) {
  Append("one\ntwo\n");
  FileTailer t(Options());
  EXPECT_EQ(PollLines(t).size(), 2u);
  Rewrite("x\n");  // copytruncate then a new write
  auto b = t.Poll();
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->truncated);
  EXPECT_EQ(b->lines, Lines{"x"});
}

TEST_F(WorkloadTailTest, SkipsOversizedLinesWithoutBufferingThem) {
  TailOptions o = Options();
  o.max_line_bytes = 16;
  o.read_chunk_bytes = 7;  // lines straddle reads
  Append("short\n" + std::string(100, 'x') + "\nafter\n");
  FileTailer t(o);
  auto b = t.Poll();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->lines, (Lines{"short", "after"}));
  EXPECT_EQ(b->oversized_lines, 1u);
}

TEST_F(WorkloadTailTest, BoundsLinesPerPoll) {
  TailOptions o = Options();
  o.max_lines_per_poll = 10;
  o.read_chunk_bytes = 8;
  std::string text;
  for (int i = 0; i < 100; ++i) text += "l" + std::to_string(i) + "\n";
  Append(text);
  FileTailer t(o);
  size_t total = 0, polls = 0;
  std::vector<bool> more;  // each poll with lines: did it say more is waiting?
  while (true) {
    auto b = t.Poll();
    ASSERT_TRUE(b.ok());
    if (b->lines.empty()) {
      EXPECT_FALSE(b->more);  // read to the end
      break;
    }
    EXPECT_LE(b->lines.size(), 12u);
    total += b->lines.size();
    ++polls;
    more.push_back(b->more);
  }
  // Every poll but the last one stopped at the cap with lines still waiting.
  for (size_t i = 0; i + 1 < more.size(); ++i) EXPECT_TRUE(more[i]) << "poll " << i;
  EXPECT_EQ(total, 100u);
  EXPECT_GE(polls, 8u);
}

TEST_F(WorkloadTailTest, FileSourceEmitsObservationsErrorsAndCursor) {
  FakeClock clock(1764410400LL * 1'000'000'000);
  Append(
      "{\"job\":\"llama\",\"step\":1,\"step_time_s\":1.1}\n"
      "job=llama step=2 step_time_s=1.2 local_rank=4\n"
      "this is not a report\n");
  WorkloadFileOptions o;
  o.path = path_;
  o.node = "gpu-node-07";
  std::string cursor;
  {
    WorkloadFileSource src(o, clock);
    auto p = src.Poll();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_EQ(p->observations.size(), 2u);
    EXPECT_EQ(p->observations[0].node, "gpu-node-07");
    EXPECT_EQ(p->observations[0].time_ns, clock.NowNs());
    EXPECT_EQ(p->observations[1].component.Id(), "gpu/4");
    ASSERT_EQ(p->errors.size(), 1u);
    EXPECT_NE(p->errors[0].find("key=value"), std::string::npos);
    EXPECT_EQ(p->cursor_key, "file:" + path_);
    cursor = p->cursor_value;
  }
  Append("job=llama step=3 step_time_s=1.3\n");
  WorkloadFileSource resumed(o, clock, cursor);
  auto p = resumed.Poll();
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->observations.size(), 1u);
  EXPECT_EQ(p->observations[0].seq, 3u);
}

}  // namespace
}  // namespace faultline
