// Thin RAII wrappers over the SQLite C API, private to the store. They turn SQLite
// result codes into Status values (STYLE.md rule 5) so no raw `int rc` leaks out of
// the store. Not thread-safe: the Store serializes every use of one connection.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace faultline::store {

// Maps an SQLite result code to a Status: NOTADB/CORRUPT -> kCorrupt, BUSY/LOCKED ->
// kUnavailable, CANTOPEN -> kNotFound, PERM/READONLY -> kPermissionDenied, else kIoError.
Status SqliteStatus(int rc, sqlite3* db, std::string_view context);

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

// Runs one or more statements that return no rows.
Status Exec(sqlite3* db, std::string_view sql);

// One prepared statement. Bind indexes are 1-based as in SQLite.
class Stmt {
 public:
  static Result<Stmt> Prepare(sqlite3* db, std::string_view sql);
  Stmt(Stmt&&) noexcept = default;
  Stmt& operator=(Stmt&&) noexcept = default;

  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_.get(), i, v); }
  void Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int i, std::string_view v) {
    sqlite3_bind_blob(stmt_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindOptional(int i, std::optional<int64_t> v) {
    if (v)
      Bind(i, *v);
    else
      sqlite3_bind_null(stmt_.get(), i);
  }

  // Steps once: true when a row is available, false when done; error otherwise.
  Result<bool> Step();
  // Steps to completion, ignoring rows.
  Status Run();
  void Reset() {
    sqlite3_reset(stmt_.get());
    sqlite3_clear_bindings(stmt_.get());
  }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_.get(), col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_.get(), col) == SQLITE_NULL; }
  std::string Text(int col) const;

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  Stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), stmt_(s) {}
  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
};

// Reads a single integer (e.g. a PRAGMA value).
Result<int64_t> QueryInt(sqlite3* db, std::string_view sql);

}  // namespace faultline::store
