#include "db/store.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "db/migrations.h"
#include "db/sqlite.h"
#include "tuner/hash.h"
#include "tuner/topology_io.h"

// Evaluates `expr` (a StatusOr); returns its status when not ok, else moves
// its value into `lhs` (a declaration or an lvalue, hence not parenthesised).
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TOPOTUNE_DB_CONCAT_INNER(a, b) a##b
#define TOPOTUNE_DB_CONCAT(a, b) TOPOTUNE_DB_CONCAT_INNER(a, b)
#define TOPOTUNE_DB_ASSIGN_OR_RETURN(lhs, expr) \
  TOPOTUNE_DB_ASSIGN_OR_RETURN_IMPL(TOPOTUNE_DB_CONCAT(status_or_, __LINE__), lhs, expr)
#define TOPOTUNE_DB_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                      \
  if (!tmp.ok()) return tmp.status();                     \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace topotune::db {
namespace {

using nlohmann::json;

int64_t ToMs(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
TimePoint FromMs(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

constexpr std::string_view kRunStateNames[] = {"queued", "running", "done", "failed", "timeout"};

bool Finished(RunState s) { return s == RunState::kDone || s == RunState::kFailed || s == RunState::kTimeout; }

// Shortest round-trip text of a number, "inf" and "nan" included.
std::string Num(double v) { return fmt::format("{}", v); }

// The JSON forms stored in decisions.table_json and decisions.choices_json.
// Infinity (the end of the last range) is null, as JSON has no infinity.
std::string TableToJson(std::span<const DecisionRange> table) {
  json out = json::array();
  for (const DecisionRange& r : table) {
    out.push_back({{"min_msize", r.min_msize},
                   {"max_msize", std::isinf(r.max_msize) ? json(nullptr) : json(r.max_msize)},
                   {"algorithm", r.algorithm}});
  }
  return out.dump();
}

json IntervalToJson(const RatioInterval& r) { return json::array({r.estimate, r.lo, r.hi}); }

// Rows written before intervals existed lack them: [1, 1, 1].
RatioInterval IntervalFromJson(const json& parent, const char* key) {
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return {};
  return {it->at(0).get<double>(), it->at(1).get<double>(), it->at(2).get<double>()};
}

std::string ChoicesToJson(std::span<const SizeChoice> choices) {
  json out = json::array();
  for (const SizeChoice& c : choices) {
    json candidates = json::array();
    for (const CandidateStats& k : c.candidates) {
      candidates.push_back({{"algorithm", k.algorithm},
                            {"calls", k.calls},
                            {"mean", k.mean},
                            {"median", k.median},
                            {"p95", k.p95},
                            {"ratio", IntervalToJson(k.ratio)},
                            {"p_faster", k.p_faster},
                            {"pairs", k.pairs},
                            {"dropped", k.dropped}});
    }
    out.push_back({{"msize", c.msize},
                   {"chosen", c.chosen},
                   {"fastest", c.fastest},
                   {"chosen_mean", c.chosen_mean},
                   {"chosen_median", c.chosen_median},
                   {"chosen_p95", c.chosen_p95},
                   {"fastest_mean", c.fastest_mean},
                   {"fastest_median", c.fastest_median},
                   {"reference", c.reference},
                   {"reference_mean", c.reference_mean},
                   {"reference_median", c.reference_median},
                   {"reference_p95", c.reference_p95},
                   {"ratio", IntervalToJson(c.ratio)},
                   {"regret", c.regret},
                   {"significant", c.significant},
                   {"settled", c.settled},
                   {"calls", c.calls},
                   {"aa", c.aa_measured ? IntervalToJson(c.aa) : json(nullptr)},
                   {"noisy", c.noisy},
                   {"failed", c.failed},
                   {"failure", c.failure},
                   {"tuning_seconds", c.tuning_seconds},
                   {"matrices", c.matrices},
                   {"matrix_ratio", json::array({c.matrix_ratio_min, c.matrix_ratio_max})},
                   {"candidates", std::move(candidates)}});
  }
  return out.dump();
}

// Throws nlohmann::json::exception on malformed input; the caller catches.
std::vector<DecisionRange> TableFromJson(const std::string& text) {
  std::vector<DecisionRange> table;
  for (const json& r : json::parse(text)) {
    const json& max = r.at("max_msize");
    table.push_back({r.at("min_msize").get<double>(),
                     max.is_null() ? std::numeric_limits<double>::infinity() : max.get<double>(),
                     r.at("algorithm").get<std::string>()});
  }
  return table;
}

std::vector<SizeChoice> ChoicesFromJson(const std::string& text) {
  std::vector<SizeChoice> choices;
  for (const json& c : json::parse(text)) {
    SizeChoice s;
    s.msize = c.at("msize").get<double>();
    s.chosen = c.at("chosen").get<std::string>();
    s.fastest = c.at("fastest").get<std::string>();
    s.chosen_median = c.at("chosen_median").get<double>();
    s.fastest_median = c.at("fastest_median").get<double>();
    s.regret = c.at("regret").get<double>();
    s.significant = c.at("significant").get<bool>();
    // Written since decisions rest on means and intervals; absent in older rows.
    s.chosen_mean = c.value("chosen_mean", 0.0);
    s.chosen_p95 = c.value("chosen_p95", 0.0);
    s.fastest_mean = c.value("fastest_mean", 0.0);
    s.reference = c.value("reference", std::string());
    s.reference_mean = c.value("reference_mean", 0.0);
    s.reference_median = c.value("reference_median", 0.0);
    s.reference_p95 = c.value("reference_p95", 0.0);
    s.ratio = IntervalFromJson(c, "ratio");
    s.settled = c.value("settled", false);
    s.calls = c.value("calls", int64_t{0});
    s.aa_measured = c.contains("aa") && !c.at("aa").is_null();
    s.aa = IntervalFromJson(c, "aa");
    s.noisy = c.value("noisy", false);
    s.failed = c.value("failed", false);
    s.failure = c.value("failure", std::string());
    s.tuning_seconds = c.value("tuning_seconds", 0.0);
    s.matrices = c.value("matrices", 1);
    if (auto it = c.find("matrix_ratio"); it != c.end() && it->is_array() && it->size() == 2) {
      s.matrix_ratio_min = it->at(0).get<double>();
      s.matrix_ratio_max = it->at(1).get<double>();
    }
    if (auto it = c.find("candidates"); it != c.end()) {
      for (const json& k : *it) {
        s.candidates.push_back({k.at("algorithm").get<std::string>(), k.at("calls").get<int64_t>(),
                                k.at("mean").get<double>(), k.at("median").get<double>(), k.at("p95").get<double>(),
                                IntervalFromJson(k, "ratio"), k.value("p_faster", 1.0), k.value("pairs", int64_t{0}),
                                k.value("dropped", std::string())});
      }
    }
    choices.push_back(std::move(s));
  }
  return choices;
}

// Parses JSON text from outside; the error says why it is not JSON.
StatusOr<json> ParseJson(std::string_view text, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(what + " is not valid JSON: " + e.what());
  }
}

}  // namespace

std::string_view RunStateName(RunState state) { return kRunStateNames[static_cast<int>(state)]; }

std::optional<RunState> ParseRunState(std::string_view name) {
  for (size_t i = 0; i < std::size(kRunStateNames); ++i) {
    if (kRunStateNames[i] == name) return static_cast<RunState>(i);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Impl: the connection, its mutex and the helpers shared by the methods. Every
// helper expects the mutex to be held.

struct Store::Impl {
  std::mutex mu;
  std::unique_ptr<Connection> conn;
  std::function<TimePoint()> clock;
  int schema_version = 0;

  const std::string& path() const { return conn->path(); }
  int64_t NowMs() const { return ToMs(clock ? clock() : std::chrono::system_clock::now()); }

  Status Invalid(const std::string& msg) const { return Status::InvalidArgument(path() + ": " + msg); }
  Status NotFound(const std::string& msg) const { return Status::NotFound(path() + ": " + msg); }
  Status Corrupt(const std::string& msg) const { return Status::Internal(path() + ": " + msg); }

  Status CheckKey(const TuningKey& key) const {
    if (key.collective.empty()) return Invalid("the collective is empty");
    if (key.nprocs <= 0) return Invalid("nprocs must be positive, got " + std::to_string(key.nprocs));
    if (key.ranks_per_node <= 0) {
      return Invalid("ranks_per_node must be positive, got " + std::to_string(key.ranks_per_node));
    }
    const bool is_class =
        std::find(kPatternClasses.begin(), kPatternClasses.end(), key.pattern) != kPatternClasses.end();
    if (key.collective == "alltoallv" ? !is_class : !key.pattern.empty()) {
      return Invalid("pattern '" + key.pattern + "': " +
                     (key.collective == "alltoallv"
                          ? fmt::format("alltoallv takes one of {}", fmt::join(kPatternClasses, ", "))
                          : "only alltoallv has patterns, not " + key.collective));
    }
    return Status::Ok();
  }

  // NotFound unless the topology version exists: a clearer message than
  // "FOREIGN KEY constraint failed".
  Status CheckTopology(int64_t version) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, conn->Prepare("SELECT 1 FROM topologies WHERE version = ?"));
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool found, st.BindAll(version).Step());
    return found ? Status::Ok() : NotFound("topology version " + std::to_string(version) + " not found");
  }

  // The run's state; NotFound when it does not exist.
  StatusOr<RunState> RunStateOf(int64_t run_id) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, conn->Prepare("SELECT state FROM bench_runs WHERE id = ?"));
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool found, st.BindAll(run_id).Step());
    if (!found) return NotFound("bench run " + std::to_string(run_id) + " not found");
    std::optional<RunState> state = ParseRunState(st.ColumnText(0));
    if (!state) return Corrupt("bench run " + std::to_string(run_id) + " has state '" + st.ColumnText(0) + "'");
    return *state;
  }

  // Columns: version, content_hash, yaml, source, created_at.
  StatusOr<StoredTopology> ReadTopology(const Statement& st) const {
    int64_t version = st.ColumnInt64(0);
    std::string yaml = st.ColumnText(2);
    std::string source = st.ColumnText(3);
    StatusOr<Topology> t = ParseTopology(yaml, source);
    if (!t.ok()) {
      return Corrupt("stored topology version " + std::to_string(version) + " does not parse: " + t.status().message());
    }
    return StoredTopology{version,           st.ColumnText(1),          std::move(yaml),
                          std::move(source), FromMs(st.ColumnInt64(4)), std::move(t).value()};
  }

  // Columns: id, topology_version, collective, nprocs, ranks_per_node,
  // table_json, choices_json, created_at, pattern. Reads the crossovers too.
  StatusOr<StoredDecision> ReadDecision(const Statement& st) {
    StoredDecision d;
    d.id = st.ColumnInt64(0);
    d.key = {st.ColumnInt64(1), st.ColumnText(2), static_cast<int>(st.ColumnInt64(3)),
             static_cast<int>(st.ColumnInt64(4)), st.ColumnText(8)};
    try {
      d.table = TableFromJson(st.ColumnText(5));
      d.choices = ChoicesFromJson(st.ColumnText(6));
    } catch (const json::exception& e) {
      return Corrupt("decision " + std::to_string(d.id) + " is malformed: " + e.what());
    }
    d.created_at = FromMs(st.ColumnInt64(7));
    TOPOTUNE_DB_ASSIGN_OR_RETURN(
        Statement cross,
        conn->Prepare(
            "SELECT msize, from_algorithm, to_algorithm FROM crossovers WHERE decision_id = ? ORDER BY msize"));
    cross.BindAll(d.id);
    for (;;) {
      TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, cross.Step());
      if (!row) break;
      d.crossovers.push_back({cross.ColumnDouble(0), cross.ColumnText(1), cross.ColumnText(2)});
    }
    return d;
  }
};

