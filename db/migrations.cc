#include "db/migrations.h"

#include <array>
#include <string>

namespace topotune::db {
namespace {

// Times are unix time in milliseconds (INTEGER). Sizes and message sizes are
// bytes; msize is REAL because tuner/crossover.h works in doubles and the
// boundaries of decision tables are geometric means.
constexpr Migration kMigrations[] = {
    {1, "topologies: versioned topology files with their switches, hosts and links", R"sql(
CREATE TABLE schema_version (
  version INTEGER PRIMARY KEY,     -- the schema version a migration produced
  description TEXT NOT NULL,
  applied_at INTEGER NOT NULL
);

-- One row per distinct topology seen: a new version when the content changes.
CREATE TABLE topologies (
  version INTEGER PRIMARY KEY AUTOINCREMENT,  -- AUTOINCREMENT: never reused
  content_hash TEXT NOT NULL,      -- FNV-1a 64 (16 hex digits) of yaml
  yaml TEXT NOT NULL,              -- DumpTopology: the canonical text
  source TEXT NOT NULL,            -- the file path, or "discovery"
  created_at INTEGER NOT NULL
);

-- The same topology as rows, for queries; yaml stays the source of truth.
-- Node index in the Topology: switches by position, then hosts by position.
CREATE TABLE switches (
  topology_version INTEGER NOT NULL REFERENCES topologies(version) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY (topology_version, position),
  UNIQUE (topology_version, name)
) WITHOUT ROWID;

CREATE TABLE hosts (
  topology_version INTEGER NOT NULL REFERENCES topologies(version) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  slots INTEGER NOT NULL CHECK (slots > 0),
  PRIMARY KEY (topology_version, position),
  UNIQUE (topology_version, name)
) WITHOUT ROWID;
-- Which topology versions contain a host (agents are matched by hostname).
CREATE INDEX hosts_by_name ON hosts(name);

CREATE TABLE links (
  topology_version INTEGER NOT NULL REFERENCES topologies(version) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  a TEXT NOT NULL,                 -- endpoint names, in file order
  b TEXT NOT NULL,
  speed_bps REAL NOT NULL CHECK (speed_bps > 0),
  latency_s REAL NOT NULL CHECK (latency_s >= 0),
  PRIMARY KEY (topology_version, position)
) WITHOUT ROWID;
)sql"},

    {2, "agents and benchmarks: registered hosts, bench runs and their samples", R"sql(
CREATE TABLE agents (
  hostname TEXT PRIMARY KEY,
  facts TEXT NOT NULL,             -- JSON object from topotune-agent
  registered_at INTEGER NOT NULL,  -- the latest registration
  last_heartbeat INTEGER NOT NULL
);

CREATE TABLE bench_runs (
  id INTEGER PRIMARY KEY,
  topology_version INTEGER NOT NULL REFERENCES topologies(version),
  collective TEXT NOT NULL,
  nprocs INTEGER NOT NULL CHECK (nprocs > 0),
  ranks_per_node INTEGER NOT NULL CHECK (ranks_per_node > 0),
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'timeout')),
  created_at INTEGER NOT NULL,
  started_at INTEGER,              -- NULL while queued
  finished_at INTEGER,             -- NULL until done, failed or timeout
  message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX bench_runs_by_key ON bench_runs(topology_version, collective, nprocs, ranks_per_node);
CREATE INDEX bench_runs_by_state ON bench_runs(state);

-- Committed as they arrive, one transaction per batch.
CREATE TABLE samples (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,
  algorithm TEXT NOT NULL,
  msize REAL NOT NULL CHECK (msize >= 0),
  seconds REAL NOT NULL CHECK (seconds > 0),
  recorded_at INTEGER NOT NULL
);
CREATE INDEX samples_by_run ON samples(run_id);
)sql"},

