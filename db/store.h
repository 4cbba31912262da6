// Store: the SQLite database of topotuned. One file (the default lives under
// /var/lib/topotune; tests use a temporary file) holds the versioned
// topologies, registered agents, benchmark runs and their samples, decision
// tables with their crossovers, the cache of compiled plans, and job reports.
//
// Opening a file migrates it to the newest schema this binary knows (see
// db/migrations.h), or refuses a file written by a newer topotune. The
// connection runs in WAL mode with synchronous=NORMAL, foreign keys on and a
// busy timeout, so that the daemon, the `topotune` CLI and tools may share the
// file. Every write of more than one row is one transaction; benchmark
// samples are committed batch by batch as they arrive, so a crash loses at
// most the batch in flight.
//
// Errors are Status values whose message starts with the database path and
// carries SQLite's message; nothing throws across this API.
//
// Thread-safety: the class is thread-safe. A Store owns one connection and a
// mutex; every method holds the mutex for its whole duration, so calls from
// many threads are serialised (SQLite connections must not be used by two
// threads at once, and one connection keeps each method's transaction
// simple). Concurrency between processes comes from SQLite's own locking: WAL
// lets readers run beside one writer, and writers wait up to busy_timeout_ms.
// A Store is movable, not copyable; a moved-from Store may only be destroyed
// or assigned to.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/crossover.h"
#include "tuner/status.h"
#include "tuner/topology.h"

namespace topotune::db {

// Wall-clock times; stored as unix time in milliseconds.
using TimePoint = std::chrono::system_clock::time_point;

struct StoreOptions {
  // How long a statement waits for another connection's lock before it fails
  // with "database is locked".
  int busy_timeout_ms = 5000;
  // Migrate no further than this schema version; -1 means the latest. For
  // tests and tools that need an old schema: a database already past it (but
  // not newer than this binary) is left as it is, and methods whose tables do
  // not exist yet fail.
  int max_schema_version = -1;
  // The clock for every stored time; empty means system_clock::now. Tests
  // pass a fake one to order plan-cache uses deterministically.
  std::function<TimePoint()> clock;
};

// A topology as stored: `topology` is parsed back from `yaml`, which is
// DumpTopology of what was stored (nodes switches first), and its source() is
// `source`.
struct StoredTopology {
  int64_t version = 0;
  std::string content_hash;  // FNV-1a 64 of yaml, 16 hex digits.
  std::string yaml;
  std::string source;  // File path or "discovery".
  TimePoint created_at;
  Topology topology;
};

struct AgentInfo {
  std::string hostname;
  std::string facts_json;   // A JSON object, as registered (re-serialised compactly).
  TimePoint registered_at;  // The latest registration.
  TimePoint last_heartbeat;
};

// What benchmark runs, samples and decisions are about: one collective on one
// topology version with one communicator layout.
struct TuningKey {
  int64_t topology_version = 0;
  std::string collective;
  int nprocs = 0;
  int ranks_per_node = 0;
  // Alltoallv: the size pattern class measured (one of kPatternClasses,
  // tuner/crossover.h); "" for the other collectives.
  std::string pattern = {};
};

enum class RunState { kQueued, kRunning, kDone, kFailed, kTimeout };
// "queued", "running", "done", "failed", "timeout": the stored names.
std::string_view RunStateName(RunState state);
std::optional<RunState> ParseRunState(std::string_view name);

struct BenchRun {
  int64_t id = 0;
  TuningKey key;
  RunState state = RunState::kQueued;
  TimePoint created_at;
  std::optional<TimePoint> started_at;   // Unset while queued.
  std::optional<TimePoint> finished_at;  // Set by FinishRun.
  std::string message;
  int64_t num_samples = 0;
};

// Unset fields match every run.
struct RunFilter {
  std::optional<int64_t> topology_version = std::nullopt;
  std::optional<RunState> state = std::nullopt;
};

// One measured time of one call.
struct Sample {
  std::string algorithm;
  double msize = 0;    // Bytes, as the benchmark defines it (per block for alltoall).
  double seconds = 0;  // > 0.
};

// What one (algorithm, size) of a run says beyond its times.
struct SampleNote {
  std::string algorithm;
  double msize = 0;
  std::string dropped;      // Why it left the size's rounds early; empty: it ran every round.
  double size_seconds = 0;  // Wall time of the size in the run (every algorithm), >= 0.
  int matrices = 1;         // Size matrices the rounds cycled through (round r on r mod this), >= 1.
};

// Where a decision table switches algorithm: ranges [.., msize) use
// from_algorithm and [msize, ..) use to_algorithm.
struct Crossover {
  double msize = 0;
  std::string from_algorithm;
  std::string to_algorithm;
};

struct StoredDecision {
  int64_t id = 0;
  TuningKey key;
  std::vector<DecisionRange> table;
  std::vector<SizeChoice> choices;
  std::vector<Crossover> crossovers;  // Derived from `table`, by size.
  TimePoint created_at;
};

struct PlanKey {
  int64_t topology_version = 0;
  std::string placement_hash;  // Opaque to the store, e.g. Fnv1a64Hex of the placement.
  std::string collective;
  std::string algorithm;
};

// The calls of one demand cell on one decision source in one job report
// (tuner/demand.h).
struct DemandEntry {
  int64_t topology_version = 0;  // Of the job's plan; 0 without one.
  std::string collective;
  int nprocs = 0;
  int ranks_per_node = 0;
  int64_t size_bucket = 0;
  std::string pattern;  // Alltoallv: the class; "" for the other collectives.
  std::string source;   // "tuned", "nearest", "default" or "forced".
  double distance = 0;  // "nearest": to the layout tuned.
  int hosts = 0;        // Spanned by the communicator; 0: unknown.
  int switches = 0;
  int64_t calls = 0;
  int64_t bytes = 0;
  double seconds = 0;
  double msize_calls = 0;  // Sum of message size x calls.
};

// A demand cell over a window: the entries of one (collective, nprocs,
// ranks_per_node, size_bucket, pattern) summed.
struct DemandCellTotals {
  std::string collective;
  int nprocs = 0;
  int ranks_per_node = 0;
  int64_t size_bucket = 0;
  std::string pattern;
  int64_t calls = 0;
  int64_t jobs = 0;  // Distinct reports.
  double seconds = 0;
  double tuned_seconds = 0, nearest_seconds = 0, default_seconds = 0, forced_seconds = 0;
  double msize_calls = 0;
  int hosts = 0, switches = 0;  // The most of any entry.
};

// One adapted bucket of a job report (the learned table).
struct LearnedEntry {
  int64_t topology_version = 0;
  std::string collective;
  int nprocs = 0;
  int ranks_per_node = 0;
  std::string pattern;
  int64_t size_bucket = 0;
  bool settled = false;
  std::string choice;  // When settled.
  double ratio = 1;
  int64_t calls = 0;
  int64_t exploring_calls = 0;
  double extra_seconds = 0;
  std::string candidates_json = "[]";  // A JSON array.
};

// The learned choice of one bucket of a layout: the latest settled one.
struct LearnedChoiceRow {
  std::string collective;
  int nprocs = 0;
  int ranks_per_node = 0;
  std::string pattern;
  int64_t size_bucket = 0;
  std::string algorithm;
  int jobs = 0;  // Reports that settled the bucket.
  double ratio = 1;
};

struct DemandTotals {
  std::vector<DemandCellTotals> cells;  // By seconds, most first.
  int64_t jobs = 0;                     // Distinct reports with any demand.
};

class Store {
 public:
  // Opens or creates the database at `path`, sets the connection up (WAL,
  // synchronous=NORMAL, foreign keys, busy timeout) and migrates it. Fails on
  // a database newer than this binary ("<path>: database schema version 7 is
  // newer than this topotune (knows up to 3); upgrade topotune or use another
  // database"), on a file that is not a topotune database, and when the file
  // cannot be opened or put in WAL mode. ":memory:" opens a private
  // in-memory database (no WAL, gone when the Store is destroyed).
  static StatusOr<Store> Open(const std::string& path, const StoreOptions& options = {});

