#include "store/schema.h"

#include <string>

#include "store/sqlite.h"

namespace faultline::store {
namespace {

// Enum columns hold the names from types.cc, not the integers: names survive an enum
// being reordered or extended, and keep the file readable with the sqlite3 shell.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE observations(
  id INTEGER PRIMARY KEY,
  dedup_key BLOB NOT NULL UNIQUE,
  node TEXT NOT NULL,
  layer TEXT NOT NULL,
  source TEXT NOT NULL,
  kind TEXT NOT NULL,
  component TEXT NOT NULL,
  time_ns INTEGER NOT NULL,
  seq INTEGER,
  code INTEGER,
  count INTEGER NOT NULL,
  payload TEXT NOT NULL);
CREATE INDEX obs_node_time ON observations(node, time_ns);
CREATE INDEX obs_node_layer_time ON observations(node, layer, time_ns);
CREATE INDEX obs_node_component_time ON observations(node, component, time_ns);
CREATE INDEX obs_node_kind_time ON observations(node, kind, time_ns);
CREATE INDEX obs_time ON observations(time_ns);
CREATE TABLE findings(
  id INTEGER PRIMARY KEY,
  node TEXT NOT NULL,
  layer TEXT NOT NULL,
  fault_class TEXT NOT NULL,
  component TEXT NOT NULL,
  severity TEXT NOT NULL,
  first_ns INTEGER NOT NULL,
  last_ns INTEGER NOT NULL,
  payload TEXT NOT NULL);
CREATE INDEX findings_node_last ON findings(node, last_ns);
CREATE INDEX findings_last ON findings(last_ns);
CREATE TABLE diagnoses(
  id INTEGER PRIMARY KEY,
  node TEXT NOT NULL,
  fault_class TEXT NOT NULL,
  component TEXT NOT NULL,
  action TEXT NOT NULL,
  first_ns INTEGER NOT NULL,
  last_ns INTEGER NOT NULL,
  created_ns INTEGER NOT NULL,
  payload TEXT NOT NULL);
CREATE INDEX diagnoses_node_last ON diagnoses(node, last_ns);
CREATE INDEX diagnoses_last ON diagnoses(last_ns);
CREATE TABLE actions(
  id INTEGER PRIMARY KEY,
  node TEXT NOT NULL,
  action TEXT NOT NULL,
  time_ns INTEGER NOT NULL,
  diagnosis_id INTEGER,
  dry_run INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  payload TEXT NOT NULL);
CREATE INDEX actions_node_time ON actions(node, time_ns);
CREATE INDEX actions_time ON actions(time_ns);
CREATE TABLE cursors(
  node TEXT NOT NULL,
  source TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY(node, source, key)) WITHOUT ROWID;
)sql";

// v2: a flat periodic series (store/series.h) costs one row per change instead of one
// per heartbeat. `series` holds, per series, its current point (the newest stored row)
// and the last time the series was read with that content, updated in place; when the
// series changes, the previous point's row keeps that time in `seen_until_ns`, so a
// reader of any window still sees a flat series alive up to its last reading. In place:
// ADD COLUMN rewrites no row, and v1 rows stay as they are (their series get an entry at
// their next stored reading).
constexpr std::string_view kV2 = R"sql(
ALTER TABLE observations ADD COLUMN seen_until_ns INTEGER;
CREATE INDEX obs_seen_until ON observations(seen_until_ns) WHERE seen_until_ns IS NOT NULL;
CREATE TABLE series(
  series_id BLOB PRIMARY KEY,
  node TEXT NOT NULL,
  obs_id INTEGER NOT NULL,
  point_ns INTEGER NOT NULL,
  last_seen_ns INTEGER NOT NULL) WITHOUT ROWID;
)sql";

constexpr Migration kMigrations[] = {
    {1, "observations, findings, diagnoses, actions, cursors", kV1},
    {2, "series: last seen per periodic series instead of a row per unchanged reading", kV2},
};

// Applies `m` unless another connection already has: two processes opening a new store
// at once (the agent and `why-slow`, two agents) both read version 0 before either
// writes, so the version is read again under the write lock before anything runs.
Status ApplyOne(sqlite3* db, const Migration& m) {
  if (auto s = Exec(db, "BEGIN IMMEDIATE"); !s.ok()) return s;
  auto current = SchemaVersion(db);
  Status s = current.ok() ? Status() : current.status();
  if (s.ok() && *current >= m.version) return Exec(db, "COMMIT");
  if (s.ok()) s = Exec(db, m.sql);
  if (s.ok())
    s = Exec(db, "DELETE FROM schema_version; INSERT INTO schema_version(version) VALUES(" + std::to_string(m.version) +
                     ")");
  if (s.ok()) return Exec(db, "COMMIT");
  (void)Exec(db, "ROLLBACK");
  return Status(s.code(), "migration " + std::to_string(m.version) + " (" + std::string(m.what) + "): " + s.message());
}

}  // namespace

std::span<const Migration> StoreMigrations() { return kMigrations; }

Result<int> SchemaVersion(sqlite3* db) {
  auto has = QueryInt(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_version'");
  if (!has.ok()) return has.status();
  if (*has == 0) return 0;
  auto v = QueryInt(db, "SELECT coalesce(max(version), 0) FROM schema_version");
  if (!v.ok()) return v.status();
  return static_cast<int>(*v);
}

Result<int> ApplyMigrations(sqlite3* db, std::span<const Migration> migrations) {
  if (auto s = Exec(db, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)"); !s.ok()) {
    return s;
  }
  auto current = SchemaVersion(db);
  if (!current.ok()) return current.status();
  const int newest = migrations.empty() ? 0 : migrations.back().version;
  if (*current > newest) {
    return Status(StatusCode::kUnsupported, "database schema version " + std::to_string(*current) +
                                                " is newer than this faultline supports (" + std::to_string(newest) +
                                                "); use a newer faultline or another database file");
  }
  int reached = *current;
  for (const Migration& m : migrations) {
    if (m.version <= reached) continue;
    if (auto s = ApplyOne(db, m); !s.ok()) return s;
    reached = m.version;
  }
  return reached;
}

}  // namespace faultline::store
