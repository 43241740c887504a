// faultline's embedded store (DESIGN.md "Store"): one SQLite database in WAL mode
// holding observations, findings, diagnoses, actions and source cursors.
//
// Durability contract: when Append returns OK, its observations and cursors are
// committed together and survive kill -9 of the process (WAL + the synchronous level
// below). A source that saves its cursor in the same Append as the observations it
// covers resumes after a restart exactly where the last commit ended: nothing the
// store acknowledged is lost, and anything re-read from before the cursor is
// recognised by the dedup key (store/dedup_key.h) and stored once.
//
// Thread-safety: a Store may be shared by threads; every method takes an internal
// mutex, so calls are serialized (one SQLite connection). Other processes may read the
// file concurrently (WAL readers do not block the writer); a second writer process
// waits up to busy_timeout_ms and then gets kUnavailable.
//
// Errors: kCorrupt when the file is not a faultline/SQLite database or is damaged (the
// file is never recreated or overwritten), kUnsupported when its schema is newer than
// this binary, kUnavailable when locked or closed, kIoError for disk errors (a full disk
// is kIoError "database or disk is full": the transaction is rolled back whole, so the
// caller still holds everything it tried to store and can retry it later).
//
// Refusal before writing: Open checks an existing file with reads only (SQLite header,
// size against the page count the header records, application_id, faultline's tables,
// PRAGMA quick_check) and returns kCorrupt before any pragma, migration or WAL
// checkpoint could change a byte of a file that is damaged or belongs to someone else.
// A store the binary creates is created with mode 0600 (its -wal/-shm inherit it): it
// holds the node's logs.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "store/records.h"

struct sqlite3;

namespace faultline {

struct StoreOptions {
  // FULL (default): every commit is fsynced, so it also survives power loss, not only
  // kill -9. The node we run on may be the one with the failing PSU, and commits are
  // batched (one per source poll), so the fsync per commit is cheap. NORMAL survives
  // kill -9 too (the WAL is in the OS page cache) but may lose the last commits on a
  // power cut or kernel panic; choose it only for throughput on disposable stores.
  enum class Synchronous { kNormal, kFull };
  Synchronous synchronous = Synchronous::kFull;

  // How long a call waits for another connection's lock before kUnavailable.
  int busy_timeout_ms = 5000;

  // The connection's page cache, KiB (PRAGMA cache_size; 0 = SQLite's default, 2000). The
  // agent's commits touch the newest pages of each table and index, and readers scan: a
  // small cache costs neither measurably, and SQLite's default was a quarter of an idle
  // agent's heap (docs/store.md "Options").
  int cache_kib = 512;

  // Retention (ApplyRetention): drop rows older than this (0 = keep forever).
  int64_t max_age_ns = int64_t{30} * 24 * 3600 * 1'000'000'000;
  // ...and, oldest observations first, until the pages in use fit in this many bytes
  // (0 = no limit). Deletion stops at 90% of the limit so retention does not run on
  // every append.
  int64_t max_bytes = int64_t{2} << 30;
  // Rows deleted per statement while enforcing max_bytes.
  int64_t retention_batch_rows = 5000;
  // Thinning (ApplyRetention): a training job's per-step samples (workload step_time and
  // throughput: one row per step, ~86 k a day for a job stepping every second) older than
  // thin_after_ns keep one row per thin_to_ns per node, component, kind and job: the first
  // of each interval, a real report. Recent history (the detectors' window, the warm
  // start, why-slow, the fleet's comparisons) keeps every step; a day back, a minute's
  // resolution is what anyone reads. 0 = never thin.
  int64_t thin_after_ns = int64_t{24} * 3600 * 1'000'000'000;
  int64_t thin_to_ns = int64_t{60} * 1'000'000'000;

  // Run PRAGMA quick_check at open, before anything is written (reads the whole file:
  // seconds per GiB, see docs/store.md). On by default so a damaged store is refused
  // instead of written into; without it, damage is still reported as kCorrupt by
  // whichever call touches it. Not run for read_only opens (a reader damages nothing).
  bool check_integrity_on_open = true;
  // Instead of the whole file, check only these tables and their indexes (PRAGMA
  // quick_check(table)): a health check that writes decisions checks what it reads and
  // writes (diagnoses, actions) in milliseconds, where the whole file takes seconds per
  // GiB. Used only when check_integrity_on_open is on.
  std::vector<std::string> check_integrity_tables;