    {3, "tuning and serving: decision tables, crossovers, the plan cache, job reports", R"sql(
-- The current decision per (topology version, collective, layout); replacing
-- one deletes the old row and its crossovers.
CREATE TABLE decisions (
  id INTEGER PRIMARY KEY,
  topology_version INTEGER NOT NULL REFERENCES topologies(version),
  collective TEXT NOT NULL,
  nprocs INTEGER NOT NULL CHECK (nprocs > 0),
  ranks_per_node INTEGER NOT NULL CHECK (ranks_per_node > 0),
  table_json TEXT NOT NULL,        -- [{"min_msize","max_msize" (null: infinity),"algorithm"}]
  choices_json TEXT NOT NULL,      -- per measured size: chosen, fastest, medians, regret, significant
  created_at INTEGER NOT NULL,
  UNIQUE (topology_version, collective, nprocs, ranks_per_node)
);

-- The boundaries of each decision table, as rows for queries and dashboards.
CREATE TABLE crossovers (
  decision_id INTEGER NOT NULL REFERENCES decisions(id) ON DELETE CASCADE,
  msize REAL NOT NULL,             -- the first size of to_algorithm's range
  from_algorithm TEXT NOT NULL,
  to_algorithm TEXT NOT NULL,
  PRIMARY KEY (decision_id, msize)
) WITHOUT ROWID;

-- Compiled schedules served to jobs. size = length(payload), kept so that
-- totals and eviction read the small index below and never the blobs.
CREATE TABLE plan_cache (
  topology_version INTEGER NOT NULL REFERENCES topologies(version) ON DELETE CASCADE,
  placement_hash TEXT NOT NULL,
  collective TEXT NOT NULL,
  algorithm TEXT NOT NULL,
  payload BLOB NOT NULL,
  size INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  last_used INTEGER NOT NULL,
  PRIMARY KEY (topology_version, placement_hash, collective, algorithm)
);
CREATE INDEX plan_cache_lru ON plan_cache(last_used, size);

CREATE TABLE job_reports (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  payload TEXT NOT NULL            -- JSON sent by the job at MPI_Finalize
);
CREATE INDEX job_reports_by_job ON job_reports(job_id);
CREATE INDEX job_reports_by_time ON job_reports(received_at);
)sql"},

    {4, "sample batches: resending a batch (same run and sequence) stores nothing twice", R"sql(
-- One row per batch AddSampleBatch committed, in the same transaction as its
-- samples: a batch resent after a broken stream finds its row and is skipped.
CREATE TABLE sample_batches (
  run_id INTEGER NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,
  sequence INTEGER NOT NULL CHECK (sequence >= 0),
  samples INTEGER NOT NULL,        -- rows the batch added to samples
  PRIMARY KEY (run_id, sequence)
) WITHOUT ROWID;
)sql"},

    {5, "alltoallv pattern classes: runs and decisions per size pattern (uniform, skewed, sparse)", R"sql(
-- The size pattern class a run measured and a decision is for: alltoallv
-- only ('uniform', 'skewed', 'sparse'); '' for the other collectives.
-- Alltoallv runs and decisions before this version measured the uniform
-- pattern.
ALTER TABLE bench_runs ADD COLUMN pattern TEXT NOT NULL DEFAULT '';
UPDATE bench_runs SET pattern = 'uniform' WHERE collective = 'alltoallv';
DROP INDEX bench_runs_by_key;
CREATE INDEX bench_runs_by_key ON bench_runs(topology_version, collective, nprocs, ranks_per_node, pattern);

-- decisions gets the pattern in its key: a new table (a UNIQUE constraint
-- cannot change in place), its rows and ids copied, so crossovers still
-- point at them.
CREATE TABLE decisions_v5 (
  id INTEGER PRIMARY KEY,
  topology_version INTEGER NOT NULL REFERENCES topologies(version),
  collective TEXT NOT NULL,
  nprocs INTEGER NOT NULL CHECK (nprocs > 0),
  ranks_per_node INTEGER NOT NULL CHECK (ranks_per_node > 0),
  pattern TEXT NOT NULL DEFAULT '',  -- as bench_runs.pattern
  table_json TEXT NOT NULL,        -- [{"min_msize","max_msize" (null: infinity),"algorithm"}]
  choices_json TEXT NOT NULL,      -- per measured size: the choice, its statistics and the candidates'
  created_at INTEGER NOT NULL,
  UNIQUE (topology_version, collective, nprocs, ranks_per_node, pattern)
);
INSERT INTO decisions_v5 (id, topology_version, collective, nprocs, ranks_per_node, pattern, table_json,
                          choices_json, created_at)
  SELECT id, topology_version, collective, nprocs, ranks_per_node,
         CASE collective WHEN 'alltoallv' THEN 'uniform' ELSE '' END, table_json, choices_json, created_at
  FROM decisions;
DROP TABLE decisions;
ALTER TABLE decisions_v5 RENAME TO decisions;
)sql"},