// ---------------------------------------------------------------------------
// Opening

StatusOr<Store> Store::Open(const std::string& path, const StoreOptions& options) {
  const int latest = LatestSchemaVersion();
  const int target = options.max_schema_version < 0 ? latest : options.max_schema_version;
  if (target > latest) {
    return Status::InvalidArgument(path + ": max_schema_version " + std::to_string(target) +
                                   " is newer than this topotune (knows up to " + std::to_string(latest) + ")");
  }
  if (options.busy_timeout_ms < 0) {
    return Status::InvalidArgument(path + ": busy_timeout_ms must not be negative");
  }
  auto impl = std::make_unique<Impl>();
  impl->clock = options.clock;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(impl->conn, Connection::Open(path));
  Connection& conn = *impl->conn;

  // First, because every step below may wait for another process's lock.
  int rc = sqlite3_busy_timeout(conn.handle(), options.busy_timeout_ms);
  if (rc != SQLITE_OK) return conn.Error(rc, "setting busy_timeout");

  // Refuse a newer or a foreign database before changing anything in it.
  TOPOTUNE_DB_ASSIGN_OR_RETURN(int found, ReadSchemaVersion(conn));
  if (found > latest) return NewerSchemaError(conn, found, latest);

  // WAL: readers and one writer proceed side by side, so plan reads are not
  // held up by sample ingestion, and the daemon and the CLI can share the
  // file. The mode is persistent, but asking costs nothing and repairs a file
  // someone switched back.
  TOPOTUNE_DB_ASSIGN_OR_RETURN(std::string mode, conn.QueryText("PRAGMA journal_mode = WAL"));
  if (mode != "wal" && !(path == ":memory:" && mode == "memory")) {
    return Status::IoError(path + ": cannot switch the database to WAL mode (journal_mode is '" + mode +
                           "'); WAL needs a local file system with shared-memory support");
  }
  // synchronous=NORMAL with WAL: a commit appends to the WAL without waiting
  // for fsync (which happens at checkpoints). A committed transaction then
  // survives a crash or SIGKILL of the process, since its pages are already
  // in the OS, and the database is never corrupted; that is what we need
  // (samples acknowledged by the daemon are not lost when it dies). A power
  // loss or OS crash may lose the last transactions before a checkpoint.
  // FULL would add an fsync to every sample batch.
  TOPOTUNE_RETURN_IF_ERROR(conn.Exec("PRAGMA synchronous = NORMAL"));

  TOPOTUNE_DB_ASSIGN_OR_RETURN(impl->schema_version, Migrate(conn, Migrations(), target, impl->NowMs()));

  // Off by default in SQLite, per connection; our ON DELETE CASCADEs and the
  // references from runs, decisions and plans to topologies rely on it.
  TOPOTUNE_RETURN_IF_ERROR(conn.Exec("PRAGMA foreign_keys = ON"));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(std::string fk, conn.QueryText("PRAGMA foreign_keys"));
  if (fk != "1") return Status::Internal(path + ": this SQLite does not enforce foreign keys");
  return Store(std::move(impl));
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&& other) noexcept = default;
Store& Store::operator=(Store&& other) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const { return impl_->path(); }
int Store::SchemaVersion() const { return impl_->schema_version; }
int Store::LatestSchemaVersion() { return db::LatestSchemaVersion(); }

