#include "db/sqlite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>

#include "db/test_util.h"

namespace topotune::db {
namespace {

using ::testing::HasSubstr;
using testing::Must;
using ::testing::StartsWith;
using testing::TempDir;

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = Must(Connection::Open(dir_.File("t.db")));
    ASSERT_TRUE(conn_->Exec("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, u TEXT UNIQUE)").ok());
  }
  int64_t Count() {
    Statement st = Must(conn_->Prepare("SELECT count(*) FROM t"));
    EXPECT_TRUE(Must(st.Step()));
    return st.ColumnInt64(0);
  }
  TempDir dir_;
  std::unique_ptr<Connection> conn_;
};

TEST_F(SqliteTest, BindsAndReadsEveryType) {
  const std::string text("with\0nul", 8);
  const std::string blob("\x00\x01\xff", 3);
  Statement insert = Must(conn_->Prepare("INSERT INTO t (i, r, s, b, u) VALUES (?, ?, ?, ?, ?)"));
  ASSERT_TRUE(insert.BindAll(std::numeric_limits<int64_t>::min(), 0.1, text, Blob{blob}, std::optional<std::string>())
                  .Run()
                  .ok());
  ASSERT_TRUE(insert.Reset().BindAll(true, -2.5e300, "plain", Blob{""}, std::string_view("u")).Run().ok());

  Statement select = Must(conn_->Prepare("SELECT i, r, s, b, u FROM t ORDER BY rowid"));
  ASSERT_TRUE(Must(select.Step()));
  EXPECT_EQ(select.ColumnInt64(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(select.ColumnDouble(1), 0.1);
  EXPECT_EQ(select.ColumnText(2), text);
  EXPECT_EQ(select.ColumnBlob(3), blob);
  EXPECT_TRUE(select.ColumnIsNull(4));
  EXPECT_EQ(select.ColumnOptionalInt64(4), std::nullopt);
  ASSERT_TRUE(Must(select.Step()));
  EXPECT_EQ(select.ColumnInt64(0), 1);
  EXPECT_EQ(select.ColumnDouble(1), -2.5e300);
  EXPECT_FALSE(select.ColumnIsNull(3));  // An empty blob is not NULL.
  EXPECT_EQ(select.ColumnBlob(3), "");
  EXPECT_EQ(select.ColumnText(4), "u");
  EXPECT_FALSE(Must(select.Step()));
}

TEST_F(SqliteTest, TransactionRollsBackUnlessCommitted) {
  {
    Transaction txn = Must(Transaction::Begin(*conn_));
    ASSERT_TRUE(conn_->Exec("INSERT INTO t (i) VALUES (1)").ok());
    EXPECT_TRUE(conn_->InTransaction());
  }
  EXPECT_FALSE(conn_->InTransaction());
  EXPECT_EQ(Count(), 0);
  {
    Transaction txn = Must(Transaction::Begin(*conn_, Transaction::Mode::kDeferred));
    ASSERT_TRUE(conn_->Exec("INSERT INTO t (i) VALUES (1)").ok());
    ASSERT_TRUE(txn.Commit().ok());
    EXPECT_FALSE(txn.Commit().ok());  // Already committed.
  }
  EXPECT_EQ(Count(), 1);
  // A second BEGIN inside a transaction is an error, not a nested transaction.
  Transaction outer = Must(Transaction::Begin(*conn_));
  EXPECT_FALSE(Transaction::Begin(*conn_).ok());
}

TEST_F(SqliteTest, ErrorsNameThePathAndSqlitesReason) {
  StatusOr<Statement> bad = conn_->Prepare("SELEKT 1");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), StartsWith(dir_.File("t.db") + ": "));
  EXPECT_THAT(bad.status().message(), HasSubstr("syntax error"));

  StatusOr<Statement> two = conn_->Prepare("SELECT 1; SELECT 2");
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(two.status().message(), HasSubstr("more than one SQL statement"));

  Statement dup = Must(conn_->Prepare("INSERT INTO t (u) VALUES (?)"));
  ASSERT_TRUE(dup.BindAll("x").Run().ok());
  Status st = dup.Reset().BindAll("x").Run();
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("UNIQUE constraint failed: t.u"));
  EXPECT_THAT(st.message(), HasSubstr("(in: INSERT INTO t (u) VALUES (?))"));

  Statement range = Must(conn_->Prepare("SELECT ?"));
  st = range.BindAll(1, 2).Run();
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("binding parameters"));
}

TEST(ConnectionTest, OpenFailureNamesThePathAndTheSystemReason) {
  TempDir dir;
  std::string path = dir.File("missing/dir/t.db");
  StatusOr<std::unique_ptr<Connection>> conn = Connection::Open(path);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), Status::Code::kIoError);
  EXPECT_THAT(conn.status().message(), StartsWith(path + ": cannot open database: unable to open database file"));
}

// The online backup of a WAL database that another connection is writing:
// the copy holds what was committed, not the open transaction, passes
// integrity_check, and the writer is neither blocked nor disturbed.
TEST(BackupTest, CopiesTheCommittedStateWhileAnotherConnectionWrites) {
  TempDir dir;
  auto writer = Must(Connection::Open(dir.File("live.db")));
  ASSERT_TRUE(writer->Exec("PRAGMA journal_mode=WAL; CREATE TABLE t (i INTEGER PRIMARY KEY, s TEXT);").ok());
  Statement insert = Must(writer->Prepare("INSERT INTO t (s) VALUES (?)"));
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(insert.Reset().Bind(1, std::string(100, 'a' + i % 26)).Run().ok());
  Transaction open_tx = Must(Transaction::Begin(*writer));
  ASSERT_TRUE(writer->Exec("DELETE FROM t WHERE i > 10").ok());

  auto reader = Must(Connection::OpenReadOnly(dir.File("live.db")));
  Status st = Backup(*reader, dir.File("copy.db"));
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(open_tx.Commit().ok());  // The writer was not blocked.

  auto copy = Must(Connection::OpenReadOnly(dir.File("copy.db")));
  EXPECT_EQ(Must(copy->QueryText("PRAGMA integrity_check")), "ok");
  EXPECT_EQ(Must(copy->QueryText("SELECT count(*) FROM t")), "500");
  EXPECT_EQ(Must(copy->QueryText("SELECT s FROM t WHERE i = 27")), std::string(100, 'a'));
  EXPECT_EQ(Must(writer->QueryText("SELECT count(*) FROM t")), "10");
}

TEST(BackupTest, ErrorsNameTheDestination) {
  TempDir dir;
  auto from = Must(Connection::Open(dir.File("a.db")));
  ASSERT_TRUE(from->Exec("CREATE TABLE t (i INTEGER)").ok());
  const std::string dest = dir.File("missing/b.db");
  Status st = Backup(*from, dest);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), StartsWith(dest + ": cannot open database"));
}

TEST(ConnectionTest, ReadOnlyRefusesWritesAndMissingFiles) {
  TempDir dir;
  ASSERT_TRUE(Must(Connection::Open(dir.File("r.db")))->Exec("CREATE TABLE t (i INTEGER)").ok());
  auto ro = Must(Connection::OpenReadOnly(dir.File("r.db")));
  Status st = ro->Exec("INSERT INTO t VALUES (1)");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("readonly database"));
  auto missing = Connection::OpenReadOnly(dir.File("none.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), StartsWith(dir.File("none.db") + ": cannot open database read-only"));
  EXPECT_FALSE(std::filesystem::exists(dir.File("none.db")));
}

}  // namespace
}  // namespace topotune::db