  Store(Store&& other) noexcept;
  Store& operator=(Store&& other) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  const std::string& path() const;
  // The schema version of the database as opened (after migrating).
  int SchemaVersion() const;
  // The newest schema version this binary knows.
  static int LatestSchemaVersion();

  // --- Topologies -----------------------------------------------------------
  // Stores DumpTopology(topology) with `source`, returning its version: the
  // latest version when that one has the same content, else a new version
  // (so going back to an older topology makes a new version too).
  StatusOr<int64_t> PutTopology(const Topology& topology, std::string_view source);
  // The newest topology; nullopt when none is stored.
  StatusOr<std::optional<StoredTopology>> LatestTopology();
  // NotFound when `version` does not exist.
  StatusOr<StoredTopology> GetTopology(int64_t version);

  // --- Agents ---------------------------------------------------------------
  // Registers `hostname` with its facts (a JSON object), or re-registers it
  // with new facts; either way its registration and heartbeat times are now.
  Status RegisterAgent(std::string_view hostname, std::string_view facts_json);
  // NotFound when the agent never registered.
  Status Heartbeat(std::string_view hostname);
  // By hostname.
  StatusOr<std::vector<AgentInfo>> ListAgents();

  // --- Benchmarks -----------------------------------------------------------
  // Creates a run in state `initial` (kQueued, or kRunning which also sets
  // started_at) and returns its id. NotFound for an unknown topology version.
  StatusOr<int64_t> StartRun(const TuningKey& key, RunState initial = RunState::kRunning);
  // A queued run starts running. FailedPrecondition when it is not queued.
  Status MarkRunning(int64_t run_id);
  // Ends a queued or running run with kDone, kFailed or kTimeout and a
  // message. FailedPrecondition when it already ended.
  Status FinishRun(int64_t run_id, RunState state, std::string_view message);
  // Appends one batch of samples to a run in one transaction: when this
  // returns ok the whole batch is on disk (up to the durability of
  // synchronous=NORMAL), otherwise none of it is. InvalidArgument (naming the
  // sample's index) for an empty algorithm or a time that is not positive
  // and finite. Samples are accepted in any state of the run, so that late
  // ones are kept.
  Status AddSamples(int64_t run_id, std::span<const Sample> batch);
  // AddSamples for a numbered batch (a ReportSamples message): the batch and
  // its sequence are committed together, and a batch whose (run, sequence)
  // is already stored is not stored again. Returns true when stored, false
  // for such a duplicate.
  // With `note`, its (algorithm, msize) note is stored with the batch (the
  // batch may then be empty: an algorithm dropped before its first call).
  StatusOr<bool> AddSampleBatch(int64_t run_id, int64_t sequence, std::span<const Sample> batch,
                                const std::optional<SampleNote>& note = std::nullopt);
  // Every sample of every run with `key`, grouped by (algorithm, msize) as
  // ChooseBySize wants them: sizes ascending, then algorithms by name; times
  // in the order they were recorded, each with its round (the run's id in
  // the high 32 bits, the call's place among the run's calls of that
  // algorithm and size in the low 32: interleaved runs time every algorithm
  // still in the race once per round, so the places are the rounds), and
  // SampleSet::dropped from the notes (reasons of several runs joined by
  // "; "); an algorithm dropped before its first call has a set without
  // times. SampleSet::matrix gives each call's size matrix (its place mod
  // the note's matrices) where a run's rounds cycled through several.
  StatusOr<std::vector<SampleSet>> Samples(const TuningKey& key);
  // Seconds of wall time spent per size over every run with `key` (the
  // notes' size_seconds, one per run and size), sizes ascending.
  StatusOr<std::vector<std::pair<double, double>>> SizeSeconds(const TuningKey& key);
  // The sizes a run reported anything for (a time or a note), ascending:
  // those it measured before it ended.
  StatusOr<std::vector<double>> MeasuredSizes(int64_t run_id);
  // Runs matching `filter`, oldest first, with their sample counts.
  StatusOr<std::vector<BenchRun>> ListRuns(const RunFilter& filter = {});