// ---------------------------------------------------------------------------
// Topologies

StatusOr<int64_t> Store::PutTopology(const Topology& topology, std::string_view source) {
  const std::string yaml = DumpTopology(topology);
  const std::string hash = Fnv1a64Hex(yaml);
  std::lock_guard lock(impl_->mu);
  Connection& conn = *impl_->conn;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(conn));

  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement latest,
      conn.Prepare("SELECT version, content_hash, yaml FROM topologies ORDER BY version DESC LIMIT 1"));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(bool have_latest, latest.Step());
  // The hash picks the candidate; the text confirms it (FNV can collide).
  if (have_latest && latest.ColumnText(1) == hash && latest.ColumnText(2) == yaml) return latest.ColumnInt64(0);

  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement insert,
      conn.Prepare("INSERT INTO topologies (content_hash, yaml, source, created_at) VALUES (?, ?, ?, ?)"));
  TOPOTUNE_RETURN_IF_ERROR(insert.BindAll(hash, yaml, source, impl_->NowMs()).Run());
  const int64_t version = conn.LastInsertRowid();

  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement sw, conn.Prepare("INSERT INTO switches (topology_version, position, name) VALUES (?, ?, ?)"));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement host, conn.Prepare("INSERT INTO hosts (topology_version, position, name, slots) VALUES (?, ?, ?, ?)"));
  int num_switches = 0;
  int num_hosts = 0;
  for (const Node& n : topology.nodes()) {
    if (n.kind == NodeKind::kSwitch) {
      TOPOTUNE_RETURN_IF_ERROR(sw.Reset().BindAll(version, num_switches++, n.name).Run());
    } else {
      TOPOTUNE_RETURN_IF_ERROR(host.Reset().BindAll(version, num_hosts++, n.name, n.slots).Run());
    }
  }
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement link,
      conn.Prepare(
          "INSERT INTO links (topology_version, position, a, b, speed_bps, latency_s) VALUES (?, ?, ?, ?, ?, ?)"));
  int position = 0;
  for (const Link& l : topology.links()) {
    TOPOTUNE_RETURN_IF_ERROR(link.Reset()
                                 .BindAll(version, position++, topology.nodes()[l.a].name, topology.nodes()[l.b].name,
                                          l.speed_bps, l.latency_s)
                                 .Run());
  }
  TOPOTUNE_RETURN_IF_ERROR(txn.Commit());
  return version;
}

StatusOr<std::optional<StoredTopology>> Store::LatestTopology() {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement st,
      impl_->conn->Prepare(
          "SELECT version, content_hash, yaml, source, created_at FROM topologies ORDER BY version DESC LIMIT 1"));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(bool found, st.Step());
  if (!found) return std::optional<StoredTopology>();
  TOPOTUNE_DB_ASSIGN_OR_RETURN(StoredTopology t, impl_->ReadTopology(st));
  return std::optional<StoredTopology>(std::move(t));
}

StatusOr<StoredTopology> Store::GetTopology(int64_t version) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement st,
      impl_->conn->Prepare("SELECT version, content_hash, yaml, source, created_at FROM topologies WHERE version = ?"));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(bool found, st.BindAll(version).Step());
  if (!found) return impl_->NotFound("topology version " + std::to_string(version) + " not found");
  return impl_->ReadTopology(st);
}

// ---------------------------------------------------------------------------
// Agents

Status Store::RegisterAgent(std::string_view hostname, std::string_view facts_json) {
  std::lock_guard lock(impl_->mu);
  if (hostname.empty()) return impl_->Invalid("agent hostname is empty");
  const std::string what = "facts of agent '" + std::string(hostname) + "'";
  TOPOTUNE_DB_ASSIGN_OR_RETURN(json facts, ParseJson(facts_json, impl_->path() + ": " + what));
  if (!facts.is_object()) return impl_->Invalid(what + " must be a JSON object, got " + facts.type_name());
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      INSERT INTO agents (hostname, facts, registered_at, last_heartbeat) VALUES (?1, ?2, ?3, ?3)
      ON CONFLICT (hostname) DO UPDATE SET
        facts = excluded.facts, registered_at = excluded.registered_at, last_heartbeat = excluded.last_heartbeat)sql"));
  return st.BindAll(hostname, facts.dump(), impl_->NowMs()).Run();
}

