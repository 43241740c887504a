#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <thread>

#include "store/schema.h"
#include "test_util.h"

namespace faultline {
namespace {

using testing::kT0;
using testing::PsuVoltage;
using testing::TempDir;
using testing::XidRecord;

using testing::OpenStore;

std::string PragmaText(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

TEST(StoreTest, OpensInWalModeWithCurrentSchema) {
  TempDir dir;
  auto store = OpenStore(dir.File("f.db"));
  ASSERT_NE(store, nullptr);
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->schema_version, store::StoreMigrations().back().version);
  EXPECT_EQ(PragmaText(dir.File("f.db"), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(PragmaText(dir.File("f.db"), "PRAGMA auto_vacuum"), "2");  // incremental
}

// SQLite's memory after several MB of rows and a full read: the page cache the store asks
// for bounds it (the agent's store was a quarter of its heap at SQLite's 2000 KiB).
int64_t SqliteMemoryAfterManyRows(TempDir& dir, const std::string& name, int cache_kib) {
  StoreOptions options;
  options.synchronous = StoreOptions::Synchronous::kNormal;
  options.cache_kib = cache_kib;
  auto store = OpenStore(dir.File(name), options);
  if (store == nullptr) return -1;
  for (int b = 0; b < 20; ++b) {
    std::vector<Observation> batch;
    for (int i = 0; i < 500; ++i) batch.push_back(XidRecord(b * 500 + i + 1, kT0 + (b * 500 + i) * kNsPerSec));
    EXPECT_TRUE(store->Append(batch, {}).ok());
  }
  EXPECT_EQ(store->QueryObservations({})->rows.size(), 10000u);
  return sqlite3_memory_used();
}

TEST(StoreTest, ThePageCacheIsBoundedByCacheKib) {
  TempDir dir;
  const int64_t small = SqliteMemoryAfterManyRows(dir, "small.db", 256);
  const int64_t sqlite_default = SqliteMemoryAfterManyRows(dir, "default.db", 0);  // 2000 KiB
  EXPECT_LT(small, 1 << 20) << small;
  EXPECT_GT(sqlite_default, small + (1 << 20)) << sqlite_default << " vs " << small;
}

TEST(StoreTest, AppendThenQueryRoundTripsEveryField) {
  auto store = OpenStore(":memory:");
  Observation o = XidRecord(3973);
  o.value = 1.5;
  o.attrs["pid"] = "1234";
  auto r = store->Append({o});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inserted, 1u);
  auto q = store->QueryObservations({});
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->rows.size(), 1u);
  EXPECT_EQ(q->rows[0].value, o);
  EXPECT_EQ(q->rows[0].node, "gpu-node-07");
  EXPECT_TRUE(q->bad_rows.empty());
}

TEST(StoreTest, ReplayedRecordsAreStoredOnce) {
  auto store = OpenStore(":memory:");
  std::vector<Observation> batch{XidRecord(1), XidRecord(2), PsuVoltage(207.5, kT0)};
  ASSERT_EQ(store->Append(batch)->inserted, 3u);
  auto again = store->Append(batch);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->inserted, 0u);
  EXPECT_EQ(again->duplicates, 3u);
  // Parsers may add attrs later; the same raw record is still the same fact.
  Observation reparsed = XidRecord(1);
  reparsed.attrs["process"] = "python3";
  EXPECT_EQ(store->Append({reparsed})->duplicates, 1u);
  EXPECT_EQ(store->Stats()->observations, 3);
}

TEST(StoreTest, DistinctFactsAreNotMergedByDedup) {
  auto store = OpenStore(":memory:");
  // Same sensor, same time, different reading; same record on another node; same seq other time.
  std::vector<Observation> batch{PsuVoltage(207.5, kT0), PsuVoltage(190.0, kT0), PsuVoltage(207.5, kT0, "gpu-node-08"),
                                 XidRecord(5, kT0), XidRecord(5, kT0 + 1)};
  EXPECT_EQ(store->Append(batch)->inserted, 5u);
}

TEST(StoreTest, FoldedCountIsRaisedNotDuplicated) {
  auto store = OpenStore(":memory:");
  Observation o = XidRecord(10);
  o.count = 3;
  ASSERT_EQ(store->Append({o})->inserted, 1u);
  o.count = 7;  // the upstream fold saw 4 more identical lines
  auto up = store->Append({o});
  EXPECT_EQ(up->updated, 1u);
  EXPECT_EQ(up->inserted, 0u);
  o.count = 7;  // replay of the same fold
  EXPECT_EQ(store->Append({o})->duplicates, 1u);
  o.count = 2;  // an older, smaller fold replayed after a restart
  EXPECT_EQ(store->Append({o})->duplicates, 1u);
  auto q = store->QueryObservations({});
  ASSERT_EQ(q->rows.size(), 1u);
  EXPECT_EQ(q->rows[0].value.count, 7u);
}

TEST(StoreTest, BatchIsAllOrNothing) {
  auto store = OpenStore(":memory:");
  Observation nameless = XidRecord(2);
  nameless.node.clear();
  auto r = store->Append({XidRecord(1), nameless}, {{"gpu-node-07", "kmsg", "last_seq", "2"}});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Stats()->observations, 0);
  EXPECT_FALSE(store->GetCursor("gpu-node-07", "kmsg", "last_seq")->has_value());
}

