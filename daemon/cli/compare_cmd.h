// `topotune compare` (compare_cmd.cc): an honest side-by-side report of two
// labels measured by `topotune-bench --times` (typically Open MPI's own
// collective, `ompi:default`, against what libtopotune-mpi.so serves,
// `topotune:tuned`), point by point, with the statistics of tuner/stats.h.
//
// For every (collective, alltoallv pattern, ranks, message size) where both
// labels have samples, each side's every timed call (times_s; samples of one
// label at one point, e.g. from several files, are pooled) gives its mean,
// median and p95, and the speedup mean(baseline) / mean(candidate) gets its
// 95 % bootstrap interval (RatioOfMeans, seeded by ComparisonSeed(seed,
// collective + candidate label, msize), so a report is reproducible). The
// verdict of a point is, in this order:
//   same algorithm  the library's statistics (TOPOTUNE_STATS_FILE, --stats)
//                   say it ran only `native` there, Open MPI's own
//                   collective, which is also the baseline (or
//                   --same-algorithm says so for every point): the ratio is
//                   a noise check and is never called a speedup;
//   no difference   the interval reaches 1 (Compare(interval, margin)), or
//                   the permutation test of stats.h does not confirm the
//                   difference at the same level (a rare stall on one side);
//   speedup         the interval lies above 1 + margin;
//   slower          the interval lies below 1 - margin.
//
// Why means: an application pays the mean call, stalls (TCP retransmission
// timeouts) included; the median and p95 are printed beside it.
//
// Exit status: kExitOk; kExitFailure on bad input (a missing or unreadable
// file, a line that is not a topotune-bench sample, a compared sample
// without times_s, a label with no samples, no point where both sides were
// measured); kExitUsage for flag errors.
//
// Thread-safety: pure functions and no shared state.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/stats.h"
#include "tuner/status.h"

namespace topotune::cli {

// One line of `topotune-bench` output, as compare reads it.
struct BenchSample {
  std::string source;  // "FILE:LINE", for messages.
  std::string collective, algorithm, label;
  std::string pattern;  // alltoallv only; empty otherwise.
  int nprocs = 0;
  int64_t msize = 0;
  std::optional<double> bound_s;
  bool interleaved = false;  // Has order_seed: timed in rounds of random order (--interleave).
  bool has_times = false;    // times_s present (topotune-bench --times).
  std::vector<double> times_s;
};

// The samples of JSON Lines `text` (blank lines skipped); `source` names it
// in errors: "SOURCE:LINE: not JSON: ..." or "SOURCE:LINE: not a
// topotune-bench sample: ...".
StatusOr<std::vector<BenchSample>> ParseBenchSamples(std::string_view text, const std::string& source);

// What libtopotune-mpi.so wrote to TOPOTUNE_STATS_FILE at MPI_Finalize
// (bench_kernels/shim/runtime.cc): its plan and, per collective, algorithm
// run and message size, the calls (warm-up calls included) and fallbacks.
struct LibraryStats {
  std::string source;
  std::string plan_status;  // "ok" or "none".
  std::string plan_reason;  // Why there is no plan.
  std::string plan_id;
  int64_t topology_version = 0;
  int nprocs = 0;  // The job's ranks; 0 when not given.
  struct Entry {
    std::string collective, algorithm;
    int64_t msize = 0;  // As the library computes it (alltoallv: mean off-diagonal block).
    int64_t calls = 0, fallbacks = 0;
  };
  std::vector<Entry> entries;
};
StatusOr<LibraryStats> ParseLibraryStats(std::string_view text, const std::string& source);

struct CompareOptions {
  std::string baseline = "ompi:default";
  std::string candidate = "topotune:tuned";
  double margin = 0;  // Relative: 0.02 ignores differences under 2 %.
  uint64_t seed = 1;
  bool same_algorithm = false;  // Every point is an A/A check.
};

enum class Verdict { kSameAlgorithm, kNoDifference, kSpeedup, kSlower };
// "same algorithm", "no difference", "speedup", "slower".
std::string_view VerdictName(Verdict v);

struct CompareSide {
  std::string label;
  TimeSummary summary;                      // Over every pooled call.
  std::optional<double> fraction_of_bound;  // bound_s / mean.
};

// One point of the report.
struct CompareRow {
  std::string collective, pattern;
  int nprocs = 0;
  int64_t msize = 0;
  std::optional<double> bound_s;
  CompareSide baseline, candidate;
  // What the library ran at this size, most calls first; empty when unknown
  // (no --stats, or no calls recorded near this size).
  std::vector<std::string> algorithms;
  bool same_algorithm = false;
  RatioInterval ratio;  // mean(baseline) / mean(candidate): above 1, the candidate is faster.
  // Compare(ratio, margin) read from the candidate's side: kFaster when the
  // candidate is faster (a speedup), kSlower when slower.
  Difference difference = Difference::kNoDifference;
  Verdict verdict = Verdict::kNoDifference;
  bool interleaved = false;  // Both sides timed in alternating rounds.
};

// The report's rows, ordered by collective and pattern (as they first
// appear) and message size. `stats` may be null. A library statistics entry
// counts for the row of its collective whose size is nearest (within a
// factor of 2): the library computes alltoallv's size over off-diagonal
// blocks, the benchmark over all of them. Errors (as Status messages): a
// label with no samples (naming the labels found), a compared sample without
// times_s or with a non-positive mean, no point where both sides have samples.
StatusOr<std::vector<CompareRow>> CompareSamples(const std::vector<BenchSample>& samples, const LibraryStats* stats,
                                                 const CompareOptions& options);

// The table: one line per row, then a footer saying how to read it. `stats`
// may be null.
std::string FormatCompareTable(const std::vector<CompareRow>& rows, const CompareOptions& options,
                               const LibraryStats* stats);
// One JSON object per row and line, keys in this order: collective, pattern
// (null unless alltoallv), nprocs, msize, bound_s, baseline and candidate
// {label, calls, mean_s, median_s, p95_s, fraction_of_bound}, algorithms,
// same_algorithm, ratio, ratio_lo, ratio_hi, verdict, differs (the interval
// excludes 1 beyond the margin, whatever the verdict: on a same-algorithm
// row, the A/A check failed), alternated.
std::string FormatCompareJson(const std::vector<CompareRow>& rows);

struct CompareArgs {
  CLI::App* command = nullptr;
  std::string description;  // The long text for the command's own --help.
  std::vector<std::string> files;
  std::string stats_file;  // Empty: none.
  std::string format = "table";
  CompareOptions options;
};

// Registers the subcommand on `app`; `args` receives the parsed flags and
// must outlive parsing.
void AddCompareCommand(CLI::App& app, CompareArgs* args);
// Runs it. Exit codes as above.
int RunCompare(const CompareArgs& args, std::ostream& out, std::ostream& err);

}  // namespace topotune::cli