Status Store::Heartbeat(std::string_view hostname) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st,
                               impl_->conn->Prepare("UPDATE agents SET last_heartbeat = ? WHERE hostname = ?"));
  TOPOTUNE_RETURN_IF_ERROR(st.BindAll(impl_->NowMs(), hostname).Run());
  if (impl_->conn->Changes() == 0) return impl_->NotFound("agent '" + std::string(hostname) + "' is not registered");
  return Status::Ok();
}

StatusOr<std::vector<AgentInfo>> Store::ListAgents() {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement st,
      impl_->conn->Prepare("SELECT hostname, facts, registered_at, last_heartbeat FROM agents ORDER BY hostname"));
  std::vector<AgentInfo> out;
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.ColumnText(0), st.ColumnText(1), FromMs(st.ColumnInt64(2)), FromMs(st.ColumnInt64(3))});
  }
  return out;
}

// ---------------------------------------------------------------------------
// Benchmarks

StatusOr<int64_t> Store::StartRun(const TuningKey& key, RunState initial) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_RETURN_IF_ERROR(impl_->CheckKey(key));
  if (initial != RunState::kQueued && initial != RunState::kRunning) {
    return impl_->Invalid("a run starts queued or running, not " + std::string(RunStateName(initial)));
  }
  TOPOTUNE_RETURN_IF_ERROR(impl_->CheckTopology(key.topology_version));
  const int64_t now = impl_->NowMs();
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      INSERT INTO bench_runs (topology_version, collective, nprocs, ranks_per_node, pattern, state, created_at,
                              started_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?))sql"));
  TOPOTUNE_RETURN_IF_ERROR(st.BindAll(key.topology_version, key.collective, key.nprocs, key.ranks_per_node, key.pattern,
                                      RunStateName(initial), now,
                                      initial == RunState::kRunning ? std::optional<int64_t>(now) : std::nullopt)
                               .Run());
  return impl_->conn->LastInsertRowid();
}

Status Store::MarkRunning(int64_t run_id) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement st, impl_->conn->Prepare(
                        "UPDATE bench_runs SET state = 'running', started_at = ? WHERE id = ? AND state = 'queued'"));
  TOPOTUNE_RETURN_IF_ERROR(st.BindAll(impl_->NowMs(), run_id).Run());
  if (impl_->conn->Changes() == 1) return Status::Ok();
  TOPOTUNE_DB_ASSIGN_OR_RETURN(RunState state, impl_->RunStateOf(run_id));
  return Status::FailedPrecondition(impl_->path() + ": bench run " + std::to_string(run_id) + " is " +
                                    std::string(RunStateName(state)) + ", not queued");
}

Status Store::FinishRun(int64_t run_id, RunState state, std::string_view message) {
  std::lock_guard lock(impl_->mu);
  if (!Finished(state)) {
    return impl_->Invalid("a run finishes done, failed or timeout, not " + std::string(RunStateName(state)));
  }
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      UPDATE bench_runs SET state = ?, finished_at = ?, message = ?
      WHERE id = ? AND state IN ('queued', 'running'))sql"));
  TOPOTUNE_RETURN_IF_ERROR(st.BindAll(RunStateName(state), impl_->NowMs(), message, run_id).Run());
  if (impl_->conn->Changes() == 1) return Status::Ok();
  TOPOTUNE_DB_ASSIGN_OR_RETURN(RunState current, impl_->RunStateOf(run_id));
  return Status::FailedPrecondition(impl_->path() + ": bench run " + std::to_string(run_id) + " already ended (" +
                                    std::string(RunStateName(current)) + ")");
}

Status Store::AddSamples(int64_t run_id, std::span<const Sample> batch) {
  return AddSampleBatch(run_id, -1, batch).status();
}

StatusOr<bool> Store::AddSampleBatch(int64_t run_id, int64_t sequence, std::span<const Sample> batch,
                                     const std::optional<SampleNote>& note) {
  std::lock_guard lock(impl_->mu);
  for (size_t i = 0; i < batch.size(); ++i) {
    const Sample& s = batch[i];
    std::string where = "sample " + std::to_string(i) + " of the batch for run " + std::to_string(run_id);
    if (s.algorithm.empty()) return impl_->Invalid(where + " has no algorithm");
    if (!std::isfinite(s.msize) || s.msize < 0) {
      return impl_->Invalid(where + " has msize " + Num(s.msize) + "; it must be finite and >= 0");
    }
    if (!std::isfinite(s.seconds) || s.seconds <= 0) {
      return impl_->Invalid(where + " has seconds " + Num(s.seconds) + "; it must be finite and > 0");
    }
  }
  if (note) {
    const std::string where = "the note of the batch for run " + std::to_string(run_id);
    if (note->algorithm.empty()) return impl_->Invalid(where + " has no algorithm");
    if (!std::isfinite(note->msize) || note->msize < 0)
      return impl_->Invalid(where + " has msize " + Num(note->msize) + "; it must be finite and >= 0");
    if (!std::isfinite(note->size_seconds) || note->size_seconds < 0)
      return impl_->Invalid(where + " has size_seconds " + Num(note->size_seconds) + "; it must be finite and >= 0");
    if (note->matrices < 1)
      return impl_->Invalid(where + " has matrices " + std::to_string(note->matrices) + "; it must be at least 1");
  }
  Connection& conn = *impl_->conn;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(conn));
  TOPOTUNE_RETURN_IF_ERROR(impl_->RunStateOf(run_id).status());
  if (sequence >= 0) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(
        Statement mark,
        conn.Prepare("INSERT OR IGNORE INTO sample_batches (run_id, sequence, samples) VALUES (?, ?, ?)"));
    TOPOTUNE_RETURN_IF_ERROR(mark.BindAll(run_id, sequence, static_cast<int64_t>(batch.size())).Run());
    if (conn.Changes() == 0) return false;  // Rolled back by txn's destructor: nothing was written.
  }
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement insert,
      conn.Prepare("INSERT INTO samples (run_id, algorithm, msize, seconds, recorded_at) VALUES (?, ?, ?, ?, ?)"));
  const int64_t now = impl_->NowMs();
  for (const Sample& s : batch) {
    TOPOTUNE_RETURN_IF_ERROR(insert.Reset().BindAll(run_id, s.algorithm, s.msize, s.seconds, now).Run());
  }
  if (note) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement put, conn.Prepare(R"sql(
        INSERT OR REPLACE INTO sample_notes (run_id, algorithm, msize, dropped, size_seconds, matrices)
        VALUES (?, ?, ?, ?, ?, ?))sql"));
    TOPOTUNE_RETURN_IF_ERROR(put.BindAll(run_id, note->algorithm, note->msize, note->dropped, note->size_seconds,
                                         static_cast<int64_t>(note->matrices))
                                 .Run());
  }
  TOPOTUNE_RETURN_IF_ERROR(txn.Commit());
  return true;
}