TEST(StoreTest, QueryFiltersByNodeLayerComponentKindAndWindow) {
  auto store = OpenStore(":memory:");
  std::vector<Observation> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(XidRecord(static_cast<uint64_t>(i), kT0 + i * kNsPerSec));
  for (int i = 0; i < 10; ++i) batch.push_back(PsuVoltage(200 + i, kT0 + i * kNsPerSec));
  batch.push_back(XidRecord(99, kT0, "gpu-node-08"));
  ASSERT_EQ(store->Append(batch)->inserted, 21u);

  ObservationQuery q;
  q.node = "gpu-node-07";
  EXPECT_EQ(store->QueryObservations(q)->rows.size(), 20u);
  q.layer = Layer::kOob;
  EXPECT_EQ(store->QueryObservations(q)->rows.size(), 10u);
  q.layer.reset();
  q.component = "gpu/3";
  q.kind = ObsKind::kXid;
  q.since_ns = kT0 + 2 * kNsPerSec;
  q.until_ns = kT0 + 5 * kNsPerSec;  // inclusive
  auto rows = store->QueryObservations(q)->rows;
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows.front().value.seq, 2u);
  EXPECT_EQ(rows.back().value.seq, 5u);

  ObservationQuery latest;
  latest.kind = ObsKind::kVoltage;
  latest.limit = 3;
  latest.newest_first = true;
  auto newest = store->QueryObservations(latest)->rows;
  ASSERT_EQ(newest.size(), 3u);
  EXPECT_EQ(newest[0].value.value, 209.0);
  EXPECT_EQ(newest[2].value.value, 207.0);
}

TEST(StoreTest, CursorsAreSavedWithTheirObservations) {
  auto store = OpenStore(":memory:");
  ASSERT_TRUE(store->Append({XidRecord(1)}, {{"gpu-node-07", "kmsg", "last_seq", "1"}}).ok());
  ASSERT_TRUE(
      store
          ->Append({XidRecord(2)}, {{"gpu-node-07", "kmsg", "last_seq", "2"}, {"gpu-node-07", "kmsg", "boot_id", "b7"}})
          .ok());
  EXPECT_EQ(store->GetCursor("gpu-node-07", "kmsg", "last_seq")->value_or(""), "2");
  EXPECT_FALSE(store->GetCursor("gpu-node-08", "kmsg", "last_seq")->has_value());
  auto all = store->ListCursors("gpu-node-07", "kmsg");
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].key, "boot_id");
  ASSERT_TRUE(store->PutCursors({{"gpu-node-07", "redfish:bmc", "sel_last_id", "412"}}).ok());
  EXPECT_EQ(store->GetCursor("gpu-node-07", "redfish:bmc", "sel_last_id")->value_or(""), "412");
}

TEST(StoreTest, FindingsDiagnosesAndActionsRoundTrip) {
  auto store = OpenStore(":memory:");
  Finding f;
  f.layer = Layer::kOob;
  f.component = ComponentRef{ComponentType::kPsu, "1", {}};
  f.fault_class = FaultClass::kPowerSupply;
  f.severity = Severity::kCritical;
  f.first_ns = kT0;
  f.last_ns = kT0 + 60 * kNsPerSec;
  f.summary = "PSU1 input voltage sag";
  auto fid = store->PutFinding("gpu-node-07", f);
  ASSERT_TRUE(fid.ok());
  Finding other = f;
  other.first_ns = other.last_ns = kT0 + 3600 * kNsPerSec;
  ASSERT_TRUE(store->PutFinding("gpu-node-08", other).ok());

  Diagnosis d;
  d.fault_class = FaultClass::kPowerSupply;
  d.component = f.component;
  d.action = Action::kFacilityTicket;
  d.first_ns = f.first_ns;
  d.last_ns = f.last_ns;
  auto did = store->PutDiagnosis("gpu-node-07", d, kT0 + 61 * kNsPerSec);
  ASSERT_TRUE(did.ok());
  ActionRecord a{kT0 + 62 * kNsPerSec, "gpu-node-07", Action::kDrain, *did, true, "ok", "PSU1 sag", {}};
  ASSERT_TRUE(store->PutAction(a).ok());

  RecordQuery q;
  q.node = "gpu-node-07";
  q.since_ns = kT0 + 30 * kNsPerSec;  // overlaps the finding's span
  q.until_ns = kT0 + 120 * kNsPerSec;
  auto findings = store->ListFindings(q);
  ASSERT_EQ(findings->rows.size(), 1u);
  EXPECT_EQ(findings->rows[0].id, *fid);
  EXPECT_EQ(findings->rows[0].value, f);
  auto diagnoses = store->ListDiagnoses(q);
  ASSERT_EQ(diagnoses->rows.size(), 1u);
  EXPECT_EQ(diagnoses->rows[0].value, d);
  auto actions = store->ListActions(q);
  ASSERT_EQ(actions->rows.size(), 1u);
  EXPECT_EQ(actions->rows[0].value, a);
  q.node.reset();
  q.until_ns = kT0 + 7200 * kNsPerSec;
  EXPECT_EQ(store->ListFindings(q)->rows.size(), 2u);
}

