#include "store/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <variant>

#include "core/json.h"
#include "store/dedup_key.h"
#include "store/schema.h"
#include "store/series.h"
#include "store/sqlite.h"

namespace faultline {

using store::DbHandle;
using store::Exec;
using store::QueryInt;
using store::SqliteStatus;
using store::Stmt;

namespace {

constexpr std::string_view kInsertObs =
    "INSERT INTO observations(dedup_key, node, layer, source, kind, component, time_ns, seq, code, count, "
    "payload) VALUES(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(dedup_key) DO NOTHING";
constexpr std::string_view kRaiseCount = "UPDATE observations SET count = ?1 WHERE dedup_key = ?2 AND count < ?1";
constexpr std::string_view kUpsertCursor =
    "INSERT INTO cursors(node, source, key, value) VALUES(?,?,?,?) "
    "ON CONFLICT(node, source, key) DO UPDATE SET value = excluded.value";
// Schema 2: the series table (store/series.h, schema.cc).
constexpr std::string_view kGetSeries = "SELECT obs_id, point_ns, last_seen_ns FROM series WHERE series_id = ?";
constexpr std::string_view kPutSeries =
    "INSERT INTO series(series_id, node, obs_id, point_ns, last_seen_ns) VALUES(?1,?2,?3,?4,?4) "
    "ON CONFLICT(series_id) DO UPDATE SET node = excluded.node, obs_id = excluded.obs_id, "
    "point_ns = excluded.point_ns, last_seen_ns = excluded.last_seen_ns";
// Changes one row exactly when the series is known (max() keeps a later time).
constexpr std::string_view kSeenSeries = "UPDATE series SET last_seen_ns = max(last_seen_ns, ?2) WHERE series_id = ?1";
constexpr std::string_view kClosePoint = "UPDATE observations SET seen_until_ns = ?2 WHERE id = ?1";
// The most history one retention pass thins (Impl::ThinStepSamples).
constexpr int64_t kThinPassSpanNs = int64_t{24} * 3600 * 1'000'000'000;
// The schema version from which observations have seen_until_ns and the series table.
constexpr int kSeriesSchema = 2;

// Invalid UTF-8 (common in kernel lines and BMC strings) is replaced rather than
// thrown on: the payload is evidence for people, the dedup key covers the exact bytes.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

int64_t ClampCount(uint64_t c) { return c > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(c); }

using Param = std::variant<int64_t, std::string>;

void BindAll(Stmt& st, const std::vector<Param>& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const int idx = static_cast<int>(i + 1);
    if (const auto* v = std::get_if<int64_t>(&params[i]))
      st.Bind(idx, *v);
    else
      st.Bind(idx, std::get<std::string>(params[i]));
  }
}

int64_t LimitValue(size_t limit) { return limit == 0 ? -1 : static_cast<int64_t>(limit); }

// PRAGMA application_id of a faultline store ("FltN"): tells our file from another
// program's SQLite database before anything is written to it.
constexpr int64_t kApplicationId = 0x466c744e;
// SQLite's own default page-count ceiling (what "no cap" restores).
constexpr int64_t kSqliteMaxPages = 4294967294;

uint32_t BigEndian(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

bool WalHasFrames(const std::string& path) {
  struct stat st {};
  return ::stat((path + "-wal").c_str(), &st) == 0 && st.st_size > 0;
}

// Checks an existing file's SQLite header with plain reads, before SQLite (which would
// write its journal mode, migrations or a checkpoint into it) touches the file. A file
// that is absent or empty is a new store. Catches: not SQLite at all, a file cut short
// (not whole pages, or fewer pages than the header records while no WAL could hold the
// rest) and another program's database (a foreign application_id).
Status CheckFileBeforeOpen(const std::string& path, bool& exists) {
  struct stat st {};
  exists = false;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return StatusFromErrno(errno, "stat");
  }
  exists = true;
  if (!S_ISREG(st.st_mode)) return Status(StatusCode::kInvalidArgument, "not a regular file");
  if (st.st_size == 0) return Status::Ok();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return StatusFromErrno(errno, "open");
  std::array<unsigned char, 100> h{};
  const ssize_t n = ::pread(fd, h.data(), h.size(), 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(h.size()) || std::memcmp(h.data(), "SQLite format 3", 16) != 0) {
    return Status(StatusCode::kCorrupt, "file is not a database (no SQLite header)");
  }
  int64_t page_size = BigEndian(&h[16], 2);
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) != 0) {
    return Status(StatusCode::kCorrupt, "file is not a database (bad page size " + std::to_string(page_size) + ")");
  }
  const int64_t pages = st.st_size / page_size;
  if (st.st_size % page_size != 0) {
    return Status(StatusCode::kCorrupt, "database file is truncated: " + std::to_string(st.st_size) +
                                            " bytes is not a whole number of " + std::to_string(page_size) +
                                            "-byte pages");
  }
  // The header's page count is valid when its change counter matches version-valid-for.
  // With WAL frames present a crash mid-checkpoint may leave the main file shorter than
  // its new header says; the WAL still holds those pages, so only judge without one.
  const uint32_t header_pages = BigEndian(&h[28], 4);
  if (header_pages > 0 && BigEndian(&h[24], 4) == BigEndian(&h[92], 4) && pages < header_pages && !WalHasFrames(path)) {
    return Status(StatusCode::kCorrupt, "database file is truncated: its header records " +
                                            std::to_string(header_pages) + " pages, the file holds " +
                                            std::to_string(pages));
  }
  const uint32_t app = BigEndian(&h[68], 4);
  if (app != 0 && app != kApplicationId) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", app);
    return Status(StatusCode::kCorrupt, std::string("not a faultline store (another program's database, "
                                                    "application_id ") +
                                            hex + ")");
  }
  return Status::Ok();
}

// Creates the store file 0600 (the node's logs are not for every local user); SQLite
// gives its -wal and -shm the database file's mode.
Status CreatePrivateFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno == EEXIST ? Status::Ok() : StatusFromErrno(errno, "create");
  ::close(fd);
  return Status::Ok();
}

