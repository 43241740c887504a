// Plain types the store takes and returns besides the core types: query filters,
// rows with their ids, cursors and the record of an action taken.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/types.h"

namespace faultline {

// What the policy/actuators did (or would have done in dry-run) about a diagnosis.
struct ActionRecord {
  int64_t time_ns = 0;
  std::string node;
  Action action = Action::kNone;
  std::optional<int64_t> diagnosis_id;  // row id from Store::PutDiagnosis, when known
  bool dry_run = true;
  std::string outcome;  // "ok", "skipped: cool-down", "error: ...", ...
  std::string reason;   // human-readable why (drain reason, ticket text)
  std::map<std::string, std::string> attrs;
  bool operator==(const ActionRecord&) const = default;
};
void to_json(Json& j, const ActionRecord& v);
void from_json(const Json& j, ActionRecord& v);

// A source's resume point: one key/value per (node, source, key), e.g.
// ("node7", "kmsg", "last_seq") = "3973" or ("node7", "redfish:bmc", "sel_last_id") = "412".
struct Cursor {
  std::string node;
  std::string source;
  std::string key;
  std::string value;
  bool operator==(const Cursor&) const = default;
};

// Observation filter. Every set field narrows the result; the time window is
// inclusive at both ends. Results are ordered by time (then insertion order).
struct ObservationQuery {
  std::optional<std::string> node;
  std::optional<Layer> layer;
  std::optional<std::string> component;  // canonical id, e.g. "gpu/3"
  std::optional<ObsKind> kind;
  std::optional<Source> source;
  int64_t since_ns = std::numeric_limits<int64_t>::min();
  int64_t until_ns = std::numeric_limits<int64_t>::max();
  size_t limit = 100000;      // 0 = no limit
  bool newest_first = false;  // with a limit: the latest `limit` rows, newest first
  // A flat periodic series (store/series.h) is stored once per change, with the time it
  // was last read unchanged. With include_seen, the answer reads as if a row had been
  // stored each time: a stored point whose series went on reading the same until
  // `seen_until_ns` is followed by a copy of it dated then (Row::seen_copy), and a point
  // stored before since_ns but still read inside the window appears as a copy dated
  // since_ns and one dated when last seen (both clamped into the window). So a reader
  // (the agent's warm start, why-slow) sees such a series alive up to its last reading.
  // false: stored rows only (with Row::seen_until_ns).
  bool include_seen = true;
};

// Filter for findings, diagnoses and actions: rows of `node` (all nodes when unset)
// whose time span [first, last] overlaps [since_ns, until_ns]; oldest first.
struct RecordQuery {
  std::optional<std::string> node;
  int64_t since_ns = std::numeric_limits<int64_t>::min();
  int64_t until_ns = std::numeric_limits<int64_t>::max();
  size_t limit = 10000;  // 0 = no limit
};

template <typename T>
struct Row {
  int64_t id = 0;
  std::string node;
  T value;
  // Observations only. seen_until_ns: the last time this stored reading's series was
  // read with the same content (> value.time_ns), 0 when never after it was stored.
  // seen_copy: not a row of its own but stored row `id` dated when it was seen (see
  // ObservationQuery::include_seen).
  int64_t seen_until_ns = 0;
  bool seen_copy = false;
  // Diagnoses read by Store::LatestDiagnosis: when the row was stored (the agent stores a
  // diagnosis when it changes, so the latest one has been the primary since then).
  int64_t created_ns = 0;
};

// A stored row that could not be decoded (e.g. an enum name this binary does not
// know, written by a newer version). Reported, never silently dropped or fatal.
struct BadRow {
  std::string table;
  int64_t id = 0;
  std::string error;
};

template <typename T>
struct QueryResult {
  std::vector<Row<T>> rows;
  std::vector<BadRow> bad_rows;
};

struct AppendStats {
  size_t inserted = 0;    // observations not seen before
  size_t updated = 0;     // already stored; count raised to the larger folded count
  size_t duplicates = 0;  // already stored, nothing new
  // Positions, in the observations given to Append, of those `duplicates`, ascending: the
  // facts the store already had (so a caller does not count them a second time).
  std::vector<size_t> duplicate_indexes;
  // The `seen` readings of Append: series whose last-seen time moved (no row written),
  // and readings stored as rows after all because the store had no point for their series
  // (a store upgraded from schema 1, or a series retention removed).
  size_t seen_marked = 0;
  size_t seen_stored = 0;
};

struct RetentionStats {
  int64_t observations_deleted = 0;  // by age or size, and thinned
  int64_t observations_thinned = 0;  // of which per-step samples thinned (StoreOptions::thin_after_ns)
  int64_t records_deleted = 0;  // findings + diagnoses + actions
  int64_t bytes_before = 0;
  int64_t bytes_after = 0;
};

// Store::GetMaxRowIds: the highest row id per table, 0 when the table is empty.
struct MaxRowIds {
  int64_t observations = 0;
  int64_t findings = 0;
  int64_t diagnoses = 0;
  int64_t actions = 0;
};

struct StoreStats {
  int64_t observations = 0;
  int64_t findings = 0;
  int64_t diagnoses = 0;
  int64_t actions = 0;
  int64_t series = 0;      // periodic series with a current point (store/series.h)
  int64_t used_bytes = 0;  // pages in use x page size (excludes free pages and the WAL)
  int64_t file_bytes = 0;  // main database file size
  int schema_version = 0;
};

}  // namespace faultline