TEST(StoreTest, DataSurvivesCloseAndReopen) {
  TempDir dir;
  {
    auto store = OpenStore(dir.File("f.db"));
    ASSERT_TRUE(store->Append({XidRecord(1), XidRecord(2)}, {{"n", "kmsg", "last_seq", "2"}}).ok());
    ASSERT_TRUE(store->Close().ok());
    EXPECT_TRUE(store->Close().ok());  // idempotent
    EXPECT_EQ(store->Append({XidRecord(3)}).status().code(), StatusCode::kUnavailable);
  }
  auto store = OpenStore(dir.File("f.db"));
  EXPECT_EQ(store->Stats()->observations, 2);
  EXPECT_EQ(store->GetCursor("n", "kmsg", "last_seq")->value_or(""), "2");
  EXPECT_EQ(store->Append({XidRecord(1)})->duplicates, 1u);
}

TEST(StoreTest, ConcurrentAppendsAreSerialized) {
  TempDir dir;
  StoreOptions options;
  options.synchronous = StoreOptions::Synchronous::kNormal;
  auto store = OpenStore(dir.File("f.db"), options);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < 50; ++i) {
        auto r = store->Append({XidRecord(static_cast<uint64_t>(t * 1000 + i))});
        EXPECT_TRUE(r.ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(store->Stats()->observations, 200);
}

// The agent and `why-slow` (or two agents) may create the same new store at once: every
// opener must succeed, whichever of them runs the migration.
TEST(StoreTest, ConcurrentFirstOpensOfANewStoreAllSucceed) {
  for (int round = 0; round < 20; ++round) {
    TempDir dir;
    const std::string path = dir.File("new.db");
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        auto s = Store::Open(path);
        if (!s.ok()) {
          ADD_FAILURE() << s.status().ToString();
          ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(failures.load(), 0) << "round " << round;
    EXPECT_EQ(OpenStore(path)->Stats()->schema_version, store::StoreMigrations().back().version);
  }
}

TEST(StoreTest, MigrationsApplyInOrderFromAnOlderVersion) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  const store::Migration v1[] = {{1, "t", "CREATE TABLE t(a INTEGER)"}};
  const store::Migration v3[] = {{1, "t", "CREATE TABLE t(a INTEGER)"},
                                 {2, "t.b", "ALTER TABLE t ADD COLUMN b TEXT"},
                                 {3, "t.b index", "CREATE INDEX t_b ON t(b)"}};
  auto r1 = store::ApplyMigrations(db, v1);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(*r1, 1);
  auto r3 = store::ApplyMigrations(db, v3);
  ASSERT_TRUE(r3.ok()) << r3.status().ToString();
  EXPECT_EQ(*r3, 3);
  EXPECT_EQ(sqlite3_exec(db, "INSERT INTO t(a, b) VALUES(1, 'x')", nullptr, nullptr, nullptr), SQLITE_OK);
  // Running again is a no-op.
  EXPECT_EQ(*store::ApplyMigrations(db, v3), 3);
  sqlite3_close(db);
}

TEST(StoreTest, FailedMigrationLeavesThePreviousVersion) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  const store::Migration broken[] = {{1, "t", "CREATE TABLE t(a INTEGER)"},
                                     {2, "bad", "CREATE TABLE u(a INTEGER); CREATE TABLE t(a INTEGER)"}};
  auto r = store::ApplyMigrations(db, broken);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("migration 2"), std::string::npos);
  EXPECT_EQ(*store::SchemaVersion(db), 1);
  // The partial migration's first statement was rolled back with it.
  EXPECT_NE(sqlite3_exec(db, "SELECT * FROM u", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

}  // namespace
}  // namespace faultline
