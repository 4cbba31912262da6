// `topotune db`: backup, restore and inspection of topotuned's SQLite
// database (db_cmd.cc), for upgrades and disaster recovery.
//
//   db backup OUT        an online copy (SQLite's backup API, db/sqlite.h
//                        Backup) that is safe while topotuned runs: one
//                        consistent snapshot, written to a temporary file
//                        beside OUT, checked (integrity_check, schema
//                        version), switched to a self-contained rollback
//                        journal and renamed onto OUT
//   db restore BACKUP    checks BACKUP (integrity_check, a schema this
//                        binary knows), refuses while any process has the
//                        database open (topotuned), refuses an existing
//                        database without --force, then copies BACKUP to a
//                        temporary file beside it, removes the old -wal and
//                        -shm and renames the copy into place, keeping the
//                        replaced file's owner and mode
//   db info              schema version, the newest this binary knows, the
//                        migrations topotuned will apply at its next start,
//                        rows per table, sizes and journal mode
//
// The database is --database, else the `database` key of the configuration
// (--config, default /etc/topotune/topotuned.yaml when it exists), else
// topotuned's default (daemon/topotuned/config.h DefaultDatabasePath).
// Every command opens the database read-only except restore's destination.
//
// Exit status: kExitOk; kExitFailure when the work fails (unreadable or
// corrupt database, refused restore); kExitUsage for flag errors.
//
// Thread-safety: no shared state; the commands touch only the named files.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "daemon/topotuned/config.h"
#include "tuner/status.h"

namespace topotune::cli {

// topotuned's configuration file when neither --config nor anything else says.
inline constexpr const char* kDefaultConfigPath = "/etc/topotune/topotuned.yaml";

// topotuned's configuration as topotuned itself reads it: `config_path`, or
// kDefaultConfigPath when it exists, else the defaults (source "(defaults)").
StatusOr<daemon::Config> LoadDaemonConfig(const std::string& config_path);

// What `db info` and `topotune doctor` report on a database, read through a
// read-only connection.
struct DatabaseReport {
  std::string path;
  int64_t file_bytes = 0;  // The database file.
  int64_t wal_bytes = 0;   // Its -wal file (0 when none).
  std::string journal_mode;
  int schema_version = 0;
  int latest_schema_version = 0;  // This binary's (db/migrations.h).
  // integrity_check's answer ("ok", or its first 10 problems joined by
  // "; "); empty when not checked.
  std::string integrity;
  std::vector<std::pair<std::string, int64_t>> rows;  // Per table, when counted.
};

// Inspects the database at `path` (which must exist: a missing file is
// NotFound naming it). `integrity`: run PRAGMA integrity_check; `rows`: count
// each table's rows.
StatusOr<DatabaseReport> InspectDatabase(const std::string& path, bool integrity, bool rows);

// "512 B", "1.5 KiB", "12.0 MiB", "1.25 GiB".
std::string FormatFileSize(int64_t bytes);

// Where the database is: --database, else the configuration's, else the
// daemon's default. `config_path` empty means the default configuration file
// when it exists. On an unreadable or invalid configuration, an error naming it.
struct DatabaseLocation {
  std::string database;     // --database; empty: from the configuration.
  std::string config_path;  // --config; empty: the default file when it exists.
};

struct DbCommands {
  CLI::App* backup = nullptr;
  CLI::App* restore = nullptr;
  CLI::App* info = nullptr;
  DatabaseLocation backup_db, restore_db, info_db;
  std::string backup_out;
  std::string restore_from;
  bool backup_force = false;
  bool restore_force = false;
  bool info_json = false;
  // The long text of each command's own --help (for cli.cc's formatter).
  std::vector<std::pair<CLI::App*, std::string>> descriptions;
};

// Registers `db backup|restore|info` on `app`; `commands` must outlive parsing.
void AddDbCommands(CLI::App& app, DbCommands* commands);
// Runs the selected command; -1 when none of them was selected.
int RunDbCommand(const DbCommands& commands, std::ostream& out, std::ostream& err);

// The pid of a process holding the SQLite database at `path` open in WAL
// mode (the shared lock every connection keeps on its -shm file), or 0 when
// none (or the database has no -shm file). Another process's lock only: the
// caller's own connections are not seen.
int DatabaseHolderPid(const std::string& path);

}  // namespace topotune::cli
