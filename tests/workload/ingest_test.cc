// Pipeline: the file form of the workload signal into the store, with the tail cursor
// saved in the same Append, across a restart and a log rotation: every report stored
// once, none lost, and the slowdown helper reads them back from the store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/clock.h"
#include "core/time.h"
#include "sources/workload/file_source.h"
#include "engine/detect/slowdown.h"
#include "store/store.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1764410400LL * kNsPerSec;

class WorkloadIngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("faultline-workload-ingest-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    options_.path = (dir_ / "steps.log").string();
    options_.node = "gpu-node-07";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void WriteSteps(int from, int to, double seconds) {
    std::ofstream out(options_.path, std::ios::app);
    for (int i = from; i < to; ++i) {
      out << "job=llama rank=0 step=" << i << " step_time_s=" << seconds << " time=" << (kT0 / kNsPerSec + i * 10)
          << "\n";
    }
  }

  // One agent "run": open the store, resume the source from its cursor, ingest once.
  size_t RunAgentOnce() {
    auto store = std::move(Store::Open((dir_ / "f.db").string()).value());
    auto cursor =
        store->GetCursor(options_.node, std::string(WorkloadFileSource::kCursorSource), "file:" + options_.path);
    EXPECT_TRUE(cursor.ok());
    WorkloadFileSource source(options_, clock_, *cursor);
    auto poll = source.Poll();
    EXPECT_TRUE(poll.ok()) << poll.status().ToString();
    auto stats =
        store->Append(poll->observations, {{options_.node, poll->cursor_source, poll->cursor_key, poll->cursor_value}});
    EXPECT_TRUE(stats.ok());
    EXPECT_EQ(stats->duplicates, 0u);
    return stats->inserted;
  }

  std::filesystem::path dir_;
  WorkloadFileOptions options_;
  FakeClock clock_{kT0 + 3600 * kNsPerSec};
};

TEST_F(WorkloadIngestTest, RestartAndRotationDuringDowntimeNeitherRepeatNorLose) {
  WriteSteps(0, 30, 1.0);
  EXPECT_EQ(RunAgentOnce(), 30u);
  EXPECT_EQ(RunAgentOnce(), 0u);  // restart with nothing new: nothing repeated
  WriteSteps(30, 40, 1.0);
  std::filesystem::rename(options_.path, options_.path + ".1");
  WriteSteps(40, 60, 1.5);  // the job slowed down after the rotation
  // The cursor names the rotated-away inode (now steps.log.1): the restarted agent
  // finishes it from the saved offset (steps 30..39), then reads the new file.
  EXPECT_EQ(RunAgentOnce(), 30u);
  EXPECT_EQ(RunAgentOnce(), 0u);

  auto store = std::move(Store::Open((dir_ / "f.db").string()).value());
  ObservationQuery q;
  q.node = "gpu-node-07";
  q.kind = ObsKind::kStepTime;
  q.limit = 0;
  auto rows = store->QueryObservations(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 60u);
  std::vector<Observation> obs;
  for (auto& r : rows->rows) obs.push_back(r.value);
  auto verdict = DetectNodeSlowdown(obs);
  EXPECT_TRUE(verdict.slow);
  EXPECT_EQ(verdict.began_ns, kT0 + 40 * 10 * kNsPerSec);
}

TEST_F(WorkloadIngestTest, RotationWhileRunningLosesNothing) {
  auto store = std::move(Store::Open((dir_ / "f.db").string()).value());
  WorkloadFileSource source(options_, clock_);
  WriteSteps(0, 10, 1.0);
  size_t stored = 0;
  auto ingest = [&] {
    auto poll = source.Poll();
    ASSERT_TRUE(poll.ok());
    stored +=
        store->Append(poll->observations, {{options_.node, poll->cursor_source, poll->cursor_key, poll->cursor_value}})
            ->inserted;
  };
  ingest();
  WriteSteps(10, 20, 1.0);
  std::filesystem::rename(options_.path, options_.path + ".1");
  WriteSteps(20, 25, 1.0);
  ingest();
  EXPECT_EQ(stored, 25u);
}

}  // namespace
}  // namespace faultline