StatusOr<std::vector<SampleSet>> Store::Samples(const TuningKey& key) {
  std::lock_guard lock(impl_->mu);
  using At = std::pair<double, std::string>;  // (msize, algorithm): the sets' order.
  std::map<At, SampleSet> sets;
  auto set_at = [&](const At& at) -> SampleSet& {
    SampleSet& set = sets[at];
    if (set.algorithm.empty()) set = {at.second, at.first, {}};
    return set;
  };
  // The notes first: the matrices each run's calls cycled through.
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement notes, impl_->conn->Prepare(R"sql(
      SELECT n.algorithm, n.msize, n.dropped, n.run_id, n.matrices
      FROM bench_runs AS r JOIN sample_notes AS n ON n.run_id = r.id
      WHERE r.topology_version = ? AND r.collective = ? AND r.nprocs = ? AND r.ranks_per_node = ? AND r.pattern = ?
      ORDER BY n.msize, n.algorithm, n.run_id)sql"));
  notes.BindAll(key.topology_version, key.collective, key.nprocs, key.ranks_per_node, key.pattern);
  std::map<std::pair<At, int64_t>, int64_t> matrices;  // ((msize, algorithm), run) -> matrices, where > 1.
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, notes.Step());
    if (!row) break;
    const At at{notes.ColumnDouble(1), notes.ColumnText(0)};
    if (const std::string dropped = notes.ColumnText(2); !dropped.empty()) {
      SampleSet& set = set_at(at);
      set.dropped += (set.dropped.empty() ? "" : "; ") + dropped;
    }
    if (const int64_t k = notes.ColumnInt64(4); k > 1) matrices[{at, notes.ColumnInt64(3)}] = k;
  }
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      SELECT s.algorithm, s.msize, s.seconds, s.run_id
      FROM bench_runs AS r JOIN samples AS s ON s.run_id = r.id
      WHERE r.topology_version = ? AND r.collective = ? AND r.nprocs = ? AND r.ranks_per_node = ? AND r.pattern = ?
      ORDER BY s.msize, s.algorithm, s.id)sql"));
  st.BindAll(key.topology_version, key.collective, key.nprocs, key.ranks_per_node, key.pattern);
  std::map<std::pair<At, int64_t>, int64_t> places;  // Calls so far per (size, algorithm) and run.
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    const At at{st.ColumnDouble(1), st.ColumnText(0)};
    SampleSet& set = set_at(at);
    const int64_t run = st.ColumnInt64(3);
    const int64_t place = places[{at, run}]++;
    set.seconds.push_back(st.ColumnDouble(2));
    set.rounds.push_back((run << 32) | place);
    auto k = matrices.find({at, run});
    set.matrix.push_back(k == matrices.end() ? 0 : static_cast<int32_t>(place % k->second));
  }
  std::vector<SampleSet> out;
  out.reserve(sets.size());
  for (auto& [at, set] : sets) {
    // One matrix everywhere: nothing to tell apart.
    if (std::all_of(set.matrix.begin(), set.matrix.end(), [](int32_t m) { return m == 0; })) set.matrix.clear();
    out.push_back(std::move(set));
  }
  return out;
}

StatusOr<std::vector<double>> Store::MeasuredSizes(int64_t run_id) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      SELECT msize FROM samples WHERE run_id = ?1 UNION SELECT msize FROM sample_notes WHERE run_id = ?1
      ORDER BY 1)sql"));
  st.Bind(1, run_id);
  std::vector<double> out;
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(st.ColumnDouble(0));
  }
  return out;
}

StatusOr<std::vector<std::pair<double, double>>> Store::SizeSeconds(const TuningKey& key) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      SELECT msize, sum(seconds) FROM (
        SELECT n.msize AS msize, max(n.size_seconds) AS seconds
        FROM bench_runs AS r JOIN sample_notes AS n ON n.run_id = r.id
        WHERE r.topology_version = ? AND r.collective = ? AND r.nprocs = ? AND r.ranks_per_node = ? AND r.pattern = ?
        GROUP BY n.run_id, n.msize)
      GROUP BY msize ORDER BY msize)sql"));
  st.BindAll(key.topology_version, key.collective, key.nprocs, key.ranks_per_node, key.pattern);
  std::vector<std::pair<double, double>> out;
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.emplace_back(st.ColumnDouble(0), st.ColumnDouble(1));
  }
  return out;
}

StatusOr<std::vector<BenchRun>> Store::ListRuns(const RunFilter& filter) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      SELECT r.id, r.topology_version, r.collective, r.nprocs, r.ranks_per_node, r.state,
             r.created_at, r.started_at, r.finished_at, r.message,
             (SELECT count(*) FROM samples AS s WHERE s.run_id = r.id), r.pattern
      FROM bench_runs AS r
      WHERE (?1 IS NULL OR r.topology_version = ?1) AND (?2 IS NULL OR r.state = ?2)
      ORDER BY r.id)sql"));
  st.Bind(1, filter.topology_version);
  if (filter.state) {
    st.Bind(2, RunStateName(*filter.state));
  } else {
    st.Bind(2, nullptr);
  }
  std::vector<BenchRun> out;
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    BenchRun r;
    r.id = st.ColumnInt64(0);
    r.key = {st.ColumnInt64(1), st.ColumnText(2), static_cast<int>(st.ColumnInt64(3)),
             static_cast<int>(st.ColumnInt64(4)), st.ColumnText(11)};
    std::optional<RunState> state = ParseRunState(st.ColumnText(5));
    if (!state) return impl_->Corrupt("bench run " + std::to_string(r.id) + " has state '" + st.ColumnText(5) + "'");
    r.state = *state;
    r.created_at = FromMs(st.ColumnInt64(6));
    if (auto t = st.ColumnOptionalInt64(7)) r.started_at = FromMs(*t);
    if (auto t = st.ColumnOptionalInt64(8)) r.finished_at = FromMs(*t);
    r.message = st.ColumnText(9);
    r.num_samples = st.ColumnInt64(10);
    out.push_back(std::move(r));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Decisions