    {6, "sample notes: why an algorithm left a size early, and what the size cost", R"sql(
-- One row per (run, algorithm, size) that has something to say beyond its
-- times: why it left the size's rounds early (racing, the candidate time
-- limit, a warm-up far slower than native; '' when it ran every round),
-- the size's wall time in that run (warm-up and every round) and the size
-- matrices its rounds cycled through (alltoallv).
CREATE TABLE sample_notes (
  run_id INTEGER NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,
  algorithm TEXT NOT NULL,
  msize REAL NOT NULL CHECK (msize >= 0),
  dropped TEXT NOT NULL DEFAULT '',
  size_seconds REAL NOT NULL DEFAULT 0 CHECK (size_seconds >= 0),
  matrices INTEGER NOT NULL DEFAULT 1 CHECK (matrices >= 1),  -- round r ran on matrix r mod this
  PRIMARY KEY (run_id, algorithm, msize)
) WITHOUT ROWID;
)sql"},

    {7, "demand: what production jobs' collective calls spent, per demand cell and decision source", R"sql(
-- One row per (job report, demand cell, decision source): a cell is a
-- (collective, communicator layout, size bucket, alltoallv class), the
-- bucket the power of two nearest the calls' message size (tuner/demand.h).
-- Reports stored before this version carry no demand.
CREATE TABLE demand (
  report_id INTEGER NOT NULL REFERENCES job_reports(id) ON DELETE CASCADE,
  received_at INTEGER NOT NULL,    -- the report's, for windows
  topology_version INTEGER NOT NULL DEFAULT 0,  -- of the job's plan; 0 without one
  collective TEXT NOT NULL,
  nprocs INTEGER NOT NULL CHECK (nprocs > 0),
  ranks_per_node INTEGER NOT NULL CHECK (ranks_per_node > 0),
  size_bucket INTEGER NOT NULL CHECK (size_bucket >= 0),
  pattern TEXT NOT NULL DEFAULT '',  -- as bench_runs.pattern
  source TEXT NOT NULL,            -- 'tuned', 'nearest', 'default', 'forced': the table the calls ran
  distance REAL NOT NULL DEFAULT 0 CHECK (distance >= 0),  -- 'nearest': to the layout tuned
  hosts INTEGER NOT NULL DEFAULT 0 CHECK (hosts >= 0),     -- spanned by the communicator; 0: unknown
  switches INTEGER NOT NULL DEFAULT 0 CHECK (switches >= 0),
  calls INTEGER NOT NULL CHECK (calls >= 0),
  bytes INTEGER NOT NULL DEFAULT 0 CHECK (bytes >= 0),
  seconds REAL NOT NULL CHECK (seconds >= 0),
  msize_calls REAL NOT NULL DEFAULT 0  -- the sum of message size x calls, for the mean size
);
CREATE INDEX demand_by_time ON demand(received_at);
CREATE INDEX demand_by_report ON demand(report_id);
)sql"},

