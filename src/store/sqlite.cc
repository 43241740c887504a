#include "store/sqlite.h"

namespace faultline::store {

Status SqliteStatus(int rc, sqlite3* db, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  msg += (db != nullptr && sqlite3_errcode(db) == rc) ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
      return Status::Ok();
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return Status(StatusCode::kCorrupt, msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status(StatusCode::kUnavailable, msg);
    case SQLITE_CANTOPEN:
      return Status(StatusCode::kNotFound, msg);
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return Status(StatusCode::kPermissionDenied, msg);
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
      return Status(StatusCode::kInternal, msg);
    default:
      return Status(StatusCode::kIoError, msg);
  }
}

Status Exec(sqlite3* db, std::string_view sql) {
  const std::string owned(sql);
  const int rc = sqlite3_exec(db, owned.c_str(), nullptr, nullptr, nullptr);
  return SqliteStatus(rc, db, owned.substr(0, 60));
}

Result<Stmt> Stmt::Prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return SqliteStatus(rc, db, "prepare");
  }
  return Stmt(db, s);
}

Result<bool> Stmt::Step() {
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(rc, db_, "step");
}

Status Stmt::Run() {
  while (true) {
    auto r = Step();
    if (!r.ok()) return r.status();
    if (!*r) return Status::Ok();
  }
}

std::string Stmt::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.get(), col));
  const int n = sqlite3_column_bytes(stmt_.get(), col);
  return p == nullptr ? std::string() : std::string(p, static_cast<size_t>(n));
}

Result<int64_t> QueryInt(sqlite3* db, std::string_view sql) {
  auto st = Stmt::Prepare(db, sql);
  if (!st.ok()) return st.status();
  auto row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status(StatusCode::kInternal, std::string("no row from ") + std::string(sql));
  return st->Int(0);
}

}  // namespace faultline::store
