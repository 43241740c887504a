// kill -9 during ingest: a child process appends batches (each with the cursor that
// says which batch comes next) and reports every acknowledged commit through a pipe;
// the parent SIGKILLs it at a seeded random moment, reopens the store and checks that
// every acknowledged batch is there, whole, exactly once, and that resuming from the
// saved cursor adds exactly what is missing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <set>

#include "store/store.h"
#include "test_util.h"

namespace faultline {
namespace {

using testing::kT0;
using testing::TempDir;

constexpr int kBatches = 400;
constexpr int kPerBatch = 20;
constexpr char kNode[] = "crash-node";

std::vector<Observation> Batch(int b) {
  std::vector<Observation> out;
  for (int i = 0; i < kPerBatch; ++i) {
    const uint64_t seq = static_cast<uint64_t>(b * kPerBatch + i);
    Observation o;
    o.time_ns = kT0 + static_cast<int64_t>(seq) * kNsPerMs;
    o.seq = seq;
    o.node = kNode;
    o.kind = ObsKind::kPcieAer;
    o.component = PcieComponent("0000:3b:00.0");
    o.raw = "pcieport 0000:3a:00.0: AER: Corrected error received: 0000:3b:00.0 #" + std::to_string(seq);
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<Cursor> NextBatchCursor(int next) { return {{kNode, "test", "next_batch", std::to_string(next)}}; }

int SavedCursor(Store& store) {
  auto c = store.GetCursor(kNode, "test", "next_batch");
  return c.ok() && c->has_value() ? std::stoi(**c) : 0;
}

// The child: resume from the saved cursor, ack each committed batch, never return.
[[noreturn]] void ChildIngest(const std::string& path, int ack_fd) {
  auto store = Store::Open(path);
  if (!store.ok()) _exit(3);
  for (int b = SavedCursor(**store); b < kBatches; ++b) {
    if (!(*store)->Append(Batch(b), NextBatchCursor(b + 1)).ok()) _exit(4);
    if (write(ack_fd, &b, sizeof b) != sizeof b) _exit(5);
  }
  while (true) pause();
}

bool ReadAck(int fd, int& b) {
  size_t got = 0;
  auto* p = reinterpret_cast<char*>(&b);
  while (got < sizeof b) {
    const ssize_t n = read(fd, p + got, sizeof b - got);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// Runs one child until the seeded kill point; returns the batches it acknowledged.
std::set<int> RunAndKill(const std::string& path, std::mt19937& rng) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    ChildIngest(path, fds[1]);
  }
  close(fds[1]);
  const int kill_after = std::uniform_int_distribution<int>(1, 60)(rng);
  const int extra_delay_us = std::uniform_int_distribution<int>(0, 3000)(rng);
  std::set<int> acked;
  int b = 0;
  while (static_cast<int>(acked.size()) < kill_after && ReadAck(fds[0], b)) acked.insert(b);
  usleep(static_cast<useconds_t>(extra_delay_us));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "child exited early with " << WEXITSTATUS(status);
  while (ReadAck(fds[0], b)) acked.insert(b);  // acks written just before the kill
  close(fds[0]);
  return acked;
}

// Every stored batch is whole, batches form the prefix [0, cursor), nothing twice.
void ExpectConsistent(Store& store, const std::set<int>& acked) {
  ObservationQuery q;
  q.limit = 0;
  auto rows = store.QueryObservations(q);
  ASSERT_TRUE(rows.ok());
  std::set<uint64_t> seqs;
  for (const auto& r : rows->rows) EXPECT_TRUE(seqs.insert(*r.value.seq).second) << "duplicate " << *r.value.seq;
  const int cursor = SavedCursor(store);
  EXPECT_EQ(rows->rows.size(), static_cast<size_t>(cursor * kPerBatch));
  if (!seqs.empty()) {
    EXPECT_EQ(*seqs.rbegin(), static_cast<uint64_t>(cursor * kPerBatch - 1));
  }
  for (int b : acked) EXPECT_LT(b, cursor) << "acknowledged batch " << b << " lost";
}

TEST(StoreCrashTest, KillDuringIngestLosesNothingAndResumeRepeatsNothing) {
  TempDir dir;
  const std::string path = dir.File("crash.db");
  std::mt19937 rng(20251129);
  std::set<int> all_acked;
  for (int round = 0; round < 4; ++round) {
    std::set<int> acked = RunAndKill(path, rng);
    EXPECT_FALSE(acked.empty());
    all_acked.insert(acked.begin(), acked.end());
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ExpectConsistent(**store, all_acked);
  }
  auto store = testing::OpenStore(path);
  const int cursor = SavedCursor(*store);
  ASSERT_GT(cursor, 0);
  ASSERT_LT(cursor, kBatches);
  // Replaying from the start stores nothing new; resuming from the cursor adds exactly the rest.
  size_t replayed = 0, resumed = 0;
  for (int b = 0; b < cursor; ++b) replayed += store->Append(Batch(b), NextBatchCursor(cursor))->inserted;
  for (int b = cursor; b < kBatches; ++b) resumed += store->Append(Batch(b), NextBatchCursor(b + 1))->inserted;
  EXPECT_EQ(replayed, 0u);
  EXPECT_EQ(resumed, static_cast<size_t>((kBatches - cursor) * kPerBatch));
  EXPECT_EQ(store->Stats()->observations, kBatches * kPerBatch);
}

}  // namespace
}  // namespace faultline
