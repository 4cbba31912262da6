// `topotune db backup|restore|info` (db_cmd.h): the SQLite database of
// topotuned copied with the online backup API, checked, and put back.
#include "daemon/cli/db_cmd.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "daemon/cli/cli.h"
#include "db/migrations.h"
#include "db/sqlite.h"

namespace topotune::cli {

namespace fs = std::filesystem;

StatusOr<daemon::Config> LoadDaemonConfig(const std::string& config_path) {
  if (!config_path.empty()) return daemon::LoadConfig(config_path);
  std::error_code ec;
  if (fs::exists(kDefaultConfigPath, ec)) return daemon::LoadConfig(kDefaultConfigPath);
  auto config = daemon::ParseConfig("{}", "(defaults)");
  if (config.ok()) config->source = "(defaults)";
  return config;
}

namespace {

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

// "topologies" -> "\"topologies\"": table names come from the database's own
// sqlite_schema, but are quoted all the same.
std::string QuoteIdentifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// PRAGMA integrity_check(10): "ok" or the problems joined by "; ".
StatusOr<std::string> IntegrityCheck(db::Connection& conn) {
  auto st = conn.Prepare("PRAGMA integrity_check(10)");
  if (!st.ok()) return st.status();
  std::vector<std::string> problems;
  while (true) {
    auto row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    problems.push_back(st->ColumnText(0));
  }
  return fmt::format("{}", fmt::join(problems, "; "));
}

}  // namespace

StatusOr<DatabaseReport> InspectDatabase(const std::string& path, bool integrity, bool rows) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound(fmt::format("{}: no such database file", path));
  if (::access(path.c_str(), R_OK) != 0)
    return Status::IoError(fmt::format("{}: cannot read the database: {}", path, std::strerror(errno)));
  DatabaseReport report;
  report.path = path;
  report.file_bytes = FileSize(path);
  report.wal_bytes = FileSize(path + "-wal");
  report.latest_schema_version = db::LatestSchemaVersion();
  auto conn = db::Connection::OpenReadOnly(path);
  if (!conn.ok()) return conn.status();
  if (integrity) {
    auto check = IntegrityCheck(**conn);
    if (!check.ok()) return check.status();
    report.integrity = *check;
  }
  auto mode = (*conn)->QueryText("PRAGMA journal_mode");
  if (!mode.ok()) return mode.status();
  report.journal_mode = *mode;
  auto version = db::ReadSchemaVersion(**conn);
  if (!version.ok()) return version.status();
  report.schema_version = *version;
  if (rows) {
    auto tables = (*conn)->Prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
    if (!tables.ok()) return tables.status();
    std::vector<std::string> names;
    while (true) {
      auto row = tables->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      names.push_back(tables->ColumnText(0));
    }
    for (const std::string& name : names) {
      auto count = (*conn)->QueryText("SELECT count(*) FROM " + QuoteIdentifier(name));
      if (!count.ok()) return count.status();
      report.rows.emplace_back(name, std::stoll(*count));
    }
  }
  return report;
}