  // Open an existing store for reading only (`faultline why-slow`): never creates,
  // migrates or writes the file, and works on a read-only file or directory. When the
  // directory does not let SQLite create its -shm file, the file is opened immutable
  // (which assumes no agent is writing it at the same time). Writes return
  // kPermissionDenied. A store with an older schema is read as it is.
  bool read_only = false;
};

class Store {
 public:
  // Opens or creates the database at `path` ("" or ":memory:" for a private in-memory
  // store) and applies pending schema migrations.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, const StoreOptions& options = {});

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Stores `observations` and saves `cursors` in one transaction: all or nothing.
  // Duplicates (same dedup key) are not stored again; a duplicate with a larger
  // `count` raises the stored count. Observations must name a node.
  //
  // A stored periodic reading (store/series.h) becomes its series' current point. `seen`
  // are periodic readings the caller found unchanged since that point (the agent's
  // change filter): no row is written for them, the series' last-seen time moves to
  // their time instead (one small row updated in place; queries read it back as
  // ObservationQuery::include_seen says). A `seen` reading whose series has no current
  // point here, or that is not a periodic reading, is stored as a row after all, so
  // nothing the caller hands over is lost. AppendStats::duplicate_indexes index
  // `observations` only.
  Result<AppendStats> Append(const std::vector<Observation>& observations, const std::vector<Cursor>& cursors = {},
                             const std::vector<Observation>& seen = {});

  Result<QueryResult<Observation>> QueryObservations(const ObservationQuery& query);

  // Findings, diagnoses and actions: Put returns the new row id.
  Result<int64_t> PutFinding(const std::string& node, const Finding& finding);
  Result<int64_t> PutDiagnosis(const std::string& node, const Diagnosis& diagnosis, int64_t created_ns);
  Result<int64_t> PutAction(const ActionRecord& action);
  Result<QueryResult<Finding>> ListFindings(const RecordQuery& query);
  Result<QueryResult<Diagnosis>> ListDiagnoses(const RecordQuery& query);
  Result<QueryResult<ActionRecord>> ListActions(const RecordQuery& query);
  // The newest stored diagnosis of `node` (highest row id) whatever its time span;
  // nullopt when none. A "none" diagnosis has no time span, so a window query misses it.
  Result<std::optional<Row<Diagnosis>>> LatestDiagnosis(const std::string& node);
  // Every node name with stored observations, findings or diagnoses, sorted (an index
  // skip-scan per table: one seek per node, whatever the store's size).
  Result<std::vector<std::string>> NodeNames();
  // When the agent last heard from any source of `node`: the newest observation's time or
  // the last reading of a flat series, whichever is later; 0 when nothing is stored. A
  // health check calls the node blind when this is old (`faultline check`).
  Result<int64_t> LastHeardNs(const std::string& node);

  // Rows whose id is greater than `after_id`, in id order (= the order they were stored),
  // at most `limit` (0 = no limit): a follower of the store (the fleet publisher) keeps
  // the last id it handed on as its cursor and asks for what came after. Observations as
  // stored (no seen copies; count as raised by later folds). Undecodable rows come back in
  // bad_rows with their ids, so a follower can step past them.
  Result<QueryResult<Observation>> ObservationsAfter(int64_t after_id, size_t limit);
  Result<QueryResult<Finding>> FindingsAfter(int64_t after_id, size_t limit);
  Result<QueryResult<Diagnosis>> DiagnosesAfter(int64_t after_id, size_t limit);
  Result<QueryResult<ActionRecord>> ActionsAfter(int64_t after_id, size_t limit);
  // The highest row id of each table (0 when empty). Ids only grow, except that a table
  // retention emptied starts again from 1: a follower whose cursor is above the highest id
  // knows its table was emptied and starts over.
  Result<MaxRowIds> GetMaxRowIds();

  // Cursors outside an Append (e.g. a source that skipped unreadable input).
  Status PutCursors(const std::vector<Cursor>& cursors);
  // nullopt when never saved.
  Result<std::optional<std::string>> GetCursor(const std::string& node, const std::string& source,
                                               const std::string& key);
  Result<std::vector<Cursor>> ListCursors(const std::string& node, const std::string& source);

  // Deletes rows older than now_ns - max_age_ns, then the oldest observations until
  // the size limit holds, then returns freed pages to the OS (incremental vacuum) and
  // truncates the WAL. Cursors are never deleted. A row's age is that of its last
  // reading: a periodic point last seen within max_age_ns is kept however old it is,
  // and the current point of a series is never deleted for size (it is what the
  // series reads now); a series not seen for max_age_ns goes with its point.
  Result<RetentionStats> ApplyRetention(int64_t now_ns);

  Result<StoreStats> Stats();

  // Caps the database at `bytes` (whole pages; never below its current size; 0 = no
  // cap): a write that would grow it further fails with kIoError "database or disk is
  // full" and rolls back, exactly as on a full disk. Tests use it to make commits fail on
  // demand; the cap holds for this connection until changed.
  Status SetFileSizeLimit(int64_t bytes);

  // Checkpoints the WAL into the main file and closes. Idempotent; every later call
  // returns kUnavailable. The destructor closes too (ignoring errors).
  Status Close();

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::mutex mu_;
  std::unique_ptr<Impl> impl_;  // null after Close
};

}  // namespace faultline
