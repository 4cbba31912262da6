#include "db/migrations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "db/store.h"
#include "db/test_util.h"
#include "tuner/test_trees.h"
#include "tuner/topology_io.h"

namespace topotune::db {
namespace {

using ::testing::HasSubstr;
using testing::Must;
using ::testing::StartsWith;
using testing::TempDir;

// Every table, index and trigger with its SQL, for comparing schemas.
std::vector<std::string> SchemaOf(const std::string& path) {
  auto conn = Must(Connection::Open(path, /*create=*/false));
  Statement st =
      Must(conn->Prepare("SELECT type || ' ' || name || ': ' || sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' "
                         "ORDER BY type, name"));
  std::vector<std::string> out;
  while (Must(st.Step())) out.push_back(st.ColumnText(0));
  return out;
}

std::string QueryText(const std::string& path, const std::string& sql) {
  auto conn = Must(Connection::Open(path, /*create=*/false));
  return Must(conn->QueryText(sql));
}

StoreOptions AtVersion(int version) {
  StoreOptions options;
  options.max_schema_version = version;
  return options;
}

TEST(MigrationsTest, NumberedFromOne) {
  ASSERT_EQ(static_cast<int>(Migrations().size()), LatestSchemaVersion());
  ASSERT_EQ(Store::LatestSchemaVersion(), LatestSchemaVersion());
  for (size_t i = 0; i < Migrations().size(); ++i) {
    EXPECT_EQ(Migrations()[i].version, static_cast<int>(i) + 1);
    EXPECT_FALSE(Migrations()[i].description.empty());
  }
}

TEST(MigrationsTest, FromEmptyToLatest) {
  TempDir dir;
  std::string path = dir.File("t.db");
  {
    Store store = Must(Store::Open(path));
    EXPECT_EQ(store.SchemaVersion(), LatestSchemaVersion());
    EXPECT_TRUE(store.IntegrityCheck().ok());
  }
  // One schema_version row per migration.
  std::string expected;
  for (int v = 1; v <= LatestSchemaVersion(); ++v) expected += (v > 1 ? "," : "") + std::to_string(v);
  EXPECT_EQ(QueryText(path, "SELECT group_concat(version, ',') FROM (SELECT version FROM schema_version ORDER BY 1)"),
            expected);
  // Reopening changes nothing.
  std::vector<std::string> schema = SchemaOf(path);
  EXPECT_EQ(Must(Store::Open(path)).SchemaVersion(), LatestSchemaVersion());
  EXPECT_EQ(SchemaOf(path), schema);
}

// A database created at every older version and reopened ends up with the
// same schema as a new one.
TEST(MigrationsTest, FromEveryOlderVersion) {
  TempDir dir;
  std::string fresh = dir.File("fresh.db");
  { Must(Store::Open(fresh)); }
  const std::vector<std::string> latest = SchemaOf(fresh);
  for (int v = 0; v < LatestSchemaVersion(); ++v) {
    SCOPED_TRACE("from version " + std::to_string(v));
    std::string path = dir.File("v" + std::to_string(v) + ".db");
    {
      Store old = Must(Store::Open(path, AtVersion(v)));
      EXPECT_EQ(old.SchemaVersion(), v);
    }
    if (v == 0) {
      EXPECT_TRUE(SchemaOf(path).empty());
    } else {
      EXPECT_EQ(QueryText(path, "SELECT max(version) FROM schema_version"), std::to_string(v));
    }
    {
      Store store = Must(Store::Open(path));
      EXPECT_EQ(store.SchemaVersion(), LatestSchemaVersion());
      EXPECT_TRUE(store.IntegrityCheck().ok());
    }
    EXPECT_EQ(SchemaOf(path), latest);
  }
}

// Data written under an old schema is still there after migrating.
TEST(MigrationsTest, KeepsDataOfOlderVersions) {
  TempDir dir;
  std::string path = dir.File("t.db");
  Topology fig1 = topotune::testing::FarajYuanFigure1();
  int64_t version = 0;
  {
    Store v1 = Must(Store::Open(path, AtVersion(1)));
    version = Must(v1.PutTopology(fig1, "fig1.yaml"));
    // Tables of later migrations do not exist yet.
    StatusOr<int64_t> no_runs = v1.StartRun({version, "alltoall", 6, 1});
    ASSERT_FALSE(no_runs.ok());
    EXPECT_THAT(no_runs.status().message(), HasSubstr("no such table: bench_runs"));
  }
  {
    // Rows as version 4 wrote them (raw SQL: today's Store writes today's
    // columns): a run and a decision with a crossover, of alltoall and of
    // alltoallv, whose runs then measured the uniform pattern only.
    Store v4 = Must(Store::Open(path, AtVersion(4)));
    EXPECT_EQ(v4.SchemaVersion(), 4);
  }
  {
    auto conn = Must(Connection::Open(path, /*create=*/false));
    std::string v = std::to_string(version);
    ASSERT_TRUE(
        conn->Exec(std::string(
                       "INSERT INTO bench_runs (id, topology_version, collective, nprocs, ranks_per_node, state, "
                       "created_at) VALUES (1, " +
                       v + ", 'alltoall', 6, 1, 'done', 0), (2, " + v +
                       ", 'alltoallv', 6, 1, 'done', 0);"
                       "INSERT INTO samples (run_id, algorithm, msize, seconds, recorded_at) VALUES "
                       "(1, 'ring', 1024, 1e-3, 0), (1, 'ring', 1024, 2e-3, 0), (2, 'linear', 1024, 3e-3, 0);"
                       "INSERT INTO decisions (id, topology_version, collective, nprocs, ranks_per_node, table_json, "
                       "choices_json, created_at) VALUES (7, " +
                       v +
                       ", 'alltoall', 6, 1, "
                       "'[{\"min_msize\":0,\"max_msize\":4096,\"algorithm\":\"native\"},"
                       "{\"min_msize\":4096,\"max_msize\":null,\"algorithm\":\"ring\"}]', '[]', 0), (8, " +
                       v +
                       ", 'alltoallv', 6, 1, '[{\"min_msize\":0,\"max_msize\":null,\"algorithm\":\"linear\"}]', "
                       "'[]', 0);"
                       "INSERT INTO crossovers (decision_id, msize, from_algorithm, to_algorithm) VALUES "
                       "(7, 4096, 'native', 'ring');")
                       .c_str())
            .ok());
  }
  Store store = Must(Store::Open(path));
  EXPECT_EQ(store.SchemaVersion(), LatestSchemaVersion());
  StoredTopology t = Must(store.GetTopology(version));
  EXPECT_EQ(t.yaml, DumpTopology(fig1));
  std::vector<SampleSet> sets = Must(store.Samples({version, "alltoall", 6, 1}));
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].seconds, (std::vector<double>{1e-3, 2e-3}));
  // Alltoallv runs and decisions of before version 5 are the uniform pattern's.
  EXPECT_EQ(Must(store.Samples({version, "alltoallv", 6, 1, "uniform"})).size(), 1u);
  EXPECT_TRUE(Must(store.Samples({version, "alltoallv", 6, 1, "skewed"})).empty());
  std::optional<StoredDecision> a2a = Must(store.GetDecision({version, "alltoall", 6, 1}));
  ASSERT_TRUE(a2a.has_value());
  EXPECT_EQ(a2a->id, 7);
  ASSERT_EQ(a2a->crossovers.size(), 1u);  // The crossovers kept their decision.
  EXPECT_EQ(a2a->crossovers[0].to_algorithm, "ring");
  std::optional<StoredDecision> a2av = Must(store.GetDecision({version, "alltoallv", 6, 1, "uniform"}));
  ASSERT_TRUE(a2av.has_value());
  EXPECT_EQ(a2av->table[0].algorithm, "linear");
  // A decision per pattern class now.
  std::vector<DecisionRange> table = {{0, INFINITY, "native"}};
  ASSERT_TRUE(store.PutDecision({version, "alltoallv", 6, 1, "skewed"}, table, {}).ok());
  EXPECT_EQ(Must(store.ListDecisions(version)).size(), 3u);
  // And the newest tables work.
  EXPECT_TRUE(store.PutPlan({version, "p", "alltoall", "ring"}, "plan").ok());
}