// "file:" URI for sqlite3_open_v2 with SQLITE_OPEN_URI: '%', '?' and '#' escaped.
std::string FileUri(const std::string& path, std::string_view query) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      uri += buf;
    } else {
      uri += c;
    }
  }
  uri += "?";
  uri += query;
  return uri;
}

Result<bool> HasTable(sqlite3* db, std::string_view name) {
  auto st = Stmt::Prepare(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?");
  if (!st.ok()) return st.status();
  st->Bind(1, name);
  auto row = st->Step();
  if (!row.ok()) return row.status();
  return *row && st->Int(0) > 0;
}

}  // namespace

struct Store::Impl {
  DbHandle db;
  StoreOptions options;
  bool fresh = false;  // no tables yet: a new store
  int schema = 0;      // the file's schema version once open (older when read-only)
  std::optional<Stmt> insert_obs;
  std::optional<Stmt> raise_count;
  std::optional<Stmt> upsert_cursor;
  std::optional<Stmt> get_series;
  std::optional<Stmt> put_series;
  std::optional<Stmt> seen_series;
  std::optional<Stmt> close_point;

  // Per-step samples before this time are thinned already (ApplyRetention). Not kept in
  // the file: the first retention after an open starts from the oldest step stored, later
  // ones go on from here (a day at most per pass).
  int64_t thinned_until_ns = 0;

  bool has_series() const { return schema >= kSeriesSchema; }

  Status Validate();
  Status Configure(bool is_memory);
  Status Prepare();
  Status InsertOne(const Observation& obs, size_t index, AppendStats& stats);
  Status NewPoint(const std::string& series_id, const Observation& obs, int64_t obs_id);
  Status MarkSeen(const Observation& obs, AppendStats& stats);
  Result<QueryResult<Observation>> Query(const ObservationQuery& q);
  Status SaveCursors(const std::vector<Cursor>& cursors);
  Result<int64_t> UsedBytes();
  Result<int64_t> DeleteOldestObservations(int64_t target_bytes);
  Result<int64_t> DeleteOlderThan(int64_t cutoff_ns, int64_t& records_deleted);
  Result<int64_t> ThinStepSamples(int64_t now_ns);
  Result<int64_t> InsertRecord(std::string_view sql, const std::vector<Param>& params);
  template <typename T>
  Result<QueryResult<T>> ListRecords(std::string_view table, std::string_view first_col, std::string_view last_col,
                                     const RecordQuery& q);
  template <typename T>
  Result<QueryResult<T>> RecordsAfter(std::string_view table, int64_t after_id, size_t limit);
};

// Reads only: decides whether this file may be written before anything is.
Status Store::Impl::Validate() {
  sqlite3* h = db.get();
  sqlite3_busy_timeout(h, options.busy_timeout_ms);
  // A non-database file fails here (SQLITE_NOTADB).
  auto tables = QueryInt(h, "SELECT count(*) FROM sqlite_master");
  if (!tables.ok()) return tables.status();
  fresh = *tables == 0;
  auto app = QueryInt(h, "PRAGMA application_id");
  if (!app.ok()) return app.status();
  if (!fresh && *app != kApplicationId) {
    // Stores written before the application_id existed carry 0 and our tables.
    auto versioned = HasTable(h, "schema_version");
    if (!versioned.ok()) return versioned.status();
    auto observations = HasTable(h, "observations");
    if (!observations.ok()) return observations.status();
    if (*app != 0 || !*versioned || !*observations) {
      return Status(StatusCode::kCorrupt,
                    "not a faultline store (an SQLite database with other tables); refusing to write to it");
    }
  }
  if (options.check_integrity_on_open && !options.read_only && !fresh) {
    std::vector<std::string> checks;
    for (const std::string& t : options.check_integrity_tables) {
      // Table names are the caller's constants; anything else is refused, never quoted in.
      if (t != "observations" && t != "findings" && t != "diagnoses" && t != "actions" && t != "cursors") {
        return Status(StatusCode::kInvalidArgument, "integrity check of an unknown table: " + t);
      }
      checks.push_back("PRAGMA quick_check(" + t + ")");
    }
    if (checks.empty()) checks.push_back("PRAGMA quick_check");
    for (const std::string& sql : checks) {
      auto check = Stmt::Prepare(h, sql);
      if (!check.ok()) return check.status();
      auto row = check->Step();
      if (!row.ok()) return row.status();
      if (*row && check->Text(0) != "ok") return Status(StatusCode::kCorrupt, "integrity check: " + check->Text(0));
    }
  }
  return Status::Ok();
}

