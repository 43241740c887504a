// The store never writes into a file it should refuse (damaged, cut short, another
// program's database), creates its files private, reads a read-only store without
// writing, and fails a commit on a full disk whole (tested with a size cap that fails
// exactly like SQLITE_FULL).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "store/store.h"
#include "test_util.h"

namespace faultline {
namespace {

using testing::kT0;
using testing::TempDir;
using testing::XidRecord;

using testing::RawExec;
using testing::ReadAll;
using testing::WriteAll;

// A closed faultline store holding `n` XID records.
void MakeStore(const std::string& path, uint64_t n) {
  auto store = testing::OpenStore(path);
  ASSERT_NE(store, nullptr);
  std::vector<Observation> batch;
  for (uint64_t i = 0; i < n; ++i) batch.push_back(XidRecord(i, kT0 + static_cast<int64_t>(i)));
  ASSERT_TRUE(store->Append(batch).ok());
  ASSERT_TRUE(store->Close().ok());
}

// Opens `path` for writing, expects kCorrupt, and checks not one byte changed.
void ExpectRefusedUntouched(const std::string& path, const std::string& why) {
  const std::string before = ReadAll(path);
  auto s = Store::Open(path);
  ASSERT_FALSE(s.ok()) << why << ": opened";
  EXPECT_EQ(s.status().code(), StatusCode::kCorrupt) << why << ": " << s.status().ToString();
  EXPECT_NE(s.status().message().find(path), std::string::npos) << why;
  EXPECT_TRUE(ReadAll(path) == before) << why << ": the refused file was written to";  // no dump of the bytes
}

TEST(StoreSafetyTest, TruncatedStoreIsRefusedBeforeAnyWrite) {
  TempDir dir;
  const std::string path = dir.File("f.db");
  MakeStore(path, 3000);
  const std::string whole = ReadAll(path);
  ASSERT_GT(whole.size(), 16u * 4096);
  // Cut at a page boundary (the header still claims every page) and in mid-page.
  WriteAll(path, whole.substr(0, whole.size() / 2 / 4096 * 4096));
  ExpectRefusedUntouched(path, "cut at a page boundary");
  WriteAll(path, whole.substr(0, whole.size() / 2 + 1234));
  ExpectRefusedUntouched(path, "cut mid-page");
  WriteAll(path, whole.substr(0, 60));
  ExpectRefusedUntouched(path, "cut inside the header");
}

TEST(StoreSafetyTest, AnotherProgramsDatabaseIsRefusedBeforeAnyWrite) {
  TempDir dir;
  // Variants: plain tables of some other tool; one with its own application_id; one with
  // its own application_id that even has a table called schema_version.
  const std::string plain = dir.File("inventory.db");
  RawExec(plain, "CREATE TABLE hosts(name TEXT PRIMARY KEY, rack TEXT); INSERT INTO hosts VALUES('n1','r1');");
  ExpectRefusedUntouched(plain, "foreign tables");
  const std::string with_id = dir.File("other-app.db");
  RawExec(with_id, "PRAGMA application_id = 1234567; CREATE TABLE notes(body TEXT);");
  ExpectRefusedUntouched(with_id, "foreign application_id");
  const std::string lookalike = dir.File("lookalike.db");
  RawExec(lookalike,
          "PRAGMA application_id = 42; CREATE TABLE schema_version(version INTEGER); "
          "INSERT INTO schema_version VALUES(1); CREATE TABLE observations(id INTEGER);");
  ExpectRefusedUntouched(lookalike, "foreign application_id with look-alike tables");
}

TEST(StoreSafetyTest, DamagedPagesAreRefusedBeforeAnyWriteByDefault) {
  TempDir dir;
  const std::string path = dir.File("f.db");
  MakeStore(path, 3000);
  std::string bytes = ReadAll(path);
  std::mt19937 rng(5);
  // Smash one page in the middle (an index or table page), keep the header page intact.
  const size_t page = bytes.size() / 4096 / 2;
  for (size_t i = 0; i < 4096; ++i) bytes[page * 4096 + i] = static_cast<char>(rng());
  WriteAll(path, bytes);
  ExpectRefusedUntouched(path, "smashed page");
}

TEST(StoreSafetyTest, EmptyFileAndOlderStoresStillOpen) {
  TempDir dir;
  // A pre-created empty file (e.g. by a config tool) is a new store.
  const std::string empty = dir.File("empty.db");
  WriteAll(empty, "");
  auto store = testing::OpenStore(empty);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Append({XidRecord(1)}).ok());
  store.reset();
  // A store written before the application_id existed (application_id 0) is ours.
  const std::string legacy = dir.File("legacy.db");
  MakeStore(legacy, 5);
  RawExec(legacy, "PRAGMA application_id = 0");
  auto reopened = testing::OpenStore(legacy);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->Stats()->observations, 5);
}

