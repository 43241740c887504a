// Hostile and damaged inputs: garbage files, schemas from the future, stored JSON the
// binary cannot decode, strings that are not UTF-8 or look like SQL.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
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

std::string Garbage(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(StoreBadInputTest, GarbageFileIsCorruptAndLeftUntouched) {
  TempDir dir;
  const std::string path = dir.File("garbage.db");
  const std::string bytes = Garbage(64 * 1024, 7);
  WriteAll(path, bytes);
  auto s = Store::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kCorrupt) << s.status().ToString();
  EXPECT_NE(s.status().message().find(path), std::string::npos);
  EXPECT_EQ(ReadAll(path), bytes);  // never recreated over the user's file
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(StoreBadInputTest, TextFileIsCorrupt) {
  TempDir dir;
  const std::string path = dir.File("notes.txt");
  WriteAll(path, "this is somebody's notes file, not a database\n");
  EXPECT_EQ(Store::Open(path).status().code(), StatusCode::kCorrupt);
}

TEST(StoreBadInputTest, DamagedPagesAreReportedAsCorrupt) {
  TempDir dir;
  const std::string path = dir.File("f.db");
  {
    auto store = testing::OpenStore(path);
    std::vector<Observation> batch;
    for (uint64_t i = 0; i < 2000; ++i) batch.push_back(XidRecord(i));
    ASSERT_TRUE(store->Append(batch).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  std::string bytes = ReadAll(path);
  ASSERT_GT(bytes.size(), 64u * 1024);
  const std::string junk = Garbage(bytes.size() - 8192, 11);
  bytes.replace(8192, junk.size(), junk);  // keep the header page, smash the rest
  WriteAll(path, bytes);

  StoreOptions checked;
  checked.check_integrity_on_open = true;
  EXPECT_EQ(Store::Open(path, checked).status().code(), StatusCode::kCorrupt);
  // Without the check, whichever call touches the damage reports it; nothing crashes.
  auto store = Store::Open(path);
  if (store.ok()) {
    auto q = (*store)->QueryObservations({});
    EXPECT_FALSE(q.ok() && q->rows.size() == 2000u);
  } else {
    EXPECT_EQ(store.status().code(), StatusCode::kCorrupt);
  }
}

TEST(StoreBadInputTest, NewerSchemaIsRefused) {
  TempDir dir;
  const std::string path = dir.File("f.db");
  ASSERT_TRUE(Store::Open(path).ok());
  RawExec(path, "UPDATE schema_version SET version = 999");
  auto s = Store::Open(path);
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(s.status().message().find("999"), std::string::npos);
}

TEST(StoreBadInputTest, UnreadableLocationIsAnErrorNotACrash) {
  TempDir dir;
  EXPECT_FALSE(Store::Open(dir.File("missing-dir/f.db")).ok());
  std::filesystem::create_directories(dir.File("a-directory"));
  EXPECT_FALSE(Store::Open(dir.File("a-directory")).ok());
}

TEST(StoreBadInputTest, UnknownEnumNamesReportTheRowAndReturnTheOthers) {
  TempDir dir;
  const std::string path = dir.File("f.db");
  {
    auto store = testing::OpenStore(path);
    ASSERT_TRUE(store->Append({XidRecord(1), XidRecord(2), XidRecord(3)}).ok());
    Finding f;
    f.fault_class = FaultClass::kNvlinkErrors;
    ASSERT_TRUE(store->PutFinding("gpu-node-07", f).ok());
    ASSERT_TRUE(store->PutFinding("gpu-node-07", f).ok());
  }
  // As a newer faultline with an extra ObsKind / FaultClass would have written them.
  RawExec(path,
          "UPDATE observations SET payload = replace(payload, '\"xid\"', '\"quantum_flux\"') "
          "WHERE seq = 2");
  RawExec(path, "UPDATE findings SET payload = replace(payload, 'nvlink_errors', 'cosmic_ray') WHERE id = 1");
  RawExec(path, "UPDATE observations SET payload = '{not json' WHERE seq = 3");
  auto store = testing::OpenStore(path);
  auto q = store->QueryObservations({});
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->rows.size(), 1u);
  EXPECT_EQ(q->rows[0].value.seq, 1u);
  ASSERT_EQ(q->bad_rows.size(), 2u);
  EXPECT_EQ(q->bad_rows[0].table, "observations");
  EXPECT_NE(q->bad_rows[0].error.find("quantum_flux"), std::string::npos);
  auto f = store->ListFindings({});
  ASSERT_EQ(f->rows.size(), 1u);
  ASSERT_EQ(f->bad_rows.size(), 1u);
  EXPECT_EQ(f->bad_rows[0].id, 1);
}

TEST(StoreBadInputTest, HostileStringsAreStoredAsData) {
  auto store = testing::OpenStore(":memory:");
  Observation o = XidRecord(1);
  o.node = "x'); DROP TABLE observations; --";
  constexpr char kBadUtf8[] = "NVRM: \xff\xfe\xc3 bad utf-8 \0 nul";
  o.raw = std::string(kBadUtf8, sizeof kBadUtf8 - 1) + std::string(1 << 20, 'A');
  o.text = "\x1b[31mred\x1b[0m";
  auto r = store->Append({o});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(store->Append({o})->duplicates, 1u);  // dedup works on the exact bytes
  ObservationQuery q;
  q.node = o.node;
  auto rows = store->QueryObservations(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_EQ(rows->rows[0].value.text, o.text);
  // Invalid UTF-8 comes back replaced (U+FFFD), the rest intact.
  EXPECT_NE(rows->rows[0].value.raw.find(" bad utf-8 "), std::string::npos);
  EXPECT_GE(rows->rows[0].value.raw.size(), o.raw.size());
  EXPECT_EQ(store->Stats()->observations, 1);
}

}  // namespace
}  // namespace faultline