// The writes of opening, only after Validate accepted the file.
Status Store::Impl::Configure(bool is_memory) {
  sqlite3* h = db.get();
  // auto_vacuum can only be chosen before the first table exists.
  if (fresh) {
    if (auto s = Exec(h, "PRAGMA auto_vacuum = INCREMENTAL"); !s.ok()) return s;
  }
  if (!is_memory) {
    auto mode = Stmt::Prepare(h, "PRAGMA journal_mode = WAL");
    if (!mode.ok()) return mode.status();
    auto row = mode->Step();
    if (!row.ok()) return row.status();
    if (!*row || mode->Text(0) != "wal") {
      return Status(StatusCode::kUnsupported, "store: cannot enable WAL journal mode on this file system");
    }
  }
  auto app = QueryInt(h, "PRAGMA application_id");
  if (!app.ok()) return app.status();
  if (*app != kApplicationId) {
    if (auto s = Exec(h, "PRAGMA application_id = " + std::to_string(kApplicationId)); !s.ok()) return s;
  }
  const bool full = options.synchronous == StoreOptions::Synchronous::kFull;
  if (auto s = Exec(h, full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"); !s.ok()) return s;
  // Keeps the WAL file from staying at its high-water mark after checkpoints.
  return Exec(h, "PRAGMA journal_size_limit = 67108864");
}

Status Store::Impl::Prepare() {
  auto version = store::SchemaVersion(db.get());
  if (!version.ok()) return version.status();
  schema = *version;
  std::vector<std::pair<std::optional<Stmt>*, std::string_view>> statements{
      {&insert_obs, kInsertObs}, {&raise_count, kRaiseCount}, {&upsert_cursor, kUpsertCursor}};
  // A read-only open of an older store has no series table (and writes nothing anyway).
  if (has_series()) {
    statements.insert(statements.end(), {{&get_series, kGetSeries},
                                         {&put_series, kPutSeries},
                                         {&seen_series, kSeenSeries},
                                         {&close_point, kClosePoint}});
  }
  for (auto [slot, sql] : statements) {
    auto st = Stmt::Prepare(db.get(), sql);
    if (!st.ok()) return st.status();
    slot->emplace(std::move(*st));
  }
  return Status::Ok();
}

namespace {

Result<DbHandle> OpenHandle(const std::string& name, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  DbHandle db(raw);
  if (rc != SQLITE_OK) return SqliteStatus(rc, raw, "open");
  return db;
}

// Read-only: "mode=ro" shares the agent's WAL; where the -shm file cannot be created
// (a read-only directory, a file owned by someone else) SQLite cannot even read a WAL
// database that way, so it is read immutable instead.
Result<DbHandle> OpenReadOnly(const std::string& path) {
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  auto db = OpenHandle(FileUri(path, "mode=ro"), flags);
  if (db.ok()) {
    const int rc = sqlite3_exec(db->get(), "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
    const int primary = rc & 0xff;
    if (primary != SQLITE_READONLY && primary != SQLITE_CANTOPEN) return db;
  }
  return OpenHandle(FileUri(path, "immutable=1"), flags);
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, const StoreOptions& options) {
  const bool is_memory = path.empty() || path == ":memory:";
  auto fail = [&](const Status& s) { return Status(s.code(), "store: " + path + ": " + s.message()); };
  bool exists = false;
  if (!is_memory) {
    if (auto s = CheckFileBeforeOpen(path, exists); !s.ok()) return fail(s);
    if (!exists && options.read_only) return Status(StatusCode::kNotFound, "store: " + path + ": no such file");
    if (!exists) {
      if (auto s = CreatePrivateFile(path); !s.ok()) return fail(s);
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.read_only && !is_memory) {
    auto db = OpenReadOnly(path);
    if (!db.ok()) return fail(db.status());
    impl->db = std::move(*db);
  } else {
    // No SQLITE_OPEN_CREATE for files: the file was created above with its mode.
    auto db = OpenHandle(is_memory ? ":memory:" : path, SQLITE_OPEN_READWRITE | (is_memory ? SQLITE_OPEN_CREATE : 0));
    if (!db.ok()) return fail(db.status());
    impl->db = std::move(*db);
  }
  if (auto s = impl->Validate(); !s.ok()) return fail(s);
  if (options.cache_kib > 0) {  // the connection's own setting: read-only too, nothing written
    const std::string pragma = "PRAGMA cache_size = -" + std::to_string(options.cache_kib);
    if (auto s = Exec(impl->db.get(), pragma); !s.ok()) return fail(s);
  }
  if (options.read_only) {
    if (impl->fresh) return fail(Status(StatusCode::kNotFound, "empty database: no faultline store here"));
    // Read as it is: no migration, but never a schema newer than this binary.
    auto version = store::SchemaVersion(impl->db.get());
    if (!version.ok()) return fail(version.status());
    const int newest = store::StoreMigrations().back().version;
    if (*version > newest) {
      return fail(Status(StatusCode::kUnsupported, "database schema version " + std::to_string(*version) +
                                                       " is newer than this faultline supports (" +
                                                       std::to_string(newest) + ")"));
    }
  } else {
    // Two processes creating one store at once: a few of SQLite's lock upgrades here
    // (journal mode, application id, a migration) answer "locked" at once instead of
    // waiting on the busy handler, to avoid a deadlock. Each step is idempotent, so the
    // loser tries again, within the busy timeout.
    Status configured;
    for (int64_t waited_ms = 0;; waited_ms += 10) {
      configured = impl->Configure(is_memory);
      if (configured.ok()) {
        auto version = store::ApplyMigrations(impl->db.get(), store::StoreMigrations());
        configured = version.ok() ? Status::Ok() : version.status();
      }
      if (configured.code() != StatusCode::kUnavailable || waited_ms >= options.busy_timeout_ms) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!configured.ok()) return fail(configured);
  }
  if (auto s = impl->Prepare(); !s.ok()) return fail(s);
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Store::~Store() { (void)Close(); }

#define FAULTLINE_STORE_OPEN_OR_RETURN() \
  std::lock_guard<std::mutex> lock(mu_); \
  if (!impl_) return Status(StatusCode::kUnavailable, "store: closed")

Status Store::Impl::InsertOne(const Observation& obs, size_t index, AppendStats& stats) {
  if (obs.node.empty()) return Status(StatusCode::kInvalidArgument, "store: observation without node");
  const std::string key = store::DedupKey(obs);
  const int64_t count = ClampCount(obs.count);
  Stmt& ins = *insert_obs;
  ins.Reset();
  ins.BindBlob(1, key);
  ins.Bind(2, obs.node);
  ins.Bind(3, ToString(obs.layer));
  ins.Bind(4, ToString(obs.source));
  ins.Bind(5, ToString(obs.kind));
  ins.Bind(6, obs.component.Id());
  ins.Bind(7, obs.time_ns);
  ins.BindOptional(8, obs.seq ? std::optional<int64_t>(static_cast<int64_t>(*obs.seq)) : std::nullopt);
  ins.BindOptional(9, obs.code);
  ins.Bind(10, count);
  ins.Bind(11, Dump(Json(obs)));
  if (auto s = ins.Run(); !s.ok()) return s;
  if (sqlite3_changes(db.get()) == 1) {
    ++stats.inserted;
    if (!has_series()) return Status::Ok();
    const std::string series_id = store::SeriesId(obs);
    if (series_id.empty()) return Status::Ok();
    return NewPoint(series_id, obs, static_cast<int64_t>(sqlite3_last_insert_rowid(db.get())));
  }
  Stmt& up = *raise_count;
  up.Reset();
  up.Bind(1, count);
  up.BindBlob(2, key);
  if (auto s = up.Run(); !s.ok()) return s;
  if (sqlite3_changes(db.get()) == 1) {
    ++stats.updated;
  } else {
    ++stats.duplicates;
    stats.duplicate_indexes.push_back(index);
  }
  return Status::Ok();
}

// The row just stored becomes its series' current point. The previous point, when its
// series was read unchanged after it, keeps its last-seen time in its own row, so that
// stretch still reads as alive up to then once the series has moved on.
Status Store::Impl::NewPoint(const std::string& series_id, const Observation& obs, int64_t obs_id) {
  Stmt& get = *get_series;
  get.Reset();
  get.BindBlob(1, series_id);
  auto row = get.Step();
  if (!row.ok()) return row.status();
  if (*row && get.Int(2) > get.Int(1)) {
    const int64_t previous = get.Int(0);
    const int64_t seen_until = get.Int(2);
    get.Reset();
    Stmt& close = *close_point;
    close.Reset();
    close.Bind(1, previous);
    close.Bind(2, seen_until);
    if (auto s = close.Run(); !s.ok()) return s;
  }
  get.Reset();
  Stmt& put = *put_series;
  put.Reset();
  put.BindBlob(1, series_id);
  put.Bind(2, obs.node);
  put.Bind(3, obs_id);
  put.Bind(4, obs.time_ns);
  return put.Run();
}

// A reading its caller found unchanged: moves its series' last-seen time, or is stored
// as a row when the store has no point to attach it to (never lost).
Status Store::Impl::MarkSeen(const Observation& obs, AppendStats& stats) {
  if (obs.node.empty()) return Status(StatusCode::kInvalidArgument, "store: observation without node");
  const std::string series_id = has_series() ? store::SeriesId(obs) : std::string();
  if (!series_id.empty()) {
    Stmt& seen = *seen_series;
    seen.Reset();
    seen.BindBlob(1, series_id);
    seen.Bind(2, obs.time_ns);
    if (auto s = seen.Run(); !s.ok()) return s;
    if (sqlite3_changes(db.get()) == 1) {
      ++stats.seen_marked;
      return Status::Ok();
    }
  }
  AppendStats as_row;
  if (auto s = InsertOne(obs, 0, as_row); !s.ok()) return s;
  stats.seen_stored += as_row.inserted;
  return Status::Ok();
}

Status Store::Impl::SaveCursors(const std::vector<Cursor>& cursors) {
  for (const Cursor& c : cursors) {
    Stmt& st = *upsert_cursor;
    st.Reset();
    st.Bind(1, c.node);
    st.Bind(2, c.source);
    st.Bind(3, c.key);
    st.Bind(4, c.value);
    if (auto s = st.Run(); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<AppendStats> Store::Append(const std::vector<Observation>& observations, const std::vector<Cursor>& cursors,
                                  const std::vector<Observation>& seen) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  sqlite3* h = impl_->db.get();
  if (auto s = Exec(h, "BEGIN IMMEDIATE"); !s.ok()) return s;
  AppendStats stats;
  Status s;
  // In time order across both lists (each already is, as the agent hands them over), so
  // a series that is seen and then changes within one batch closes its stretch at the
  // right time.
  for (size_t i = 0, j = 0; s.ok() && (i < observations.size() || j < seen.size());) {
    if (j < seen.size() && (i == observations.size() || seen[j].time_ns < observations[i].time_ns)) {
      s = impl_->MarkSeen(seen[j++], stats);
    } else {
      s = impl_->InsertOne(observations[i], i, stats);
      ++i;
    }
  }
  if (s.ok()) s = impl_->SaveCursors(cursors);
  if (s.ok()) s = Exec(h, "COMMIT");
  if (!s.ok()) {
    (void)Exec(h, "ROLLBACK");
    return s;
  }
  return stats;
}

Status Store::PutCursors(const std::vector<Cursor>& cursors) {
  auto r = Append({}, cursors);
  return r.status();
}

Result<std::optional<std::string>> Store::GetCursor(const std::string& node, const std::string& source,
                                                    const std::string& key) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  auto st = Stmt::Prepare(impl_->db.get(), "SELECT value FROM cursors WHERE node=? AND source=? AND key=?");
  if (!st.ok()) return st.status();
  BindAll(*st, {node, source, key});
  auto row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(st->Text(0));
}

Result<std::vector<Cursor>> Store::ListCursors(const std::string& node, const std::string& source) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  auto st = Stmt::Prepare(impl_->db.get(), "SELECT key, value FROM cursors WHERE node=? AND source=? ORDER BY key");
  if (!st.ok()) return st.status();
  BindAll(*st, {node, source});
  std::vector<Cursor> out;
  while (true) {
    auto row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(Cursor{node, source, st->Text(0), st->Text(1)});
  }
}

namespace {

// The filters of an observation query other than time, as SQL and parameters.
struct ObsFilter {
  std::string sql;
  std::vector<Param> params;
};

ObsFilter FilterOf(const ObservationQuery& q) {
  ObsFilter f;
  auto add = [&](const char* clause, Param p) {
    f.sql += clause;
    f.params.push_back(std::move(p));
  };
  if (q.node) add(" AND node = ?", *q.node);
  if (q.layer) add(" AND layer = ?", std::string(ToString(*q.layer)));
  if (q.component) add(" AND component = ?", *q.component);
  if (q.kind) add(" AND kind = ?", std::string(ToString(*q.kind)));
  if (q.source) add(" AND source = ?", std::string(ToString(*q.source)));
  return f;
}

// Steps `st` to the end, decoding rows of (id, node, count, payload, seen_until_ns).
Status ReadObservationRows(Stmt& st, QueryResult<Observation>& out) {
  while (true) {
    auto row = st.Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
    auto obs = DecodeJson<Observation>(st.Text(3));
    if (!obs.ok()) {
      out.bad_rows.push_back(BadRow{"observations", st.Int(0), obs.status().message()});
      continue;
    }
    obs->count = static_cast<uint64_t>(st.Int(2));  // the column is raised by later folds
    Row<Observation> r{st.Int(0), st.Text(1), std::move(*obs)};
    if (!st.IsNull(4) && st.Int(4) > r.value.time_ns) r.seen_until_ns = st.Int(4);
    out.rows.push_back(std::move(r));
  }
}

bool OlderFirst(const Row<Observation>& a, const Row<Observation>& b) {
  if (a.value.time_ns != b.value.time_ns) return a.value.time_ns < b.value.time_ns;
  if (a.id != b.id) return a.id < b.id;
  return !a.seen_copy && b.seen_copy;
}

// A copy of stored row `r` dated `t` (ObservationQuery::include_seen).
Row<Observation> SeenCopy(const Row<Observation>& r, int64_t t) {
  Row<Observation> copy = r;
  copy.value.time_ns = t;
  copy.seen_copy = true;
  return copy;
}

}  // namespace

// Three reads: the window's rows (limited as asked), then the stored points whose
// series was read unchanged into the window (stretches closed in their own row, and the
// open ones in `series`), whose copies are merged in before the limit is applied.
Result<QueryResult<Observation>> Store::Impl::Query(const ObservationQuery& q) {
  const ObsFilter filter = FilterOf(q);
  const std::string seen_col = has_series() ? "seen_until_ns" : "NULL";
  const std::string cols = "SELECT id, node, count, payload, " + seen_col + " FROM observations WHERE ";
  // One windowed read: rows matching `where` (two placeholders: since, until) and the filter.
  auto read = [&](const std::string& where, const char* order, QueryResult<Observation>& into) -> Status {
    const std::string sql = cols + where + filter.sql + order + " LIMIT ?";
    std::vector<Param> params{q.since_ns, q.until_ns};
    params.insert(params.end(), filter.params.begin(), filter.params.end());
    params.push_back(LimitValue(q.limit));
    auto st = Stmt::Prepare(db.get(), sql);
    if (!st.ok()) return st.status();
    BindAll(*st, params);
    return ReadObservationRows(*st, into);
  };
  QueryResult<Observation> out;
  if (auto s = read("time_ns >= ? AND time_ns <= ?",
                    q.newest_first ? " ORDER BY time_ns DESC, id DESC" : " ORDER BY time_ns, id", out);
      !s.ok()) {
    return s;
  }
  if (!has_series()) return out;
  // Stretches that reach into the window: closed ones carry their end in their row...
  QueryResult<Observation> stretches;
  if (auto s = read("seen_until_ns >= ? AND time_ns <= ?",
                    q.newest_first ? " ORDER BY seen_until_ns DESC" : " ORDER BY time_ns", stretches);
      !s.ok()) {
    return s;
  }
  // ...open ones (each series' current point) in `series`.
  {
    std::string sql =
        "SELECT obs_id, last_seen_ns FROM series WHERE last_seen_ns > point_ns AND last_seen_ns >= ? "
        "AND point_ns <= ?";
    std::vector<Param> params{q.since_ns, q.until_ns};
    if (q.node) {
      sql += " AND node = ?";
      params.push_back(*q.node);
    }
    auto st = Stmt::Prepare(db.get(), sql);
    if (!st.ok()) return st.status();
    BindAll(*st, params);
    std::vector<std::pair<int64_t, int64_t>> open;
    while (true) {
      auto row = st->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      open.emplace_back(st->Int(0), st->Int(1));
    }
    auto one = Stmt::Prepare(db.get(), cols + "id = ?" + filter.sql);
    if (!one.ok()) return one.status();
    for (const auto& [id, last_seen] : open) {
      one->Reset();
      std::vector<Param> p{id};
      p.insert(p.end(), filter.params.begin(), filter.params.end());
      BindAll(*one, p);
      const size_t before = stretches.rows.size();
      if (auto s = ReadObservationRows(*one, stretches); !s.ok()) return s;
      if (stretches.rows.size() > before) stretches.rows.back().seen_until_ns = last_seen;
    }
  }
  out.bad_rows.insert(out.bad_rows.end(), stretches.bad_rows.begin(), stretches.bad_rows.end());
  std::map<int64_t, int64_t> seen_until;  // row id -> end of its stretch
  for (const auto& r : stretches.rows) seen_until[r.id] = r.seen_until_ns;
  for (auto& r : out.rows) {
    if (auto it = seen_until.find(r.id); it != seen_until.end()) r.seen_until_ns = it->second;
  }
  if (!q.include_seen || stretches.rows.empty()) return out;
  for (const auto& r : stretches.rows) {
    const int64_t start = std::max(r.value.time_ns, q.since_ns);
    if (r.value.time_ns < q.since_ns) out.rows.push_back(SeenCopy(r, q.since_ns));
    const int64_t end = std::min(r.seen_until_ns, q.until_ns);
    if (end > start) out.rows.push_back(SeenCopy(r, end));
  }
  if (q.newest_first) {
    std::sort(out.rows.begin(), out.rows.end(), [](const auto& a, const auto& b) { return OlderFirst(b, a); });
  } else {
    std::sort(out.rows.begin(), out.rows.end(), OlderFirst);
  }
  if (q.limit != 0 && out.rows.size() > q.limit) out.rows.resize(q.limit);
  return out;
}

Result<QueryResult<Observation>> Store::QueryObservations(const ObservationQuery& q) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->Query(q);
}

Result<int64_t> Store::Impl::InsertRecord(std::string_view sql, const std::vector<Param>& params) {
  auto st = Stmt::Prepare(db.get(), sql);
  if (!st.ok()) return st.status();
  BindAll(*st, params);
  if (auto s = st->Run(); !s.ok()) return s;
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db.get()));
}

Result<int64_t> Store::PutFinding(const std::string& node, const Finding& f) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->InsertRecord(
      "INSERT INTO findings(node, layer, fault_class, component, severity, first_ns, last_ns, payload) "
      "VALUES(?,?,?,?,?,?,?,?)",
      {node, std::string(ToString(f.layer)), std::string(ToString(f.fault_class)), f.component.Id(),
       std::string(ToString(f.severity)), f.first_ns, f.last_ns, Dump(Json(f))});
}

Result<int64_t> Store::PutDiagnosis(const std::string& node, const Diagnosis& d, int64_t created_ns) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->InsertRecord(
      "INSERT INTO diagnoses(node, fault_class, component, action, first_ns, last_ns, created_ns, payload) "
      "VALUES(?,?,?,?,?,?,?,?)",
      {node, std::string(ToString(d.fault_class)), d.component.Id(), std::string(ToString(d.action)), d.first_ns,
       d.last_ns, created_ns, Dump(Json(d))});
}

Result<int64_t> Store::PutAction(const ActionRecord& a) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  auto st = Stmt::Prepare(impl_->db.get(),
                          "INSERT INTO actions(node, action, time_ns, diagnosis_id, dry_run, outcome, payload) "
                          "VALUES(?,?,?,?,?,?,?)");
  if (!st.ok()) return st.status();
  BindAll(*st, {a.node, std::string(ToString(a.action)), a.time_ns});
  st->BindOptional(4, a.diagnosis_id);
  st->Bind(5, int64_t{a.dry_run ? 1 : 0});
  st->Bind(6, a.outcome);
  st->Bind(7, Dump(Json(a)));
  if (auto s = st->Run(); !s.ok()) return s;
  return static_cast<int64_t>(sqlite3_last_insert_rowid(impl_->db.get()));
}

