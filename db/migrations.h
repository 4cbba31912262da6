// The schema of the topotune database as numbered migrations. Migration N is
// a constant SQL script that takes schema N-1 to schema N; schema 0 is an
// empty database. The table `schema_version` (created by migration 1) holds
// one row per applied migration, and the database's version is the largest.
//
// Rules for adding a migration: append a new entry, never edit a released
// one (databases in the field have already run it), and write the script so
// that it runs inside a transaction (no BEGIN/COMMIT, no PRAGMA that is a
// no-op in a transaction). Foreign keys are off while migrations run, so a
// script may rebuild a table the way the SQLite manual describes
// ("Making Other Kinds Of Table Schema Changes"); `PRAGMA foreign_key_check`
// must come back clean before the migration commits.
//
// Thread-safety: Migrations() is immutable; Migrate uses the given connection
// and must not run concurrently with other users of that connection. Several
// processes may migrate the same file at once: each step re-reads the version
// under the write lock, so every migration runs exactly once.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "db/sqlite.h"
#include "tuner/status.h"

namespace topotune::db {

struct Migration {
  int version = 0;               // The schema version this script produces.
  std::string_view description;  // One line, stored in schema_version.
  const char* sql = nullptr;     // Constant script without parameters.
};

// The migrations this binary knows, in order: element i produces version i+1.
std::span<const Migration> Migrations();

// The version of the newest schema this binary knows (Migrations().size()).
int LatestSchemaVersion();

// The database's schema version: 0 when it has no tables at all. A database
// with tables but no schema_version is not a topotune database:
// FailedPrecondition naming the path.
StatusOr<int> ReadSchemaVersion(Connection& conn);

// Brings the database at `conn` up to `target` (<= migrations.size()) by
// applying the missing migrations of `migrations`, each in one IMMEDIATE
// transaction together with its schema_version row; `now_ms` (unix time in
// milliseconds) is recorded as applied_at. A database already at or past
// `target` is left alone. Returns the version reached. When the database is
// newer than `migrations.size()`, fails with FailedPrecondition:
// "<path>: database schema version 7 is newer than this topotune (knows up to
// 3); upgrade topotune or use another database". A failing migration rolls
// back to the previous version and its error names the migration.
// Foreign keys are off while migrations run and on when Migrate returns.
// `migrations` is a parameter so that tests can run broken ones.
StatusOr<int> Migrate(Connection& conn, std::span<const Migration> migrations, int target, int64_t now_ms);

// The message for a database newer than this binary (see Migrate).
Status NewerSchemaError(const Connection& conn, int found, int known);

}  // namespace topotune::db