TEST(StoreSafetyTest, NewStoreFilesArePrivate) {
  TempDir dir;
  const mode_t old_mask = ::umask(022);
  const std::string path = dir.File("f.db");
  auto store = testing::OpenStore(path);
  ::umask(old_mask);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Append({XidRecord(1), XidRecord(2)}).ok());
  for (const std::string& f : {path, path + "-wal", path + "-shm"}) {
    struct stat st {};
    ASSERT_EQ(::stat(f.c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
  }
}

// Runs `body` in a child process, as an unprivileged user when we are root (root reads and
// writes through any mode bits); returns the child's exit code.
int RunUnprivileged(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(90);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST(StoreSafetyTest, ReadOnlyStoreIsReadWithoutWriting) {
  TempDir dir;
  const std::string sub = dir.File("ro");
  std::filesystem::create_directories(sub);
  const std::string path = sub + "/f.db";
  MakeStore(path, 7);
  const std::string before = ReadAll(path);
  ::chmod(path.c_str(), 0444);
  // The directory too: SQLite cannot create its -shm next to the file.
  ::chmod(sub.c_str(), 0555);
  ::chmod(std::filesystem::path(sub).parent_path().c_str(), 0755);
  const int rc = RunUnprivileged([&] {
    StoreOptions ro;
    ro.read_only = true;
    auto store = Store::Open(path, ro);
    if (!store.ok()) return 1;
    auto rows = (*store)->QueryObservations({});
    if (!rows.ok() || rows->rows.size() != 7) return 2;
    // Writing is refused, not attempted into the file.
    if ((*store)->Append({XidRecord(100)}).ok()) return 3;
    return (*store)->Close().ok() ? 0 : 4;
  });
  ::chmod(sub.c_str(), 0755);
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(ReadAll(path) == before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(StoreSafetyTest, ReadOnlyOpenSeesTheWritersCommits) {
  TempDir dir;
  const std::string path = dir.File("f.db");
  auto writer = testing::OpenStore(path);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append({XidRecord(1), XidRecord(2)}).ok());
  StoreOptions ro;
  ro.read_only = true;
  auto reader = Store::Open(path, ro);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->QueryObservations({})->rows.size(), 2u);
  ASSERT_TRUE(writer->Append({XidRecord(3)}).ok());
  EXPECT_EQ((*reader)->QueryObservations({})->rows.size(), 3u);  // WAL shared, not a snapshot
  EXPECT_EQ((*reader)->Append({XidRecord(9)}).status().code(), StatusCode::kPermissionDenied);
}

TEST(StoreSafetyTest, ReadOnlyNeverCreatesAStore) {
  TempDir dir;
  StoreOptions ro;
  ro.read_only = true;
  EXPECT_EQ(Store::Open(dir.File("absent.db"), ro).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.File("absent.db")));
  WriteAll(dir.File("empty.db"), "");
  EXPECT_EQ(Store::Open(dir.File("empty.db"), ro).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(std::filesystem::file_size(dir.File("empty.db")), 0u);
  // Garbage and foreign databases are refused as for a writer.
  WriteAll(dir.File("garbage.db"), std::string(8192, '\x5a'));
  EXPECT_EQ(Store::Open(dir.File("garbage.db"), ro).status().code(), StatusCode::kCorrupt);
  RawExec(dir.File("other.db"), "CREATE TABLE t(x);");
  EXPECT_EQ(Store::Open(dir.File("other.db"), ro).status().code(), StatusCode::kCorrupt);
}

TEST(StoreSafetyTest, FullStoreFailsTheWholeCommitAndRecovers) {
  TempDir dir;
  const std::string path = dir.File("f.db");
  auto store = testing::OpenStore(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Append({XidRecord(1)}, {{"gpu-node-07", "kmsg", "last_seq", "1"}}).ok());
  ASSERT_TRUE(store->SetFileSizeLimit(1).ok());  // no room to grow: a full disk
  std::vector<Observation> batch;
  for (uint64_t i = 2; i < 500; ++i) batch.push_back(XidRecord(i));
  auto full = store->Append(batch, {{"gpu-node-07", "kmsg", "last_seq", "499"}});
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kIoError) << full.status().ToString();
  EXPECT_NE(full.status().message().find("full"), std::string::npos) << full.status().ToString();
  // All or nothing: neither the rows nor the cursor moved.
  EXPECT_EQ(store->Stats()->observations, 1);
  EXPECT_EQ(store->GetCursor("gpu-node-07", "kmsg", "last_seq").value(), std::optional<std::string>("1"));
  ASSERT_TRUE(store->SetFileSizeLimit(0).ok());  // space came back
  auto retried = store->Append(batch, {{"gpu-node-07", "kmsg", "last_seq", "499"}});
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(retried->inserted, batch.size());
  EXPECT_EQ(store->GetCursor("gpu-node-07", "kmsg", "last_seq").value(), std::optional<std::string>("499"));
}

TEST(StoreSafetyTest, LatestDiagnosisIgnoresTheTimeWindow) {
  auto store = testing::OpenStore(":memory:");
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->LatestDiagnosis("n1")->has_value());
  Diagnosis gpu;
  gpu.fault_class = FaultClass::kGpuFellOffBus;
  gpu.first_ns = gpu.last_ns = kT0;
  Diagnosis none;  // "no fault found": no time span at all
  ASSERT_TRUE(store->PutDiagnosis("n1", gpu, kT0).ok());
  ASSERT_TRUE(store->PutDiagnosis("n2", gpu, kT0).ok());
  ASSERT_TRUE(store->PutDiagnosis("n1", none, kT0 + 5).ok());
  auto latest = store->LatestDiagnosis("n1");
  ASSERT_TRUE(latest.ok());
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->value.fault_class, FaultClass::kNone);
  EXPECT_EQ((*store->LatestDiagnosis("n2"))->value.fault_class, FaultClass::kGpuFellOffBus);
}