template <typename T>
Result<QueryResult<T>> Store::Impl::ListRecords(std::string_view table, std::string_view first_col,
                                                std::string_view last_col, const RecordQuery& q) {
  std::string sql = "SELECT id, node, payload FROM " + std::string(table) + " WHERE " + std::string(last_col) +
                    " >= ? AND " + std::string(first_col) + " <= ?";
  std::vector<Param> params{q.since_ns, q.until_ns};
  if (q.node) {
    sql += " AND node = ?";
    params.push_back(*q.node);
  }
  sql += " ORDER BY " + std::string(first_col) + ", id LIMIT ?";
  params.push_back(LimitValue(q.limit));
  auto st = Stmt::Prepare(db.get(), sql);
  if (!st.ok()) return st.status();
  BindAll(*st, params);
  QueryResult<T> out;
  while (true) {
    auto row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    auto value = DecodeJson<T>(st->Text(2));
    if (!value.ok()) {
      out.bad_rows.push_back(BadRow{std::string(table), st->Int(0), value.status().message()});
      continue;
    }
    out.rows.push_back(Row<T>{st->Int(0), st->Text(1), std::move(*value)});
  }
}

template <typename T>
Result<QueryResult<T>> Store::Impl::RecordsAfter(std::string_view table, int64_t after_id, size_t limit) {
  auto st = Stmt::Prepare(db.get(),
                          "SELECT id, node, payload FROM " + std::string(table) + " WHERE id > ? ORDER BY id LIMIT ?");
  if (!st.ok()) return st.status();
  BindAll(*st, {after_id, LimitValue(limit)});
  QueryResult<T> out;
  while (true) {
    auto row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    auto value = DecodeJson<T>(st->Text(2));
    if (!value.ok()) {
      out.bad_rows.push_back(BadRow{std::string(table), st->Int(0), value.status().message()});
      continue;
    }
    out.rows.push_back(Row<T>{st->Int(0), st->Text(1), std::move(*value)});
  }
}

