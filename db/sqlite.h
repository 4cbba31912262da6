// Small RAII wrappers over the sqlite3 C API: a Connection (one sqlite3*
// handle), prepared Statements with bound parameters, and Transactions that
// roll back unless committed. Every failure becomes a Status whose message
// starts with the database path and carries SQLite's own message, so callers
// never see a raw result code and nothing throws.
//
// SQL text is always a constant in the code; values always travel as bound
// parameters (Statement::Bind), never spliced into SQL. Connection::Exec runs
// constant scripts only (migrations, pragmas).
//
// Ownership: a Statement and a Transaction borrow their Connection, which must
// outlive them; a Connection is neither copyable nor movable (it lives behind
// a unique_ptr) so that those borrows stay valid.
//
// Thread-safety: none. A Connection and everything made from it must be used
// by one thread at a time (the connection is opened SQLITE_OPEN_NOMUTEX);
// Store serialises its use with a mutex.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "tuner/status.h"

namespace topotune::db {

class Connection;

// Marks bytes to bind as a BLOB rather than TEXT.
struct Blob {
  std::string_view bytes;
};

// A prepared statement, finalized on destruction. Parameters are 1-based as in
// sqlite3_bind_*. A binding error (out of range, too big) is remembered and
// returned by the next Step or Run, so that binds can be chained.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Binds integers (including bool), floating point, text (anything that
  // converts to std::string_view; copied), Blob (copied), nullptr or
  // std::nullopt (NULL), and std::optional of those (NULL when empty).
  template <typename T>
  Statement& Bind(int index, const T& value);
  // Binds `args` to parameters 1, 2, ... in order.
  template <typename... Args>
  Statement& BindAll(const Args&... args) {
    int index = 0;
    (Bind(++index, args), ...);
    return *this;
  }

  // Advances: true when a row is available, false when the statement is done.
  StatusOr<bool> Step();
  // Steps until done, ignoring any rows (for INSERT/UPDATE/DELETE and pragmas).
  Status Run();
  // Makes the statement ready to run again and clears its bindings.
  Statement& Reset();

  // Columns of the current row, 0-based.
  bool ColumnIsNull(int col) const;
  int64_t ColumnInt64(int col) const;
  double ColumnDouble(int col) const;
  std::string ColumnText(int col) const;
  std::string ColumnBlob(int col) const;
  std::optional<int64_t> ColumnOptionalInt64(int col) const;

 private:
  friend class Connection;
  Statement(const Connection* conn, sqlite3_stmt* stmt) : conn_(conn), stmt_(stmt) {}
  void BindNull(int index);
  void BindInt64(int index, int64_t value);
  void BindDouble(int index, double value);
  void BindText(int index, std::string_view value);
  void BindBlob(int index, std::string_view bytes);
  void NoteBind(int rc);
  Status Error(int rc) const;

  const Connection* conn_ = nullptr;  // Not owned.
  sqlite3_stmt* stmt_ = nullptr;      // Owned.
  int bind_rc_ = SQLITE_OK;
};

// One database connection. Open sets extended result codes; pragmas are the
// caller's business (Store sets WAL, busy_timeout, foreign_keys, synchronous).
class Connection {
 public:
  // Opens (creating when `create`) the database at `path`. Errors name the
  // path and SQLite's reason, plus the system's reason when there is one.
  static StatusOr<std::unique_ptr<Connection>> Open(const std::string& path, bool create = true);
  // Opens an existing database read-only (SQLITE_OPEN_READONLY): for
  // inspecting a database another process uses. In WAL mode readers never
  // block that process's writes; the -shm file must exist or the directory
  // be writable (SQLite's rule for WAL readers).
  static StatusOr<std::unique_ptr<Connection>> OpenReadOnly(const std::string& path);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Prepares one statement; trailing SQL after it is an error.
  StatusOr<Statement> Prepare(std::string_view sql) const;
  // Runs a constant script of one or more statements without parameters.
  Status Exec(const char* sql);
  // Runs `sql` (one statement, no parameters) and returns the first column of
  // its first row as text (empty when no row): for pragmas that answer.
  StatusOr<std::string> QueryText(std::string_view sql);

  int64_t LastInsertRowid() const;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t Changes() const;
  bool InTransaction() const;

  // "<path>: <what>: <SQLite's message for rc>" with a Status code that fits
  // rc (IoError for I/O, locking, corruption; FailedPrecondition for
  // constraints; Internal otherwise).
  Status Error(int rc, std::string_view what) const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  Connection(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  std::string path_;
  sqlite3* db_ = nullptr;  // Owned.
};

// A transaction: BEGIN on creation; ROLLBACK on destruction unless Commit
// succeeded. Writers use kImmediate: it takes the write lock at BEGIN, where
// busy_timeout waits for it, whereas a deferred transaction that reads first
// and writes later fails at once with SQLITE_BUSY when another connection
// wrote in between. Readers use kDeferred for one consistent snapshot.
class Transaction {
 public:
  enum class Mode { kDeferred, kImmediate };
  static StatusOr<Transaction> Begin(Connection& conn, Mode mode = Mode::kImmediate);
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Status Commit();

 private:
  explicit Transaction(Connection* conn) : conn_(conn) {}
  Connection* conn_ = nullptr;  // Not owned; null once committed or moved from.
};

// Copies the whole database of `from` (schema "main") into the database
// file at `dest_path` (created, or overwritten page by page when it exists)
// with SQLite's online backup API, in one step: the copy is one consistent
// snapshot, taken under a read transaction, so a WAL-mode database may go on
// being written by other processes meanwhile. SQLITE_BUSY or SQLITE_LOCKED
// (a rollback-journal writer holding the lock) is retried for up to
// `busy_timeout_ms`. Errors name the path that failed and SQLite's reason.
Status Backup(Connection& from, const std::string& dest_path, int busy_timeout_ms = 5000);

namespace detail {
template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
inline constexpr bool kAlwaysFalse = false;
}  // namespace detail

template <typename T>
Statement& Statement::Bind(int index, const T& value) {
  if constexpr (std::is_same_v<T, std::nullptr_t> || std::is_same_v<T, std::nullopt_t>) {
    BindNull(index);
  } else if constexpr (detail::IsOptional<T>::value) {
    if (value.has_value()) {
      Bind(index, *value);
    } else {
      BindNull(index);
    }
  } else if constexpr (std::is_integral_v<T>) {
    static_assert(sizeof(T) < sizeof(int64_t) || std::is_signed_v<T>, "uint64_t does not fit SQLite's INTEGER");
    BindInt64(index, static_cast<int64_t>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    BindDouble(index, static_cast<double>(value));
  } else if constexpr (std::is_same_v<T, Blob>) {
    BindBlob(index, value.bytes);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    BindText(index, std::string_view(value));
  } else {
    static_assert(detail::kAlwaysFalse<T>, "no SQLite binding for this type");
  }
  return *this;
}

}  // namespace topotune::db