  // --- Decisions ------------------------------------------------------------
  // Stores the decision for `key` with its crossovers, replacing the previous
  // one of that key, in one transaction; returns the new id. InvalidArgument
  // unless `table` is non-empty, starts at 0 and its ranges are contiguous
  // (each min_msize is the previous max_msize) and ascending.
  StatusOr<int64_t> PutDecision(const TuningKey& key, std::span<const DecisionRange> table,
                                std::span<const SizeChoice> choices);
  // nullopt when `key` has no decision.
  StatusOr<std::optional<StoredDecision>> GetDecision(const TuningKey& key);
  // The decisions of one topology version, by collective, nprocs, ranks_per_node.
  StatusOr<std::vector<StoredDecision>> ListDecisions(int64_t topology_version);

  // --- Plan cache -----------------------------------------------------------
  // Inserts or replaces the plan of `key`; it counts as used now.
  Status PutPlan(const PlanKey& key, std::string_view payload);
  // The plan's payload, marking it used now; nullopt on a miss.
  StatusOr<std::optional<std::string>> GetPlan(const PlanKey& key);
  // Deletes the plans of topology versions older than `topology_version`;
  // returns how many.
  StatusOr<int64_t> DeletePlansBefore(int64_t topology_version);
  // Total payload bytes in the cache.
  StatusOr<int64_t> PlanCacheBytes();
  // Deletes least recently used plans until the payloads total at most
  // `max_bytes`; returns how many were deleted.
  StatusOr<int64_t> EvictPlansLru(int64_t max_bytes);

  // --- Job reports ----------------------------------------------------------
  // Stores a job's report (JSON) and its demand entries in one transaction
  // and returns its id. InvalidArgument (nothing stored) for an entry with
  // an empty collective or source, a layout below 1, or a count, size or
  // time that is negative or not finite.
  // With them, its adapted buckets (`learned`; InvalidArgument likewise for
  // an empty collective, a layout below 1, a negative count, a settled one
  // without a choice, or candidates that are not a JSON array).
  StatusOr<int64_t> AddJobReport(std::string_view job_id, std::string_view report_json,
                                 std::span<const DemandEntry> demand = {}, std::span<const LearnedEntry> learned = {});
  // The learned choice of every settled bucket of `topology_version`, by
  // collective, nprocs, ranks_per_node, pattern, size_bucket: the latest
  // report's (within one report, the bucket stored last: a job reports its
  // world communicator's buckets last).
  StatusOr<std::vector<LearnedChoiceRow>> Learned(int64_t topology_version);
  // The demand of the reports received within `window` before now (the
  // store's clock), per cell (only `collective`'s when not empty).
  StatusOr<DemandTotals> Demand(std::chrono::milliseconds window, std::string_view collective = {});

  // --- Maintenance ----------------------------------------------------------
  // PRAGMA integrity_check must answer "ok" and PRAGMA foreign_key_check
  // nothing; otherwise IoError with their first findings.
  Status IntegrityCheck();

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace topotune::db