Result<QueryResult<Observation>> Store::ObservationsAfter(int64_t after_id, size_t limit) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  const std::string seen_col = impl_->has_series() ? "seen_until_ns" : "NULL";
  auto st = Stmt::Prepare(impl_->db.get(), "SELECT id, node, count, payload, " + seen_col +
                                               " FROM observations WHERE id > ? ORDER BY id LIMIT ?");
  if (!st.ok()) return st.status();
  BindAll(*st, {after_id, LimitValue(limit)});
  QueryResult<Observation> out;
  if (Status s = ReadObservationRows(*st, out); !s.ok()) return s;
  return out;
}

Result<MaxRowIds> Store::GetMaxRowIds() {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  MaxRowIds out;
  for (auto [table, slot] : {std::pair{"observations", &out.observations}, std::pair{"findings", &out.findings},
                             std::pair{"diagnoses", &out.diagnoses}, std::pair{"actions", &out.actions}}) {
    auto v = QueryInt(impl_->db.get(), std::string("SELECT coalesce(max(id), 0) FROM ") + table);
    if (!v.ok()) return v.status();
    *slot = *v;
  }
  return out;
}

Result<QueryResult<Finding>> Store::FindingsAfter(int64_t after_id, size_t limit) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->RecordsAfter<Finding>("findings", after_id, limit);
}