StatusOr<int64_t> Store::PutDecision(const TuningKey& key, std::span<const DecisionRange> table,
                                     std::span<const SizeChoice> choices) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_RETURN_IF_ERROR(impl_->CheckKey(key));
  if (table.empty()) return impl_->Invalid("the decision table is empty");
  for (size_t i = 0; i < table.size(); ++i) {
    const DecisionRange& r = table[i];
    std::string where = "decision table range " + std::to_string(i);
    if (r.algorithm.empty()) return impl_->Invalid(where + " has no algorithm");
    double expected_min = i == 0 ? 0 : table[i - 1].max_msize;
    if (r.min_msize != expected_min) {
      return impl_->Invalid(where + " starts at " + Num(r.min_msize) + ", not at " + Num(expected_min) +
                            (i == 0 ? "" : " where the previous range ends"));
    }
    if (!(r.max_msize > r.min_msize)) {
      return impl_->Invalid(where + " is empty or reversed: [" + Num(r.min_msize) + ", " + Num(r.max_msize) + ")");
    }
    if (i + 1 == table.size() && !std::isinf(r.max_msize)) {
      return impl_->Invalid("the last decision table range ends at " + Num(r.max_msize) + ", not at infinity");
    }
  }
  for (size_t i = 0; i < choices.size(); ++i) {
    const SizeChoice& c = choices[i];
    for (double v : {c.msize, c.chosen_median, c.fastest_median, c.regret, c.chosen_mean, c.ratio.lo, c.ratio.hi}) {
      if (!std::isfinite(v)) return impl_->Invalid("choice " + std::to_string(i) + " has a value that is not finite");
    }
  }

  Connection& conn = *impl_->conn;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(conn));
  TOPOTUNE_RETURN_IF_ERROR(impl_->CheckTopology(key.topology_version));
  // The old crossovers go with it (ON DELETE CASCADE).
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement del, conn.Prepare(R"sql(
      DELETE FROM decisions
      WHERE topology_version = ? AND collective = ? AND nprocs = ? AND ranks_per_node = ? AND pattern = ?)sql"));
  TOPOTUNE_RETURN_IF_ERROR(
      del.BindAll(key.topology_version, key.collective, key.nprocs, key.ranks_per_node, key.pattern).Run());
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement insert, conn.Prepare(R"sql(
      INSERT INTO decisions (topology_version, collective, nprocs, ranks_per_node, pattern, table_json, choices_json,
                             created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?))sql"));
  TOPOTUNE_RETURN_IF_ERROR(insert
                               .BindAll(key.topology_version, key.collective, key.nprocs, key.ranks_per_node,
                                        key.pattern, TableToJson(table), ChoicesToJson(choices), impl_->NowMs())
                               .Run());
  const int64_t id = conn.LastInsertRowid();
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement cross,
      conn.Prepare("INSERT INTO crossovers (decision_id, msize, from_algorithm, to_algorithm) VALUES (?, ?, ?, ?)"));
  for (size_t i = 1; i < table.size(); ++i) {
    if (table[i].algorithm == table[i - 1].algorithm) continue;  // Not a crossover.
    TOPOTUNE_RETURN_IF_ERROR(
        cross.Reset().BindAll(id, table[i].min_msize, table[i - 1].algorithm, table[i].algorithm).Run());
  }
  TOPOTUNE_RETURN_IF_ERROR(txn.Commit());
  return id;
}

StatusOr<std::optional<StoredDecision>> Store::GetDecision(const TuningKey& key) {
  std::lock_guard lock(impl_->mu);
  Connection& conn = *impl_->conn;
  // One snapshot for the decision and its crossovers.
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(conn, Transaction::Mode::kDeferred));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, conn.Prepare(R"sql(
      SELECT id, topology_version, collective, nprocs, ranks_per_node, table_json, choices_json, created_at, pattern
      FROM decisions
      WHERE topology_version = ? AND collective = ? AND nprocs = ? AND ranks_per_node = ? AND pattern = ?)sql"));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      bool found, st.BindAll(key.topology_version, key.collective, key.nprocs, key.ranks_per_node, key.pattern).Step());
  if (!found) return std::optional<StoredDecision>();
  TOPOTUNE_DB_ASSIGN_OR_RETURN(StoredDecision d, impl_->ReadDecision(st));
  return std::optional<StoredDecision>(std::move(d));
}

StatusOr<std::vector<StoredDecision>> Store::ListDecisions(int64_t topology_version) {
  std::lock_guard lock(impl_->mu);
  Connection& conn = *impl_->conn;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(conn, Transaction::Mode::kDeferred));
  // Alltoallv's classes in kPatternClasses order.
  static const std::string by_pattern = [] {
    std::string out = "CASE pattern";
    for (size_t i = 0; i < kPatternClasses.size(); ++i) out += fmt::format(" WHEN '{}' THEN {}", kPatternClasses[i], i);
    return out + fmt::format(" ELSE {} END", kPatternClasses.size());
  }();
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, conn.Prepare(fmt::format(R"sql(
      SELECT id, topology_version, collective, nprocs, ranks_per_node, table_json, choices_json, created_at, pattern
      FROM decisions WHERE topology_version = ?
      ORDER BY collective, nprocs, ranks_per_node, {})sql",
                                                                      by_pattern)));
  st.BindAll(topology_version);
  std::vector<StoredDecision> out;
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    TOPOTUNE_DB_ASSIGN_OR_RETURN(StoredDecision d, impl_->ReadDecision(st));
    out.push_back(std::move(d));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Plan cache

namespace {
Status CheckPlanKey(const PlanKey& key, const std::string& path) {
  if (key.placement_hash.empty() || key.collective.empty() || key.algorithm.empty()) {
    return Status::InvalidArgument(path + ": a plan key needs a placement hash, a collective and an algorithm");
  }
  return Status::Ok();
}
}  // namespace