TEST(MigrationsTest, OpeningAnOlderMaxVersionLeavesANewerDatabaseAlone) {
  TempDir dir;
  std::string path = dir.File("t.db");
  { Must(Store::Open(path)); }
  Store store = Must(Store::Open(path, AtVersion(1)));
  EXPECT_EQ(store.SchemaVersion(), LatestSchemaVersion());
}

TEST(MigrationsTest, RefusesADatabaseNewerThanThisBinary) {
  TempDir dir;
  std::string path = dir.File("t.db");
  { Must(Store::Open(path)); }
  {
    auto conn = Must(Connection::Open(path));
    Statement bump =
        Must(conn->Prepare("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)"));
    ASSERT_TRUE(bump.BindAll(LatestSchemaVersion() + 1, "from the future", 0).Run().ok());
  }
  StatusOr<Store> store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(store.status().message(), path + ": database schema version " + std::to_string(LatestSchemaVersion() + 1) +
                                          " is newer than this topotune (knows up to " +
                                          std::to_string(LatestSchemaVersion()) +
                                          "); upgrade topotune or use another database");
  // Also when only asked for an old version.
  EXPECT_FALSE(Store::Open(path, AtVersion(1)).ok());
}

TEST(MigrationsTest, RefusesAForeignDatabaseWithoutTouchingIt) {
  TempDir dir;
  std::string path = dir.File("other.db");
  {
    auto conn = Must(Connection::Open(path));
    ASSERT_TRUE(conn->Exec("CREATE TABLE photos (id INTEGER PRIMARY KEY)").ok());
  }
  StatusOr<Store> store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().message(), path + ": not a topotune database (it has tables but no schema_version table)");
  EXPECT_EQ(QueryText(path, "PRAGMA journal_mode"), "delete");  // Not switched to WAL.
}