Result<QueryResult<Diagnosis>> Store::DiagnosesAfter(int64_t after_id, size_t limit) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->RecordsAfter<Diagnosis>("diagnoses", after_id, limit);
}

Result<QueryResult<ActionRecord>> Store::ActionsAfter(int64_t after_id, size_t limit) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->RecordsAfter<ActionRecord>("actions", after_id, limit);
}

Result<QueryResult<Finding>> Store::ListFindings(const RecordQuery& q) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->ListRecords<Finding>("findings", "first_ns", "last_ns", q);
}

Result<QueryResult<Diagnosis>> Store::ListDiagnoses(const RecordQuery& q) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->ListRecords<Diagnosis>("diagnoses", "first_ns", "last_ns", q);
}

Result<std::optional<Row<Diagnosis>>> Store::LatestDiagnosis(const std::string& node) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  auto st = Stmt::Prepare(impl_->db.get(),
                          "SELECT id, payload, created_ns FROM diagnoses WHERE node = ? ORDER BY id DESC LIMIT 1");
  if (!st.ok()) return st.status();
  st->Bind(1, node);
  auto row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<Row<Diagnosis>>();
  auto value = DecodeJson<Diagnosis>(st->Text(1));
  // A row this binary cannot decode (a newer faultline's) compares as "none stored".
  if (!value.ok()) return std::optional<Row<Diagnosis>>();
  Row<Diagnosis> out{st->Int(0), node, std::move(*value)};
  out.created_ns = st->Int(2);
  return std::optional<Row<Diagnosis>>(std::move(out));
}