    {8, "learned: what in-job adaptation found in production jobs, per bucket, apart from sweep samples", R"sql(
-- One row per adapted bucket a job reported (rank 0's): the communicator's
-- layout, the size bucket, what it settled on (or that it did not), and
-- its candidates' paired means as JSON. Production samples, never mixed
-- with the sweeps' samples: GetPlan serves the latest settled choice of a
-- layout's bucket where its table is not tuned.
CREATE TABLE learned (
  report_id INTEGER NOT NULL REFERENCES job_reports(id) ON DELETE CASCADE,
  received_at INTEGER NOT NULL,
  topology_version INTEGER NOT NULL DEFAULT 0,  -- of the communicator's plan; 0 without one
  collective TEXT NOT NULL,
  nprocs INTEGER NOT NULL CHECK (nprocs > 0),
  ranks_per_node INTEGER NOT NULL CHECK (ranks_per_node > 0),
  pattern TEXT NOT NULL DEFAULT '',
  size_bucket INTEGER NOT NULL CHECK (size_bucket >= 0),
  settled INTEGER NOT NULL CHECK (settled IN (0, 1)),
  choice TEXT NOT NULL DEFAULT '',
  ratio REAL NOT NULL DEFAULT 1,       -- the choice's mean over native's paired calls
  calls INTEGER NOT NULL CHECK (calls >= 0),
  exploring_calls INTEGER NOT NULL CHECK (exploring_calls >= 0),
  extra_seconds REAL NOT NULL DEFAULT 0,
  candidates_json TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX learned_by_key ON learned(topology_version, collective, nprocs, ranks_per_node, pattern, size_bucket);
CREATE INDEX learned_by_report ON learned(report_id);
)sql"},
};

// Guards against a gap or a wrong number when a migration is appended.
constexpr bool NumberedInOrder() {
  for (size_t i = 0; i < std::size(kMigrations); ++i) {
    if (kMigrations[i].version != static_cast<int>(i) + 1) return false;
  }
  return true;
}
static_assert(NumberedInOrder(), "kMigrations[i] must produce version i + 1");

// Turns foreign keys back on when the scope ends (Store always runs with them on).
class ForeignKeysOnAtExit {
 public:
  explicit ForeignKeysOnAtExit(Connection& conn) : conn_(conn) {}
  ~ForeignKeysOnAtExit() { conn_.Exec("PRAGMA foreign_keys = ON").IgnoreError(); }  // A destructor cannot report.
  ForeignKeysOnAtExit(const ForeignKeysOnAtExit&) = delete;
  ForeignKeysOnAtExit& operator=(const ForeignKeysOnAtExit&) = delete;

 private:
  Connection& conn_;
};

}  // namespace

std::span<const Migration> Migrations() { return kMigrations; }

int LatestSchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

Status NewerSchemaError(const Connection& conn, int found, int known) {
  return Status::FailedPrecondition(conn.path() + ": database schema version " + std::to_string(found) +
                                    " is newer than this topotune (knows up to " + std::to_string(known) +
                                    "); upgrade topotune or use another database");
}

StatusOr<int> ReadSchemaVersion(Connection& conn) {
  StatusOr<Statement> tables = conn.Prepare(
      "SELECT count(*), count(*) FILTER (WHERE name = 'schema_version') FROM sqlite_schema WHERE type = 'table'");
  if (!tables.ok()) return tables.status();
  StatusOr<bool> row = tables->Step();
  if (!row.ok()) return row.status();
  int64_t num_tables = tables->ColumnInt64(0);
  bool has_version = tables->ColumnInt64(1) > 0;
  if (!has_version) {
    if (num_tables == 0) return 0;
    return Status::FailedPrecondition(conn.path() +
                                      ": not a topotune database (it has tables but no schema_version table)");
  }
  StatusOr<Statement> version = conn.Prepare("SELECT coalesce(max(version), 0) FROM schema_version");
  if (!version.ok()) return version.status();
  row = version->Step();
  if (!row.ok()) return row.status();
  return static_cast<int>(version->ColumnInt64(0));
}

StatusOr<int> Migrate(Connection& conn, std::span<const Migration> migrations, int target, int64_t now_ms) {
  const int known = static_cast<int>(migrations.size());
  if (target < 0 || target > known) {
    return Status::InvalidArgument(conn.path() + ": schema version " + std::to_string(target) +
                                   " does not exist (this topotune knows 0 to " + std::to_string(known) + ")");
  }
  // Fast path without the write lock: the usual open of an up-to-date file.
  StatusOr<int> current = ReadSchemaVersion(conn);
  if (!current.ok()) return current.status();
  if (*current > known) return NewerSchemaError(conn, *current, known);
  if (*current >= target) return *current;

  // PRAGMA foreign_keys is a no-op inside a transaction, so it is switched
  // off here, around all the migrations, and back on afterwards.
  TOPOTUNE_RETURN_IF_ERROR(conn.Exec("PRAGMA foreign_keys = OFF"));
  ForeignKeysOnAtExit restore(conn);
  for (;;) {
    StatusOr<Transaction> txn = Transaction::Begin(conn, Transaction::Mode::kImmediate);
    if (!txn.ok()) return txn.status();
    // Another process may have migrated since we looked.
    current = ReadSchemaVersion(conn);
    if (!current.ok()) return current.status();
    if (*current > known) return NewerSchemaError(conn, *current, known);
    if (*current >= target) return *current;  // The transaction rolls back; it wrote nothing.

    const Migration& m = migrations[static_cast<size_t>(*current)];
    auto failed = [&](const Status& st) {
      return Status::Internal(conn.path() + ": migration " + std::to_string(m.version) + " (" +
                              std::string(m.description) + ") failed: " + st.message());
    };
    if (Status st = conn.Exec(m.sql); !st.ok()) return failed(st);
    StatusOr<Statement> check = conn.Prepare("PRAGMA foreign_key_check");
    if (!check.ok()) return failed(check.status());
    StatusOr<bool> violation = check->Step();
    if (!violation.ok()) return failed(violation.status());
    if (*violation) {
      return failed(Status::FailedPrecondition("foreign key violation in table " + check->ColumnText(0)));
    }
    StatusOr<Statement> record =
        conn.Prepare("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)");
    if (!record.ok()) return failed(record.status());
    if (Status st = record->BindAll(m.version, m.description, now_ms).Run(); !st.ok()) return failed(st);
    if (Status st = txn->Commit(); !st.ok()) return failed(st);
  }
}

}  // namespace topotune::db
