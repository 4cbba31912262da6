#include "db/sqlite.h"

#include <cctype>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

namespace topotune::db {
namespace {

Status StatusFor(int rc, std::string message) {
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
      return Status::FailedPrecondition(std::move(message));
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
    case SQLITE_MISMATCH:
      return Status::InvalidArgument(std::move(message));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_CANTOPEN:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
    case SQLITE_NOLFS:
    case SQLITE_AUTH:
      return Status::IoError(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

// SQLite's message for `rc` on `db`, with the system's reason for I/O and open
// failures ("unable to open database file (No such file or directory)").
std::string SqliteMessage(sqlite3* db, int rc) {
  std::string msg = db != nullptr && sqlite3_errcode(db) != SQLITE_OK ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  int primary = rc & 0xff;
  if (db != nullptr && (primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR)) {
    int err = sqlite3_system_errno(db);
    if (err != 0) msg += std::string(" (") + std::strerror(err) + ")";
  }
  return msg;
}

// The statement's SQL on one line, shortened, for error messages.
std::string SqlExcerpt(const char* sql) {
  constexpr size_t kMax = 72;
  std::string out;
  bool space = false;
  for (const char* p = sql; p != nullptr && *p != '\0'; ++p) {
    if (std::isspace(static_cast<unsigned char>(*p))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += *p;
    if (out.size() >= kMax) {
      out += "...";
      break;
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Statement

Statement::Statement(Statement&& other) noexcept
    : conn_(other.conn_), stmt_(std::exchange(other.stmt_, nullptr)), bind_rc_(other.bind_rc_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    conn_ = other.conn_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_rc_ = other.bind_rc_;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::NoteBind(int rc) {
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}
void Statement::BindNull(int index) { NoteBind(sqlite3_bind_null(stmt_, index)); }
void Statement::BindInt64(int index, int64_t value) { NoteBind(sqlite3_bind_int64(stmt_, index, value)); }
void Statement::BindDouble(int index, double value) { NoteBind(sqlite3_bind_double(stmt_, index, value)); }
void Statement::BindText(int index, std::string_view value) {
  NoteBind(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}
void Statement::BindBlob(int index, std::string_view bytes) {
  // A zero-length blob from a null pointer would bind NULL; bind an empty one.
  static const char kEmpty = 0;
  NoteBind(sqlite3_bind_blob64(stmt_, index, bytes.empty() ? &kEmpty : bytes.data(), bytes.size(), SQLITE_TRANSIENT));
}

Status Statement::Error(int rc) const {
  std::string msg = bind_rc_ != SQLITE_OK ? std::string("binding parameters: ") + sqlite3_errstr(rc)
                                          : SqliteMessage(conn_->handle(), rc);
  return StatusFor(rc, conn_->path() + ": " + msg + " (in: " + SqlExcerpt(sqlite3_sql(stmt_)) + ")");
}

StatusOr<bool> Statement::Step() {
  if (bind_rc_ != SQLITE_OK) return Error(bind_rc_);
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status st = Error(rc);
  sqlite3_reset(stmt_);
  return st;
}

Status Statement::Run() {
  for (;;) {
    StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
  }
}

Statement& Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
  return *this;
}

bool Statement::ColumnIsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
int64_t Statement::ColumnInt64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::ColumnDouble(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::ColumnText(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);  // After the conversion, as the SQLite docs require.
  return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}

std::string Statement::ColumnBlob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), static_cast<size_t>(n));
}

std::optional<int64_t> Statement::ColumnOptionalInt64(int col) const {
  if (ColumnIsNull(col)) return std::nullopt;
  return ColumnInt64(col);
}

// ---------------------------------------------------------------------------
// Connection

StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& path, bool create) {
  sqlite3* db = nullptr;
  // NOMUTEX: the caller serialises use of the connection (see the header).
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = path + ": cannot open database: " + SqliteMessage(db, rc);
    sqlite3_close_v2(db);  // Harmless on nullptr.
    return StatusFor(rc, std::move(msg));
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Connection>(new Connection(path, db));
}

StatusOr<std::unique_ptr<Connection>> Connection::OpenReadOnly(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = path + ": cannot open database read-only: " + SqliteMessage(db, rc);
    sqlite3_close_v2(db);
    return StatusFor(rc, std::move(msg));
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Connection>(new Connection(path, db));
}

Connection::~Connection() { sqlite3_close_v2(db_); }

StatusOr<Statement> Connection::Prepare(std::string_view sql) const {
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), 0, &stmt, &tail);
  if (rc != SQLITE_OK) {
    return StatusFor(rc, path_ + ": " + SqliteMessage(db_, rc) + " (in: " + SqlExcerpt(std::string(sql).c_str()) + ")");
  }
  Statement st(this, stmt);
  for (const char* p = tail; p != nullptr && p < sql.data() + sql.size(); ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p)) && *p != ';') {
      return Status::Internal(path_ + ": more than one SQL statement in: " + SqlExcerpt(std::string(sql).c_str()));
    }
  }
  if (stmt == nullptr) return Status::Internal(path_ + ": empty SQL statement");
  return st;
}