// A kernel line dated only by its monotonic time: its time_ns is a boot-time estimate
// that moves by microseconds at every start; the boot id the source names makes the
// identity stable, and keeps two boots apart.
TEST(StoreSafetyTest, DedupKeyOfABootDatedLineIgnoresTheEstimatedTime) {
  auto store = testing::OpenStore(":memory:");
  ASSERT_NE(store, nullptr);
  Observation first = XidRecord(1);
  first.attrs["boot_id"] = "0c4f6f4e-1f7a-4c43-9d2e-5b7f3e0d9a11";
  Observation restarted = first;
  restarted.time_ns += 1234;  // the estimate read again at the next start
  Observation other_boot = first;
  other_boot.attrs["boot_id"] = "7d1a2b3c-0000-4000-8000-000000000002";
  ASSERT_EQ(store->Append({first})->inserted, 1u);
  EXPECT_EQ(store->Append({restarted})->duplicates, 1u);
  EXPECT_EQ(store->Append({other_boot})->inserted, 1u);
  // Without a boot id the time stays part of the identity (a reading at another time
  // is another fact).
  Observation plain = XidRecord(2);
  Observation plain_later = plain;
  plain_later.time_ns += 1234;
  ASSERT_EQ(store->Append({plain})->inserted, 1u);
  EXPECT_EQ(store->Append({plain_later})->inserted, 1u);
}

// The caller learns which observations the store already had (the agent then does not
// feed them to its detectors a second time).
TEST(StoreSafetyTest, AppendNamesThePureDuplicates) {
  auto store = testing::OpenStore(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Append({XidRecord(1), XidRecord(2)}).ok());
  Observation folded = XidRecord(2);
  folded.count = 5;  // a fold raising the count is news, not a duplicate
  auto r = store->Append({XidRecord(3), XidRecord(1), folded, XidRecord(3), XidRecord(4)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inserted, 2u);
  EXPECT_EQ(r->updated, 1u);
  EXPECT_EQ(r->duplicates, 2u);
  EXPECT_EQ(r->duplicate_indexes, (std::vector<size_t>{1, 3}));
}

}  // namespace
}  // namespace faultline