std::string FormatFileSize(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (int64_t{1} << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  if (bytes < (int64_t{1} << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30));
}

int DatabaseHolderPid(const std::string& path) {
  // SQLite's unix VFS: every connection to a WAL database holds a shared
  // lock on byte 128 of the -shm file (UNIX_SHM_DMS) while it is open.
  int fd = ::open((path + "-shm").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = 128;
  lock.l_len = 1;
  int pid = 0;
  if (::fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK) pid = lock.l_pid;
  ::close(fd);
  return pid;
}

namespace {

StatusOr<std::string> ResolveDatabase(const DatabaseLocation& where) {
  if (!where.database.empty()) return where.database;
  auto config = LoadDaemonConfig(where.config_path);
  if (!config.ok()) return config.status();
  return config->database.empty() ? daemon::DefaultDatabasePath() : config->database;
}

// A temporary file name beside `path`, for an atomic rename onto it.
std::string TempBeside(const std::string& path) {
  return fmt::format("{}.tmp-{}-{}", path, ::getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
}

void RemoveDatabaseFiles(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
}

// Copies `from` into `tmp` with the backup API, makes the copy one
// self-contained file (rollback journal), checks it and fsyncs it. Returns the
// copy's schema version.
StatusOr<int> CopyAndCheck(db::Connection& from, const std::string& tmp) {
  TOPOTUNE_RETURN_IF_ERROR(db::Backup(from, tmp));
  auto copy = db::Connection::Open(tmp, /*create=*/false);
  if (!copy.ok()) return copy.status();
  auto mode = (*copy)->QueryText("PRAGMA journal_mode = DELETE");
  if (!mode.ok()) return mode.status();
  auto check = IntegrityCheck(**copy);
  if (!check.ok()) return check.status();
  if (*check != "ok") return Status::IoError(fmt::format("{}: the copy fails integrity_check: {}", tmp, *check));
  auto version = db::ReadSchemaVersion(**copy);
  if (!version.ok()) return version.status();
  copy->reset();
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    Status st = Status::IoError(fmt::format("{}: cannot sync the copy: {}", tmp, std::strerror(errno)));
    if (fd >= 0) ::close(fd);
    return st;
  }
  ::close(fd);
  return *version;
}

int RunBackup(const DbCommands& c, std::ostream& out, std::ostream& err) {
  auto path = ResolveDatabase(c.backup_db);
  if (!path.ok()) return Fail(err, path.status().message());
  std::error_code ec;
  if (!fs::exists(*path, ec)) return Fail(err, fmt::format("{}: no such database file (see --database)", *path));
  if (fs::exists(c.backup_out, ec) && !c.backup_force)
    return Fail(err, fmt::format("{} exists; give --force to overwrite it", c.backup_out));
  auto from = db::Connection::OpenReadOnly(*path);
  if (!from.ok()) return Fail(err, from.status().message());
  if (auto version = db::ReadSchemaVersion(**from); !version.ok()) return Fail(err, version.status().message());
  const std::string tmp = TempBeside(c.backup_out);
  auto version = CopyAndCheck(**from, tmp);
  if (!version.ok()) {
    RemoveDatabaseFiles(tmp);
    return Fail(err, version.status().message());
  }
  if (std::rename(tmp.c_str(), c.backup_out.c_str()) != 0) {
    int e = errno;
    RemoveDatabaseFiles(tmp);
    return Fail(err, fmt::format("{}: cannot rename the copy into place: {}", c.backup_out, std::strerror(e)));
  }
  out << fmt::format("backed up {} to {}: schema version {}, {}, integrity ok\n", *path, c.backup_out, *version,
                     FormatFileSize(FileSize(c.backup_out)));
  return kExitOk;
}

int RunRestore(const DbCommands& c, std::ostream& out, std::ostream& err) {
  auto path = ResolveDatabase(c.restore_db);
  if (!path.ok()) return Fail(err, path.status().message());
  auto backup = InspectDatabase(c.restore_from, /*integrity=*/true, /*rows=*/false);
  if (!backup.ok()) return Fail(err, backup.status().message());
  if (backup->integrity != "ok")
    return Fail(err, fmt::format("{}: the backup fails integrity_check: {}", c.restore_from, backup->integrity));
  if (backup->schema_version > backup->latest_schema_version)
    return Fail(err, fmt::format("{}: schema version {} is newer than this topotune knows ({}); restore it with the "
                                 "topotune that wrote it",
                                 c.restore_from, backup->schema_version, backup->latest_schema_version));
  if (backup->schema_version == 0)
    return Fail(err, fmt::format("{}: an empty database, not a topotune backup", c.restore_from));
  if (int pid = DatabaseHolderPid(*path); pid != 0)
    return Fail(err, fmt::format("{} is open in process {} (topotuned?); stop it first (systemctl stop topotuned)",
                                 *path, pid));
  std::error_code ec;
  struct stat old {};
  const bool exists = ::stat(path->c_str(), &old) == 0;
  if (exists && !c.restore_force)
    return Fail(err,
                fmt::format("{} exists; give --force to replace it (back it up first: topotune db backup)", *path));
  fs::path parent = fs::path(*path).parent_path();
  if (parent.empty()) parent = ".";
  if (!exists && ::stat(parent.c_str(), &old) != 0)
    return Fail(err, fmt::format("{}: cannot restore there: {}", parent.string(), std::strerror(errno)));

  auto from = db::Connection::OpenReadOnly(c.restore_from);
  if (!from.ok()) return Fail(err, from.status().message());
  const std::string tmp = TempBeside(*path);
  auto version = CopyAndCheck(**from, tmp);
  if (!version.ok()) {
    RemoveDatabaseFiles(tmp);
    return Fail(err, version.status().message());
  }
  // The replaced file's owner and mode (topotuned runs as its own user), or
  // the directory's owner for a new file.
  const mode_t mode = exists ? (old.st_mode & 07777) : 0640;
  if (::chmod(tmp.c_str(), mode) != 0 || (::geteuid() == 0 && ::chown(tmp.c_str(), old.st_uid, old.st_gid) != 0)) {
    int e = errno;
    RemoveDatabaseFiles(tmp);
    return Fail(err, fmt::format("{}: cannot set owner and mode: {}", tmp, std::strerror(e)));
  }
  // A stale -wal would be replayed onto the restored file.
  for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(*path + suffix, ec);
  if (std::rename(tmp.c_str(), path->c_str()) != 0) {
    int e = errno;
    RemoveDatabaseFiles(tmp);
    return Fail(err, fmt::format("{}: cannot rename the copy into place: {}", *path, std::strerror(e)));
  }
  out << fmt::format("restored {} from {}: schema version {} (this topotune knows {}{})\n", *path, c.restore_from,
                     *version, backup->latest_schema_version,
                     *version < backup->latest_schema_version ? "; topotuned migrates it at its next start" : "");
  return kExitOk;
}

int RunInfo(const DbCommands& c, std::ostream& out, std::ostream& err) {
  auto path = ResolveDatabase(c.info_db);
  if (!path.ok()) return Fail(err, path.status().message());
  auto report = InspectDatabase(*path, /*integrity=*/false, /*rows=*/true);
  if (!report.ok()) return Fail(err, report.status().message());
  std::vector<std::pair<int, std::string>> pending;
  for (const db::Migration& m : db::Migrations())
    if (m.version > report->schema_version) pending.emplace_back(m.version, std::string(m.description));
  const int holder = DatabaseHolderPid(*path);
  if (c.info_json) {
    nlohmann::ordered_json j;
    j["path"] = report->path;
    j["schema_version"] = report->schema_version;
    j["latest_schema_version"] = report->latest_schema_version;
    j["pending_migrations"] = nlohmann::json::array();
    for (const auto& [v, d] : pending) j["pending_migrations"].push_back({{"version", v}, {"description", d}});
    j["journal_mode"] = report->journal_mode;
    j["file_bytes"] = report->file_bytes;
    j["wal_bytes"] = report->wal_bytes;
    j["open_by_pid"] = holder;
    j["rows"] = nlohmann::ordered_json::object();
    for (const auto& [t, n] : report->rows) j["rows"][t] = n;
    out << j.dump() << "\n";
    return kExitOk;
  }
  out << fmt::format("database        {}\n", report->path);
  out << fmt::format("size            {} (+ {} write-ahead log)\n", FormatFileSize(report->file_bytes),
                     FormatFileSize(report->wal_bytes));
  out << fmt::format("journal mode    {}\n", report->journal_mode);
  out << fmt::format("in use          {}\n", holder ? fmt::format("yes, by process {}", holder) : "no");
  out << fmt::format("schema version  {} (this topotune knows up to {})\n", report->schema_version,
                     report->latest_schema_version);
  if (report->schema_version > report->latest_schema_version) {
    out << "                newer than this topotune: topotuned of this version will refuse it; upgrade topotune\n";
  } else if (pending.empty()) {
    out << "migrations      none pending\n";
  } else {
    out << fmt::format("migrations      {} pending, applied by topotuned at its next start:\n", pending.size());
    for (const auto& [v, d] : pending) out << fmt::format("  {:>3}  {}\n", v, d);
  }
  out << "rows\n";
  size_t width = 0;
  for (const auto& [t, n] : report->rows) width = std::max(width, t.size());
  for (const auto& [t, n] : report->rows) out << fmt::format("  {:<{}}  {:>10}\n", t, width, n);
  return kExitOk;
}

void AddLocation(CLI::App* cmd, DatabaseLocation* where) {
  cmd->add_option("--database", where->database,
                  "The database file (default: the configuration's 'database', else topotuned's default)")
      ->type_name("PATH");
  cmd->add_option(
         "--config", where->config_path,
         fmt::format("topotuned's configuration, for its 'database' (default {} when it exists)", kDefaultConfigPath))
      ->type_name("FILE");
}

constexpr const char* kDatabaseHelp =
    "DATABASE\n"
    "  --database PATH, else the 'database' key of topotuned's configuration (--config, default\n"
    "  /etc/topotune/topotuned.yaml when it exists), else topotuned's default: $STATE_DIRECTORY/topotune.db\n"
    "  under systemd, /var/lib/topotune/topotune.db for root, else ~/.local/share/topotune/topotune.db.\n";

}  // namespace

void AddDbCommands(CLI::App& app, DbCommands* c) {
  CLI::App* db = app.add_subcommand("db", "Back up, restore and inspect topotuned's database");
  db->require_subcommand(1);
  db->footer(std::string(kDatabaseHelp) +
             "\nEXAMPLES\n"
             "  topotune db info\n"
             "  topotune db backup /var/backups/topotune-$(date +%F).db\n"
             "  systemctl stop topotuned && topotune db restore --force /var/backups/topotune-2024-05-01.db\n");

  c->backup = db->add_subcommand("backup", "Copy the database while topotuned runs (SQLite online backup)");
  c->descriptions.emplace_back(
      c->backup,
      "Copies topotuned's SQLite database to OUT with SQLite's online backup API: one consistent snapshot,\n"
      "taken while topotuned goes on running and writing (the database is in WAL mode, where a reader never\n"
      "blocks the writer). The copy is written to a temporary file beside OUT, made one self-contained file\n"
      "(rollback journal, no -wal), checked with PRAGMA integrity_check, synced, and renamed onto OUT, so OUT\n"
      "is never a partial copy. Prints the copy's schema version and size.\n"
      "\n"
      "Back up before every upgrade: topotuned migrates the schema at its start, and an older topotune\n"
      "refuses a database migrated past what it knows.\n");
  c->backup->add_option("OUT", c->backup_out, "The backup file to write")->required()->type_name("");
  c->backup->add_flag("--force", c->backup_force, "Overwrite OUT when it exists");
  AddLocation(c->backup, &c->backup_db);
  c->backup->footer(std::string(kDatabaseHelp) +
                    "\nEXAMPLES\n"
                    "  topotune db backup /var/backups/topotune-$(date +%F).db\n"
                    "  topotune db backup --database /srv/topotune/topotune.db --force /var/backups/topotune.db\n");

  c->restore = db->add_subcommand("restore", "Put a backup in place of the database (topotuned stopped)");
  c->descriptions.emplace_back(
      c->restore,
      "Restores a backup made by 'topotune db backup' as topotuned's database. BACKUP must pass PRAGMA\n"
      "integrity_check and have a schema version this topotune knows (an older one is migrated by\n"
      "topotuned at its next start). Refused while any process has the database open (stop topotuned\n"
      "first), and when the database exists unless --force. The backup is copied to a temporary file beside\n"
      "the database, checked and synced; the old -wal and -shm files are removed (a stale write-ahead log\n"
      "would be replayed onto the restored file) and the copy is renamed into place, with the owner and\n"
      "mode of the file it replaces.\n");
  c->restore->add_option("BACKUP", c->restore_from, "The backup file")->required()->type_name("");
  c->restore->add_flag("--force", c->restore_force, "Replace the database when it exists");
  AddLocation(c->restore, &c->restore_db);
  c->restore->footer(std::string(kDatabaseHelp) +
                     "\nEXAMPLES\n"
                     "  topotune db restore --force /var/backups/topotune-2024-05-01.db\n"
                     "      (between 'systemctl stop topotuned' and 'systemctl start topotuned')\n"
                     "  topotune db restore /var/backups/topotune.db --database /srv/topotune/topotune.db\n");

  c->info = db->add_subcommand("info", "Schema version, pending migrations, rows per table, size");
  c->descriptions.emplace_back(
      c->info,
      "Prints the database's schema version and the newest this topotune knows, the migrations topotuned\n"
      "will apply at its next start (what an upgrade to this version does to the database), the journal\n"
      "mode, the sizes of the file and its write-ahead log, whether a process has it open, and the rows of\n"
      "every table. Opens the database read-only; safe while topotuned runs.\n");
  c->info->add_flag("--json", c->info_json, "Print one JSON object");
  AddLocation(c->info, &c->info_db);
  c->info->footer(std::string(kDatabaseHelp) +
                  "\nEXAMPLES\n"
                  "  topotune db info\n"
                  "  topotune db info --database /var/lib/topotune/topotune.db --json\n");
}

int RunDbCommand(const DbCommands& c, std::ostream& out, std::ostream& err) {
  if (c.backup && *c.backup) return RunBackup(c, out, err);
  if (c.restore && *c.restore) return RunRestore(c, out, err);
  if (c.info && *c.info) return RunInfo(c, out, err);
  return -1;
}

}  // namespace topotune::cli