Status Connection::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = err != nullptr ? err : SqliteMessage(db_, rc);
  sqlite3_free(err);
  return StatusFor(rc, path_ + ": " + msg + " (in: " + SqlExcerpt(sql) + ")");
}

StatusOr<std::string> Connection::QueryText(std::string_view sql) {
  StatusOr<Statement> st = Prepare(sql);
  if (!st.ok()) return st.status();
  StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  return *row ? st->ColumnText(0) : std::string();
}

int64_t Connection::LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }
int64_t Connection::Changes() const { return sqlite3_changes64(db_); }
bool Connection::InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

Status Connection::Error(int rc, std::string_view what) const {
  return StatusFor(rc, path_ + ": " + std::string(what) + ": " + SqliteMessage(db_, rc));
}

// ---------------------------------------------------------------------------
// Backup

Status Backup(Connection& from, const std::string& dest_path, int busy_timeout_ms) {
  StatusOr<std::unique_ptr<Connection>> dest = Connection::Open(dest_path, /*create=*/true);
  if (!dest.ok()) return dest.status();
  sqlite3_backup* backup = sqlite3_backup_init((*dest)->handle(), "main", from.handle(), "main");
  if (backup == nullptr) {
    return StatusFor(sqlite3_errcode((*dest)->handle()), dest_path + ": cannot start the backup of " + from.path() +
                                                             ": " + sqlite3_errmsg((*dest)->handle()));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  int rc;
  while (true) {
    rc = sqlite3_backup_step(backup, -1);
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // finish reports the step's error too, with the destination's message.
  int finish_rc = sqlite3_backup_finish(backup);
  if (rc == SQLITE_DONE && finish_rc == SQLITE_OK) return Status::Ok();
  int err = rc == SQLITE_DONE ? finish_rc : rc;
  std::string why = (err & 0xff) == SQLITE_BUSY || (err & 0xff) == SQLITE_LOCKED
                        ? std::string(sqlite3_errstr(err)) + " (the database stayed locked)"
                        : SqliteMessage((*dest)->handle(), err);
  return StatusFor(err, dest_path + ": backup of " + from.path() + " failed: " + why);
}

// ---------------------------------------------------------------------------
// Transaction

StatusOr<Transaction> Transaction::Begin(Connection& conn, Mode mode) {
  TOPOTUNE_RETURN_IF_ERROR(conn.Exec(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED"));
  return Transaction(&conn);
}

Transaction::Transaction(Transaction&& other) noexcept : conn_(std::exchange(other.conn_, nullptr)) {}

Transaction::~Transaction() {
  // SQLite may already have rolled back after some errors (e.g. SQLITE_FULL);
  // a second ROLLBACK would only fail. A destructor cannot report a failed one.
  if (conn_ != nullptr && conn_->InTransaction()) conn_->Exec("ROLLBACK").IgnoreError();
}

Status Transaction::Commit() {
  if (conn_ == nullptr) return Status::Internal("commit of a finished transaction");
  Status st = conn_->Exec("COMMIT");
  if (st.ok() || !conn_->InTransaction()) conn_ = nullptr;
  return st;
}

}  // namespace topotune::db