Status Store::PutPlan(const PlanKey& key, std::string_view payload) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_RETURN_IF_ERROR(CheckPlanKey(key, impl_->path()));
  TOPOTUNE_RETURN_IF_ERROR(impl_->CheckTopology(key.topology_version));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      INSERT INTO plan_cache
        (topology_version, placement_hash, collective, algorithm, payload, size, created_at, last_used)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
      ON CONFLICT (topology_version, placement_hash, collective, algorithm) DO UPDATE SET
        payload = excluded.payload, size = excluded.size,
        created_at = excluded.created_at, last_used = excluded.last_used)sql"));
  return st
      .BindAll(key.topology_version, key.placement_hash, key.collective, key.algorithm, Blob{payload},
               static_cast<int64_t>(payload.size()), impl_->NowMs())
      .Run();
}

StatusOr<std::optional<std::string>> Store::GetPlan(const PlanKey& key) {
  std::lock_guard lock(impl_->mu);
  // One statement reads the payload and marks the use, atomically. (It is a
  // write, so under a long write by another process it waits for the lock.)
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      UPDATE plan_cache SET last_used = ?
      WHERE topology_version = ? AND placement_hash = ? AND collective = ? AND algorithm = ?
      RETURNING payload)sql"));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      bool found,
      st.BindAll(impl_->NowMs(), key.topology_version, key.placement_hash, key.collective, key.algorithm).Step());
  if (!found) return std::optional<std::string>();
  std::string payload = st.ColumnBlob(0);
  TOPOTUNE_RETURN_IF_ERROR(st.Run());  // Finish the statement, so that its implicit transaction commits.
  return std::optional<std::string>(std::move(payload));
}

StatusOr<int64_t> Store::DeletePlansBefore(int64_t topology_version) {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare("DELETE FROM plan_cache WHERE topology_version < ?"));
  TOPOTUNE_RETURN_IF_ERROR(st.BindAll(topology_version).Run());
  return impl_->conn->Changes();
}

StatusOr<int64_t> Store::PlanCacheBytes() {
  std::lock_guard lock(impl_->mu);
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare("SELECT coalesce(sum(size), 0) FROM plan_cache"));
  TOPOTUNE_RETURN_IF_ERROR(st.Step().status());
  return st.ColumnInt64(0);
}

StatusOr<int64_t> Store::EvictPlansLru(int64_t max_bytes) {
  std::lock_guard lock(impl_->mu);
  if (max_bytes < 0) return impl_->Invalid("the plan cache limit must not be negative");
  // Evicting the oldest plans until the rest fits keeps exactly the plans
  // whose own size plus that of every more recently used plan fits. One
  // statement, so one transaction; ties in last_used keep the newer row.
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare(R"sql(
      DELETE FROM plan_cache WHERE rowid IN (
        SELECT id FROM (
          SELECT rowid AS id,
                 sum(size) OVER (ORDER BY last_used DESC, rowid DESC ROWS UNBOUNDED PRECEDING) AS kept_bytes
          FROM plan_cache)
        WHERE kept_bytes > ?))sql"));
  TOPOTUNE_RETURN_IF_ERROR(st.BindAll(max_bytes).Run());
  return impl_->conn->Changes();
}

// ---------------------------------------------------------------------------
// Job reports and maintenance

StatusOr<int64_t> Store::AddJobReport(std::string_view job_id, std::string_view report_json,
                                      std::span<const DemandEntry> demand, std::span<const LearnedEntry> learned) {
  std::lock_guard lock(impl_->mu);
  if (job_id.empty()) return impl_->Invalid("job report without a job id");
  TOPOTUNE_DB_ASSIGN_OR_RETURN(json report,
                               ParseJson(report_json, impl_->path() + ": report of job '" + std::string(job_id) + "'"));
  for (size_t i = 0; i < demand.size(); ++i) {
    const DemandEntry& d = demand[i];
    const std::string where = fmt::format("demand entry {} of job '{}'", i, job_id);
    auto finite = [](double v) { return std::isfinite(v) && v >= 0; };
    if (d.collective.empty() || d.source.empty()) return impl_->Invalid(where + " has no collective or source");
    if (d.nprocs < 1 || d.ranks_per_node < 1)
      return impl_->Invalid(
          fmt::format("{} has layout {} x {}; both must be at least 1", where, d.nprocs, d.ranks_per_node));
    if (d.size_bucket < 0 || d.hosts < 0 || d.switches < 0 || d.calls < 0 || d.bytes < 0 || !finite(d.seconds) ||
        !finite(d.distance) || !finite(d.msize_calls) || d.topology_version < 0)
      return impl_->Invalid(where + " has a negative or non-finite count, size or time");
  }
  std::vector<std::string> candidates;
  for (size_t i = 0; i < learned.size(); ++i) {
    const LearnedEntry& l = learned[i];
    const std::string where = fmt::format("adapted bucket {} of job '{}'", i, job_id);
    if (l.collective.empty() || l.nprocs < 1 || l.ranks_per_node < 1 || l.size_bucket < 0 || l.calls < 0 ||
        l.exploring_calls < 0 || !std::isfinite(l.ratio) || !std::isfinite(l.extra_seconds) || l.topology_version < 0 ||
        (l.settled && l.choice.empty()))
      return impl_->Invalid(where +
                            " has no collective, a layout below 1, a negative count or a settled bucket "
                            "without its choice");
    TOPOTUNE_DB_ASSIGN_OR_RETURN(json c, ParseJson(l.candidates_json, impl_->path() + ": " + where));
    if (!c.is_array()) return impl_->Invalid(where + ": candidates are not a JSON array");
    candidates.push_back(c.dump());
  }
  Connection& conn = *impl_->conn;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(conn));
  const int64_t now = impl_->NowMs();
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st,
                               conn.Prepare("INSERT INTO job_reports (job_id, received_at, payload) VALUES (?, ?, ?)"));
  TOPOTUNE_RETURN_IF_ERROR(st.BindAll(job_id, now, report.dump()).Run());
  const int64_t id = conn.LastInsertRowid();
  if (!demand.empty()) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement put, conn.Prepare(R"sql(
        INSERT INTO demand (report_id, received_at, topology_version, collective, nprocs, ranks_per_node,
                            size_bucket, pattern, source, distance, hosts, switches, calls, bytes, seconds,
                            msize_calls)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql"));
    for (const DemandEntry& d : demand)
      TOPOTUNE_RETURN_IF_ERROR(put.Reset()
                                   .BindAll(id, now, d.topology_version, d.collective, d.nprocs, d.ranks_per_node,
                                            d.size_bucket, d.pattern, d.source, d.distance, d.hosts, d.switches,
                                            d.calls, d.bytes, d.seconds, d.msize_calls)
                                   .Run());
  }
  if (!learned.empty()) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement put, conn.Prepare(R"sql(
        INSERT INTO learned (report_id, received_at, topology_version, collective, nprocs, ranks_per_node, pattern,
                             size_bucket, settled, choice, ratio, calls, exploring_calls, extra_seconds,
                             candidates_json)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql"));
    for (size_t i = 0; i < learned.size(); ++i) {
      const LearnedEntry& l = learned[i];
      TOPOTUNE_RETURN_IF_ERROR(put.Reset()
                                   .BindAll(id, now, l.topology_version, l.collective, l.nprocs, l.ranks_per_node,
                                            l.pattern, l.size_bucket, l.settled ? 1 : 0, l.choice, l.ratio, l.calls,
                                            l.exploring_calls, l.extra_seconds, candidates[i])
                                   .Run());
    }
  }
  TOPOTUNE_RETURN_IF_ERROR(txn.Commit());
  return id;
}

