// The store's schema, versioned. The database records the version it was migrated to
// in the one-row table `schema_version`; at open, every migration with a higher version
// is applied in order, each in its own transaction together with the version bump, so
// a crash mid-upgrade leaves the database at the previous version, never half-migrated.
// A database whose version is newer than the newest migration this binary knows is
// refused (kUnsupported): an older binary must not write into a schema it does not know.
#pragma once

#include <sqlite3.h>

#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::store {

struct Migration {
  int version;            // 1, 2, 3, ... strictly increasing, never reused
  std::string_view what;  // one line for logs and docs
  std::string_view sql;   // statements run inside the migration's transaction
};

// The store's migrations, oldest first. Append only; never edit a released one.
std::span<const Migration> StoreMigrations();

// Version recorded in the database (0 for a fresh, empty database).
Result<int> SchemaVersion(sqlite3* db);

// Brings the database to the newest version in `migrations` (which must be sorted).
// Returns the version reached. kUnsupported when the database is newer than the list;
// kCorrupt when the file is not an SQLite database.
Result<int> ApplyMigrations(sqlite3* db, std::span<const Migration> migrations);

}  // namespace faultline::store