Result<std::vector<std::string>> Store::NodeNames() {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  std::set<std::string> names;
  // One skip-scan per table over its (node, ...) index: a seek per node, not a row scan.
  for (std::string_view table : {"observations", "findings", "diagnoses"}) {
    const std::string t(table);
    auto st = Stmt::Prepare(impl_->db.get(), "WITH RECURSIVE n(x) AS (SELECT MIN(node) FROM " + t +
                                                 " UNION ALL SELECT (SELECT MIN(node) FROM " + t +
                                                 " WHERE node > x) FROM n WHERE x IS NOT NULL) "
                                                 "SELECT x FROM n WHERE x IS NOT NULL");
    if (!st.ok()) return st.status();
    for (;;) {
      auto row = st->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      names.insert(st->Text(0));
    }
  }
  return std::vector<std::string>(names.begin(), names.end());
}

Result<int64_t> Store::LastHeardNs(const std::string& node) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  int64_t newest = 0;
  std::vector<std::string_view> queries = {"SELECT MAX(time_ns) FROM observations WHERE node = ?"};
  if (impl_->has_series()) queries.push_back("SELECT MAX(last_seen_ns) FROM series WHERE node = ?");
  for (std::string_view sql : queries) {
    auto st = Stmt::Prepare(impl_->db.get(), sql);
    if (!st.ok()) return st.status();
    st->Bind(1, node);
    auto row = st->Step();
    if (!row.ok()) return row.status();
    if (*row) newest = std::max(newest, st->Int(0));  // MAX of no rows is NULL, read as 0
  }
  return newest;
}

Result<QueryResult<ActionRecord>> Store::ListActions(const RecordQuery& q) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  return impl_->ListRecords<ActionRecord>("actions", "time_ns", "time_ns", q);
}

Result<int64_t> Store::Impl::UsedBytes() {
  auto pages = QueryInt(db.get(), "PRAGMA page_count");
  auto free_pages = QueryInt(db.get(), "PRAGMA freelist_count");
  auto page_size = QueryInt(db.get(), "PRAGMA page_size");
  for (const auto* r : {&pages, &free_pages, &page_size}) {
    if (!r->ok()) return r->status();
  }
  return (*pages - *free_pages) * *page_size;
}

Result<int64_t> Store::Impl::DeleteOlderThan(int64_t cutoff_ns, int64_t& records_deleted) {
  int64_t observations = 0;
  // An observation's age is that of its last reading: a stretch seen after the cutoff,
  // or the current point of a series still read, stays (schema 2).
  const std::string_view obs_where =
      has_series() ? "time_ns < ?1 AND (seen_until_ns IS NULL OR seen_until_ns < ?1) AND id NOT IN "
                     "(SELECT obs_id FROM series WHERE last_seen_ns >= ?1)"
                   : "time_ns < ?1";
  std::vector<std::pair<std::string_view, std::string>> tables = {{"observations", std::string(obs_where)},
                                                                  {"findings", "last_ns < ?1"},
                                                                  // A diagnosis no evidence spans (a healthy
                                                                  // node's "none", times 0) ages from when
                                                                  // it was stored, not from 1970.
                                                                  {"diagnoses", "(last_ns <> 0 AND last_ns < ?1) OR "
                                                                                "(last_ns = 0 AND created_ns < ?1)"},
                                                                  {"actions", "time_ns < ?1"}};
  if (has_series()) tables.emplace_back("series", "last_seen_ns < ?1");
  for (const auto& [table, where] : tables) {
    auto st = Stmt::Prepare(db.get(), "DELETE FROM " + std::string(table) + " WHERE " + where);
    if (!st.ok()) return st.status();
    st->Bind(1, cutoff_ns);
    if (auto s = st->Run(); !s.ok()) return s;
    const int64_t n = sqlite3_changes(db.get());
    if (table == "observations")
      observations = n;
    else if (table != "series")
      records_deleted += n;
  }
  return observations;
}