TEST(MigrationsTest, RefusesAFileThatIsNotADatabase) {
  TempDir dir;
  std::string path = dir.File("notes.txt");
  std::ofstream(path) << "These are not the pages you are looking for. " << std::string(200, 'x');
  StatusOr<Store> store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Status::Code::kIoError);
  EXPECT_THAT(store.status().message(), StartsWith(path + ": file is not a database"));
}

TEST(MigrationsTest, RejectsAnUnknownMaxVersion) {
  TempDir dir;
  StatusOr<Store> store = Store::Open(dir.File("t.db"), AtVersion(LatestSchemaVersion() + 1));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Status::Code::kInvalidArgument);
}

// Each migration is one transaction: a failing one leaves the database at the
// previous version with nothing of the failed script applied.
TEST(MigrationsTest, AFailingMigrationRollsBack) {
  TempDir dir;
  std::string path = dir.File("t.db");
  std::vector<Migration> broken = {Migrations()[0],
                                   {2, "broken on purpose", "CREATE TABLE half_done (x); CREATE TABLE (syntax error;"}};
  auto conn = Must(Connection::Open(path));
  StatusOr<int> reached = Migrate(*conn, broken, 2, 0);
  ASSERT_FALSE(reached.ok());
  EXPECT_THAT(reached.status().message(), StartsWith(path + ": migration 2 (broken on purpose) failed: "));
  EXPECT_THAT(reached.status().message(), HasSubstr("syntax error"));
  EXPECT_EQ(Must(ReadSchemaVersion(*conn)), 1);
  EXPECT_EQ(Must(conn->QueryText("SELECT count(*) FROM sqlite_schema WHERE name = 'half_done'")), "0");
  EXPECT_EQ(Must(conn->QueryText("PRAGMA foreign_keys")), "1");
  EXPECT_FALSE(conn->InTransaction());
}

TEST(MigrationsTest, AMigrationLeavingForeignKeyViolationsFails) {
  TempDir dir;
  std::string path = dir.File("t.db");
  std::vector<Migration> orphan = {
      Migrations()[0],
      {2, "orphan link", "INSERT INTO links VALUES (42, 0, 'a', 'b', 1e9, 0);"},
  };
  auto conn = Must(Connection::Open(path));
  StatusOr<int> reached = Migrate(*conn, orphan, 2, 0);
  ASSERT_FALSE(reached.ok());
  EXPECT_THAT(reached.status().message(), HasSubstr("foreign key violation in table links"));
  EXPECT_EQ(Must(ReadSchemaVersion(*conn)), 1);
}

TEST(MigrationsTest, OpenSetsWalMode) {
  TempDir dir;
  std::string path = dir.File("t.db");
  Store store = Must(Store::Open(path));
  // journal_mode=WAL is a property of the file: another connection sees it.
  EXPECT_EQ(QueryText(path, "PRAGMA journal_mode"), "wal");
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
}

}  // namespace
}  // namespace topotune::db
