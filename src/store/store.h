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
// this binary, kUnavailable when locked or closed, kIoError for disk errors.
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

  // Retention (ApplyRetention): drop rows older than this (0 = keep forever).
  int64_t max_age_ns = int64_t{30} * 24 * 3600 * 1'000'000'000;
  // ...and, oldest observations first, until the pages in use fit in this many bytes
  // (0 = no limit). Deletion stops at 90% of the limit so retention does not run on
  // every append.
  int64_t max_bytes = int64_t{2} << 30;
  // Rows deleted per statement while enforcing max_bytes.
  int64_t retention_batch_rows = 5000;

  // Run PRAGMA quick_check at open (reads the whole file: off by default; damage is
  // still reported as kCorrupt by whichever call touches it).
  bool check_integrity_on_open = false;
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
  Result<AppendStats> Append(const std::vector<Observation>& observations, const std::vector<Cursor>& cursors = {});

  Result<QueryResult<Observation>> QueryObservations(const ObservationQuery& query);

  // Findings, diagnoses and actions: Put returns the new row id.
  Result<int64_t> PutFinding(const std::string& node, const Finding& finding);
  Result<int64_t> PutDiagnosis(const std::string& node, const Diagnosis& diagnosis, int64_t created_ns);
  Result<int64_t> PutAction(const ActionRecord& action);
  Result<QueryResult<Finding>> ListFindings(const RecordQuery& query);
  Result<QueryResult<Diagnosis>> ListDiagnoses(const RecordQuery& query);
  Result<QueryResult<ActionRecord>> ListActions(const RecordQuery& query);

  // Cursors outside an Append (e.g. a source that skipped unreadable input).
  Status PutCursors(const std::vector<Cursor>& cursors);
  // nullopt when never saved.
  Result<std::optional<std::string>> GetCursor(const std::string& node, const std::string& source,
                                               const std::string& key);
  Result<std::vector<Cursor>> ListCursors(const std::string& node, const std::string& source);

  // Deletes rows older than now_ns - max_age_ns, then the oldest observations until
  // the size limit holds, then returns freed pages to the OS (incremental vacuum) and
  // truncates the WAL. Cursors are never deleted.
  Result<RetentionStats> ApplyRetention(int64_t now_ns);

  Result<StoreStats> Stats();

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