Result<int64_t> Store::Impl::ThinStepSamples(int64_t now_ns) {
  const int64_t bucket = options.thin_to_ns;
  if (options.thin_after_ns <= 0 || bucket <= 0 || now_ns - options.thin_after_ns <= 0) return 0;
  // Whole intervals only, so that no interval is thinned in two passes (each would keep a row).
  const int64_t due = (now_ns - options.thin_after_ns) / bucket * bucket;
  const std::string kinds = "kind IN ('" + std::string(ToString(ObsKind::kStepTime)) + "', '" +
                            std::string(ToString(ObsKind::kThroughput)) + "')";
  if (thinned_until_ns == 0) {  // the first pass since the store was opened: from its oldest step
    auto oldest = QueryInt(db.get(), "SELECT coalesce(min(time_ns), 0) FROM observations WHERE " + kinds);
    if (!oldest.ok()) return oldest.status();
    // No steps: nothing before now can need thinning; later passes start from here.
    thinned_until_ns = *oldest > 0 ? *oldest / bucket * bucket : due;
  }
  // A pass thins at most a day: a store holding weeks of steps never thinned (an agent
  // upgraded in place) catches up a day per retention instead of holding the store (and
  // every source's commit) for the minutes one statement over all of it would take.
  const int64_t to = std::min(due, (thinned_until_ns + kThinPassSpanNs) / bucket * bucket);
  if (to <= thinned_until_ns) return 0;
  // The time range first (obs_time), then the kinds: a pass reads an hour's rows, not the
  // whole history. The job is part of the group: two jobs on one GPU are two series.
  auto st = Stmt::Prepare(db.get(), "DELETE FROM observations WHERE time_ns >= ?1 AND time_ns < ?2 AND " + kinds +
                                        " AND id NOT IN (SELECT min(id) FROM observations WHERE time_ns >= ?1 AND "
                                        "time_ns < ?2 AND " +
                                        kinds +
                                        " GROUP BY node, component, kind, json_extract(payload, '$.attrs.job'), "
                                        "time_ns / ?3)");
  if (!st.ok()) return st.status();
  st->Bind(1, thinned_until_ns);
  st->Bind(2, to);
  st->Bind(3, bucket);
  if (auto s = st->Run(); !s.ok()) return s;
  thinned_until_ns = to;
  return static_cast<int64_t>(sqlite3_changes(db.get()));
}

Result<int64_t> Store::Impl::DeleteOldestObservations(int64_t target_bytes) {
  // Never a series' current point: it is what that series reads now (a few thousand
  // rows per node), and its stretch would vanish with it.
  auto st = Stmt::Prepare(db.get(), has_series() ? "DELETE FROM observations WHERE id IN (SELECT id FROM observations "
                                                   "WHERE id NOT IN (SELECT obs_id FROM series) "
                                                   "ORDER BY time_ns, id LIMIT ?)"
                                                 : "DELETE FROM observations WHERE id IN (SELECT id FROM observations "
                                                   "ORDER BY time_ns, id LIMIT ?)");
  if (!st.ok()) return st.status();
  int64_t deleted = 0;
  while (true) {
    auto used = UsedBytes();
    if (!used.ok()) return used.status();
    if (*used <= target_bytes) return deleted;
    st->Reset();
    st->Bind(1, std::max<int64_t>(1, options.retention_batch_rows));
    if (auto s = st->Run(); !s.ok()) return s;
    const int64_t n = sqlite3_changes(db.get());
    if (n == 0) return deleted;  // only findings/diagnoses left: nothing more to drop here
    deleted += n;
  }
}

Result<RetentionStats> Store::ApplyRetention(int64_t now_ns) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  RetentionStats stats;
  auto before = impl_->UsedBytes();
  if (!before.ok()) return before.status();
  stats.bytes_before = *before;
  const StoreOptions& o = impl_->options;
  if (o.max_age_ns > 0) {
    auto n = impl_->DeleteOlderThan(now_ns - o.max_age_ns, stats.records_deleted);
    if (!n.ok()) return n.status();
    stats.observations_deleted += *n;
  }
  auto thinned = impl_->ThinStepSamples(now_ns);
  if (!thinned.ok()) return thinned.status();
  stats.observations_thinned = *thinned;
  stats.observations_deleted += *thinned;
  if (o.max_bytes > 0 && stats.bytes_before > o.max_bytes) {
    auto n = impl_->DeleteOldestObservations(o.max_bytes / 10 * 9);
    if (!n.ok()) return n.status();
    stats.observations_deleted += *n;
  }
  sqlite3* h = impl_->db.get();
  if (auto s = Exec(h, "PRAGMA incremental_vacuum"); !s.ok()) return s;
  if (auto s = Exec(h, "PRAGMA wal_checkpoint(TRUNCATE)"); !s.ok()) return s;
  auto after = impl_->UsedBytes();
  if (!after.ok()) return after.status();
  stats.bytes_after = *after;
  return stats;
}

Result<StoreStats> Store::Stats() {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  sqlite3* h = impl_->db.get();
  StoreStats s;
  const std::pair<int64_t*, std::string_view> counts[] = {
      {&s.observations, "SELECT count(*) FROM observations"},
      {&s.findings, "SELECT count(*) FROM findings"},
      {&s.diagnoses, "SELECT count(*) FROM diagnoses"},
      {&s.actions, "SELECT count(*) FROM actions"},
      {&s.file_bytes, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"}};
  for (const auto& [out, sql] : counts) {
    auto v = QueryInt(h, sql);
    if (!v.ok()) return v.status();
    *out = *v;
  }
  if (impl_->has_series()) {
    auto v = QueryInt(h, "SELECT count(*) FROM series");
    if (!v.ok()) return v.status();
    s.series = *v;
  }
  auto used = impl_->UsedBytes();
  if (!used.ok()) return used.status();
  s.used_bytes = *used;
  auto version = store::SchemaVersion(h);
  if (!version.ok()) return version.status();
  s.schema_version = *version;
  return s;
}

Status Store::SetFileSizeLimit(int64_t bytes) {
  FAULTLINE_STORE_OPEN_OR_RETURN();
  sqlite3* h = impl_->db.get();
  auto page_size = QueryInt(h, "PRAGMA page_size");
  if (!page_size.ok()) return page_size.status();
  const int64_t pages = bytes <= 0 ? kSqliteMaxPages : std::max<int64_t>(1, bytes / *page_size);
  // SQLite keeps the cap at least at the current size; the pragma answers with a row.
  return QueryInt(h, "PRAGMA max_page_count = " + std::to_string(pages)).status();
}

Status Store::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!impl_) return Status::Ok();
  // Folding the WAL into the main file leaves a self-contained database behind (a
  // reader leaves the file as it found it).
  Status s = impl_->options.read_only ? Status::Ok() : Exec(impl_->db.get(), "PRAGMA wal_checkpoint(TRUNCATE)");
  impl_.reset();
  return s;
}

}  // namespace faultline