StatusOr<std::vector<LearnedChoiceRow>> Store::Learned(int64_t topology_version) {
  std::lock_guard lock(impl_->mu);
  Connection& conn = *impl_->conn;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, conn.Prepare(R"sql(
      SELECT collective, nprocs, ranks_per_node, pattern, size_bucket, choice, ratio
      FROM learned WHERE topology_version = ? AND settled = 1
      ORDER BY collective, nprocs, ranks_per_node, pattern, size_bucket, received_at, report_id, rowid)sql"));
  st.BindAll(topology_version);
  std::vector<LearnedChoiceRow> out;
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    LearnedChoiceRow r;
    r.collective = st.ColumnText(0);
    r.nprocs = static_cast<int>(st.ColumnInt64(1));
    r.ranks_per_node = static_cast<int>(st.ColumnInt64(2));
    r.pattern = st.ColumnText(3);
    r.size_bucket = st.ColumnInt64(4);
    r.algorithm = st.ColumnText(5);
    r.ratio = st.ColumnDouble(6);
    const bool same = !out.empty() && out.back().collective == r.collective && out.back().nprocs == r.nprocs &&
                      out.back().ranks_per_node == r.ranks_per_node && out.back().pattern == r.pattern &&
                      out.back().size_bucket == r.size_bucket;
    // Later rows are later jobs: the latest choice stands, and counts them all.
    r.jobs = same ? out.back().jobs + 1 : 1;
    if (same)
      out.back() = std::move(r);
    else
      out.push_back(std::move(r));
  }
  return out;
}

StatusOr<DemandTotals> Store::Demand(std::chrono::milliseconds window, std::string_view collective) {
  std::lock_guard lock(impl_->mu);
  Connection& conn = *impl_->conn;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(conn, Transaction::Mode::kDeferred));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, conn.Prepare(R"sql(
      SELECT collective, nprocs, ranks_per_node, size_bucket, pattern, sum(calls), count(DISTINCT report_id),
             sum(seconds), total(seconds) FILTER (WHERE source = 'tuned'),
             total(seconds) FILTER (WHERE source = 'nearest'), total(seconds) FILTER (WHERE source = 'default'),
             total(seconds) FILTER (WHERE source = 'forced'), sum(msize_calls), max(hosts), max(switches)
      FROM demand WHERE received_at >= ?1 AND (?2 = '' OR collective = ?2)
      GROUP BY collective, nprocs, ranks_per_node, size_bucket, pattern
      ORDER BY sum(seconds) DESC, collective, nprocs, ranks_per_node, size_bucket, pattern)sql"));
  const int64_t since = impl_->NowMs() - window.count();
  const std::string only(collective);  // Bound as text, never NULL.
  st.BindAll(since, only);
  DemandTotals out;
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    DemandCellTotals c;
    c.collective = st.ColumnText(0);
    c.nprocs = static_cast<int>(st.ColumnInt64(1));
    c.ranks_per_node = static_cast<int>(st.ColumnInt64(2));
    c.size_bucket = st.ColumnInt64(3);
    c.pattern = st.ColumnText(4);
    c.calls = st.ColumnInt64(5);
    c.jobs = st.ColumnInt64(6);
    c.seconds = st.ColumnDouble(7);
    c.tuned_seconds = st.ColumnDouble(8);
    c.nearest_seconds = st.ColumnDouble(9);
    c.default_seconds = st.ColumnDouble(10);
    c.forced_seconds = st.ColumnDouble(11);
    c.msize_calls = st.ColumnDouble(12);
    c.hosts = static_cast<int>(st.ColumnInt64(13));
    c.switches = static_cast<int>(st.ColumnInt64(14));
    out.cells.push_back(std::move(c));
  }
  TOPOTUNE_DB_ASSIGN_OR_RETURN(
      Statement jobs,
      conn.Prepare(
          "SELECT count(DISTINCT report_id) FROM demand WHERE received_at >= ?1 AND (?2 = '' OR collective = ?2)"));
  TOPOTUNE_DB_ASSIGN_OR_RETURN(bool any, jobs.BindAll(since, only).Step());
  if (any) out.jobs = jobs.ColumnInt64(0);
  return out;
}

Status Store::IntegrityCheck() {
  std::lock_guard lock(impl_->mu);
  constexpr int kMaxFindings = 10;
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement st, impl_->conn->Prepare("PRAGMA integrity_check"));
  std::vector<std::string> findings;
  for (;;) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    if (findings.size() < kMaxFindings) findings.push_back(st.ColumnText(0));
  }
  if (findings != std::vector<std::string>{"ok"}) {
    std::string msg = impl_->path() + ": integrity check failed:";
    for (const std::string& f : findings) msg += " " + f + ";";
    return Status::IoError(msg);
  }
  TOPOTUNE_DB_ASSIGN_OR_RETURN(Statement fk, impl_->conn->Prepare("PRAGMA foreign_key_check"));
  std::string msg;
  for (int n = 0; n < kMaxFindings; ++n) {
    TOPOTUNE_DB_ASSIGN_OR_RETURN(bool row, fk.Step());
    if (!row) break;
    // Columns: table, rowid, referenced table, foreign key index.
    msg += " row " + fk.ColumnText(1) + " of " + fk.ColumnText(0) + " refers to a missing row of " + fk.ColumnText(2) +
           ";";
  }
  if (!msg.empty()) return Status::IoError(impl_->path() + ": foreign key check failed:" + msg);
  return Status::Ok();
}

}  // namespace topotune::db
