// Periodic series (schema 2): a flat series costs one row per change; readings found
// unchanged move its last-seen time instead, and readers still see it alive up to then.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "core/json.h"
#include "store/dedup_key.h"
#include "store/schema.h"
#include "store/series.h"
#include "test_util.h"

namespace faultline {
namespace {

using testing::kT0;
using testing::OpenStore;
using testing::PsuVoltage;
using testing::TempDir;
using testing::XidRecord;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kMin = 60 * kSec;

std::vector<Row<Observation>> Query(Store& store, ObservationQuery q) {
  q.limit = q.limit == 100000 ? 0 : q.limit;
  auto rows = store.QueryObservations(q);
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_TRUE(rows.ok() && rows->bad_rows.empty());
  return rows.ok() ? rows->rows : std::vector<Row<Observation>>{};
}

// (time since kT0 in minutes, value, seen copy?) of each row: compact to compare.
struct Seen {
  int64_t minute;
  double value;
  bool copy;
  bool operator==(const Seen&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{" << s.minute << "m " << s.value << (s.copy ? " copy" : "") << "}";
}
std::vector<Seen> Timeline(const std::vector<Row<Observation>>& rows) {
  std::vector<Seen> out;
  for (const auto& r : rows) out.push_back({(r.value.time_ns - kT0) / kMin, r.value.value.value_or(-1), r.seen_copy});
  return out;
}

TEST(StoreSeriesTest, SeenReadingsWriteNoRowAndReadBackAsLastSeen) {
  auto store = OpenStore(":memory:");
  ASSERT_TRUE(store->Append({PsuVoltage(230, kT0)}).ok());
  for (int m : {5, 10}) {
    auto r = store->Append({}, {}, {PsuVoltage(230, kT0 + m * kMin)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->seen_marked, 1u);
    EXPECT_EQ(r->inserted + r->seen_stored, 0u);
  }
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->observations, 1);
  EXPECT_EQ(stats->series, 1);

  // Everything: the row, then a copy dated when last seen.
  EXPECT_EQ(Timeline(Query(*store, {})), (std::vector<Seen>{{0, 230, false}, {10, 230, true}}));
  EXPECT_EQ(Query(*store, {}).front().seen_until_ns, kT0 + 10 * kMin);
  // A window after the row: the series reads as alive from the window's start to its
  // last reading, with the stored row's id.
  ObservationQuery late{.since_ns = kT0 + 7 * kMin};
  auto rows = Query(*store, late);
  EXPECT_EQ(Timeline(rows), (std::vector<Seen>{{7, 230, true}, {10, 230, true}}));
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().id, Query(*store, {}).front().id);
  EXPECT_EQ(rows.front().value.raw, PsuVoltage(230, kT0).raw);
  // Clamped into a window that ends before the last reading.
  EXPECT_EQ(Timeline(Query(*store, {.since_ns = kT0 + 2 * kMin, .until_ns = kT0 + 4 * kMin})),
            (std::vector<Seen>{{2, 230, true}, {4, 230, true}}));
  // After the last reading: nothing.
  EXPECT_TRUE(Query(*store, {.since_ns = kT0 + 11 * kMin}).empty());
  // Stored rows only.
  late.include_seen = false;
  EXPECT_TRUE(Query(*store, late).empty());
  EXPECT_EQ(Timeline(Query(*store, {.include_seen = false})), (std::vector<Seen>{{0, 230, false}}));
}

TEST(StoreSeriesTest, AChangeClosesTheStretchWhichKeepsItsLastSeenTime) {
  auto store = OpenStore(":memory:");
  ASSERT_TRUE(store->Append({PsuVoltage(230, kT0)}).ok());
  ASSERT_TRUE(store->Append({}, {}, {PsuVoltage(230, kT0 + 5 * kMin)}).ok());
  ASSERT_TRUE(store->Append({}, {}, {PsuVoltage(230, kT0 + 10 * kMin)}).ok());
  ASSERT_TRUE(store->Append({PsuVoltage(231, kT0 + 12 * kMin)}).ok());
  ASSERT_TRUE(store->Append({}, {}, {PsuVoltage(231, kT0 + 17 * kMin)}).ok());
  EXPECT_EQ(store->Stats()->observations, 2);
  EXPECT_EQ(store->Stats()->series, 1);
  EXPECT_EQ(Timeline(Query(*store, {})),
            (std::vector<Seen>{{0, 230, false}, {10, 230, true}, {12, 231, false}, {17, 231, true}}));
  // A window inside the first, closed stretch still sees its value.
  EXPECT_EQ(Timeline(Query(*store, {.since_ns = kT0 + 6 * kMin, .until_ns = kT0 + 8 * kMin})),
            (std::vector<Seen>{{6, 230, true}, {8, 230, true}}));
  EXPECT_EQ(Timeline(Query(*store, {.since_ns = kT0 + 11 * kMin})),
            (std::vector<Seen>{{12, 231, false}, {17, 231, true}}));
}

TEST(StoreSeriesTest, SeenAndChangeInOneBatchAreAppliedInTimeOrder) {
  auto store = OpenStore(":memory:");
  ASSERT_TRUE(store->Append({PsuVoltage(230, kT0)}).ok());
  // A held batch spanning more than a heartbeat: seen at 5, changed at 7.
  auto r = store->Append({PsuVoltage(231, kT0 + 7 * kMin)}, {}, {PsuVoltage(230, kT0 + 5 * kMin)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->inserted, 1u);
  EXPECT_EQ(r->seen_marked, 1u);
  EXPECT_EQ(Timeline(Query(*store, {})), (std::vector<Seen>{{0, 230, false}, {5, 230, true}, {7, 231, false}}));
}

TEST(StoreSeriesTest, ASeenReadingTheStoreCannotAttachIsStoredAsARow) {
  auto store = OpenStore(":memory:");
  // No point for its series yet, and a kernel record that is no series at all.
  auto r = store->Append({}, {}, {PsuVoltage(230, kT0), XidRecord(1, kT0)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->seen_stored, 2u);
  EXPECT_EQ(r->seen_marked, 0u);
  EXPECT_EQ(store->Stats()->observations, 2);
  // Now the series has a point: the next one is a mark.
  auto next = store->Append({}, {}, {PsuVoltage(230, kT0 + 5 * kMin)});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->seen_marked, 1u);
  EXPECT_EQ(store->Stats()->observations, 2);
  // A reading without a node is refused like a stored one.
  Observation nameless = PsuVoltage(230, kT0 + 6 * kMin, "");
  EXPECT_EQ(store->Append({}, {}, {nameless}).status().code(), StatusCode::kInvalidArgument);
}

TEST(StoreSeriesTest, SeriesAreToldApartByNodeComponentKindAndNamingAttrs) {
  Observation a = PsuVoltage(230, kT0);
  Observation other_node = PsuVoltage(230, kT0, "gpu-node-08");
  Observation rail = a;
  rail.attrs["role"] = "output";
  Observation later_other_value = PsuVoltage(240, kT0 + kMin);
  later_other_value.attrs["health"] = "Warning";  // describes the reading, not the series
  EXPECT_EQ(store::SeriesId(a).size(), store::kSeriesIdBytes);
  EXPECT_NE(store::SeriesId(a), store::SeriesId(other_node));
  EXPECT_NE(store::SeriesId(a), store::SeriesId(rail));
  EXPECT_EQ(store::SeriesId(a), store::SeriesId(later_other_value));
  EXPECT_TRUE(store::SeriesId(XidRecord(1)).empty());
}

TEST(StoreSeriesTest, ANewestFirstLimitKeepsTheCopiesOfRowsItCutOff) {
  auto store = OpenStore(":memory:");
  // The flat series' row is the oldest; a busy kernel log fills the window after it.
  std::vector<Observation> xids;
  for (uint64_t i = 0; i < 20; ++i) xids.push_back(XidRecord(i, kT0 + static_cast<int64_t>(i + 1) * kSec));
  ASSERT_TRUE(store->Append({PsuVoltage(230, kT0)}).ok());
  ASSERT_TRUE(store->Append(xids).ok());
  ASSERT_TRUE(store->Append({}, {}, {PsuVoltage(230, kT0 + 30 * kMin)}).ok());
  auto rows = Query(*store, {.limit = 5, .newest_first = true});
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_TRUE(rows.front().seen_copy);  // the voltage as last seen is the newest fact
  EXPECT_EQ(rows.front().value.time_ns, kT0 + 30 * kMin);
  EXPECT_EQ(rows[1].value.kind, ObsKind::kXid);
  // Oldest first, the limit applies to the merged answer in time order too.
  auto oldest = Query(*store, {.limit = 3});
  ASSERT_EQ(oldest.size(), 3u);
  EXPECT_EQ(oldest[0].value.kind, ObsKind::kVoltage);
  EXPECT_FALSE(oldest[0].seen_copy);
  EXPECT_EQ(oldest[2].value.kind, ObsKind::kXid);
}

TEST(StoreSeriesTest, RetentionAgesARowByItsLastReading) {
  TempDir dir;
  StoreOptions options;
  options.max_age_ns = 60 * kMin;
  options.max_bytes = 0;
  auto store = OpenStore(dir.File("s.db"), options);
  Observation flat = PsuVoltage(230, kT0);   // read unchanged ever since
  Observation closed = PsuVoltage(12, kT0);  // another series: changed, old stretch seen late
  closed.component.name = "2";
  Observation gone = PsuVoltage(230, kT0);  // a series no longer read at all
  gone.component.name = "3";
  ASSERT_TRUE(store->Append({flat, closed, gone}).ok());
  Observation closed_seen = closed;
  closed_seen.time_ns = kT0 + 100 * kMin;
  Observation closed_next = closed;
  closed_next.value = 12.5;
  closed_next.time_ns = kT0 + 110 * kMin;
  Observation flat_seen = flat;
  flat_seen.time_ns = kT0 + 120 * kMin;
  ASSERT_TRUE(store->Append({}, {}, {closed_seen}).ok());
  ASSERT_TRUE(store->Append({closed_next}, {}, {flat_seen}).ok());
  ASSERT_EQ(store->Stats()->observations, 4);
  // At 130 min the cutoff is 70 min: every row was stored before it, but only `gone`
  // was last read before it.
  auto r = store->ApplyRetention(kT0 + 130 * kMin);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->observations_deleted, 1);
  EXPECT_EQ(store->Stats()->observations, 3);
  EXPECT_EQ(store->Stats()->series, 2);
  ObservationQuery q{.component = std::string("psu/3")};
  EXPECT_TRUE(Query(*store, q).empty());
  // Later, with neither read again: everything goes, series entries included.
  r = store->ApplyRetention(kT0 + 400 * kMin);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(store->Stats()->observations, 0);
  EXPECT_EQ(store->Stats()->series, 0);
}

TEST(StoreSeriesTest, RetentionBySizeNeverDeletesASeriesCurrentPoint) {
  TempDir dir;
  StoreOptions options;
  options.max_age_ns = 0;
  options.max_bytes = 1;  // always over: delete everything it may
  options.retention_batch_rows = 7;
  auto store = OpenStore(dir.File("s.db"), options);
  std::vector<Observation> batch;
  for (uint64_t i = 0; i < 50; ++i) batch.push_back(XidRecord(i, kT0 + static_cast<int64_t>(i) * kSec));
  ASSERT_TRUE(store->Append(batch).ok());
  ASSERT_TRUE(store->Append({PsuVoltage(230, kT0 - kMin), PsuVoltage(231, kT0)}).ok());  // one series, 2 points
  auto r = store->ApplyRetention(kT0 + kMin);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto rows = Query(*store, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].value.value, 231.0);
}

// A store written by a schema-1 faultline: rows stored with the v1 statement.
void MakeV1Store(const std::string& path, const std::vector<Observation>& observations) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA application_id = 1181512782", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  auto v = store::ApplyMigrations(db, store::StoreMigrations().first(1));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(*v, 1);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "INSERT INTO observations(dedup_key, node, layer, source, kind, component, time_ns, "
                               "seq, code, count, payload) VALUES(?,?,?,?,?,?,?,NULL,NULL,1,?)",
                               -1, &st, nullptr),
            SQLITE_OK);
  for (const Observation& o : observations) {
    const std::string key = store::DedupKey(o);
    const std::string layer(ToString(o.layer)), source(ToString(o.source)), kind(ToString(o.kind));
    const std::string component = o.component.Id(), payload = Json(o).dump();
    sqlite3_bind_blob(st, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    int i = 2;
    for (const std::string* s : {&o.node, &layer, &source, &kind, &component}) {
      sqlite3_bind_text(st, i++, s->c_str(), -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_int64(st, 7, o.time_ns);
    sqlite3_bind_text(st, 8, payload.c_str(), -1, SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(StoreSeriesTest, AV1StoreIsMigratedInPlaceWithoutLosingRows) {
  TempDir dir;
  const std::string path = dir.File("v1.db");
  // What schema 1 kept: a flat voltage stored again every 5 minutes, and a kernel line.
  std::vector<Observation> v1;
  for (int m = 0; m <= 20; m += 5) v1.push_back(PsuVoltage(230, kT0 + m * kMin));
  v1.push_back(XidRecord(7, kT0 + 3 * kMin));
  MakeV1Store(path, v1);
  {
    // Read-only, as why-slow would before any agent upgraded it: read as it is.
    auto ro = OpenStore(path, StoreOptions{.read_only = true});
    ASSERT_NE(ro, nullptr);
    EXPECT_EQ(ro->Stats()->schema_version, 1);
    EXPECT_EQ(Query(*ro, {}).size(), v1.size());
  }
  auto store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->schema_version, 2);
  EXPECT_EQ(stats->observations, static_cast<int64_t>(v1.size()));
  auto rows = Query(*store, {});
  ASSERT_EQ(rows.size(), v1.size());
  for (const auto& row : rows) EXPECT_FALSE(row.seen_copy);
  EXPECT_EQ(rows.front().value, v1.front());
  // Replaying the v1 rows adds nothing (same dedup keys).
  auto replay = store->Append(v1);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->duplicates, v1.size());
  // The first reading after the upgrade has no series entry to attach to: stored as a
  // row; from then on, flat readings cost no row.
  auto first = store->Append({}, {}, {PsuVoltage(230, kT0 + 25 * kMin)});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->seen_stored, 1u);
  auto second = store->Append({}, {}, {PsuVoltage(230, kT0 + 30 * kMin)});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->seen_marked, 1u);
  EXPECT_EQ(store->Stats()->observations, static_cast<int64_t>(v1.size()) + 1);
  EXPECT_EQ(Query(*store, {}).back().value.time_ns, kT0 + 30 * kMin);
  // Reopening applies nothing more.
  store.reset();
  EXPECT_EQ(OpenStore(path)->Stats()->schema_version, 2);
}

TEST(StoreSeriesTest, AFailedCommitMovesNoLastSeenTime) {
  TempDir dir;
  auto store = OpenStore(dir.File("s.db"));
  ASSERT_TRUE(store->Append({PsuVoltage(230, kT0)}).ok());
  ASSERT_TRUE(store->Append({}, {}, {PsuVoltage(230, kT0 + 5 * kMin)}).ok());
  // A commit that cannot fit (a big batch of kernel lines) carries a seen mark too.
  ASSERT_TRUE(store->SetFileSizeLimit(store->Stats()->file_bytes).ok());
  std::vector<Observation> big;
  for (uint64_t i = 0; i < 2000; ++i) big.push_back(XidRecord(i, kT0 + 6 * kMin));
  auto failed = store->Append(big, {{"gpu-node-07", "kmsg", "last_seq", "2000"}}, {PsuVoltage(230, kT0 + 10 * kMin)});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError);
  ObservationQuery voltage{.kind = ObsKind::kVoltage};
  EXPECT_EQ(Timeline(Query(*store, voltage)), (std::vector<Seen>{{0, 230, false}, {5, 230, true}}));
}

}  // namespace
}  // namespace faultline
