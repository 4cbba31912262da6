// The benchmark driver: times registered collective kernels over a sweep of
// message sizes on an MPI communicator and reports one Sample per
// (algorithm, size). `topotune-bench` is a thin command line over RunBench;
// `topotune-agent bench` calls RunBench in-process.
//
// Timing protocol (the one SimGrid's automatic selector uses): each timed
// iteration is MPI_Barrier, then MPI_Wtime around one call; the elapsed time
// is reduced with MAX over the ranks, so an iteration lasts as long as its
// slowest rank. Warm-up calls are not timed. Sizes are swept in the outer
// loop and algorithms in the inner one, so the algorithms of one size are
// measured side by side, close in time.
//
// With `interleave`, the algorithms of one size are measured in rounds: each
// round times every algorithm once, in a fresh random order (a Fisher-Yates
// shuffle drawn from order_seed, the size and the round number, the same on
// every rank), so that drift and noisy neighbours hit every algorithm alike.
// After `iterations` rounds, rank 0 applies the stopping rule of
// tuner/crossover.h (Settled: every algorithm's 95 % interval of its mean
// ratio to native lies wholly on one side of 1 - margin) at rounds growing
// by half each time, and more rounds run until it holds, until size_budget_s
// of wall time has passed since the size's first round, or until
// max_rounds; rank 0
// broadcasts the verdict. With race, the same checkpoints also race the
// candidates (tuner/crossover.h RaceExits: successive elimination): one
// that cannot beat native, or is slower than the leader, leaves the size's
// rounds, and the rounds that follow time only native, the A/A copy and the
// candidates still racing (each call still in a round's random order, so
// the calls of one round stay paired). A candidate also leaves when one of
// its calls (warm-up or round, max over ranks) takes longer than
// candidate_limit_s, or, before its rounds, when its fastest warm-up call
// is more than slow_warmup_factor times native's fastest and over
// kSlowWarmupFloorS: a size's large messages then cost native's time, not a
// slow small-message algorithm's, and the size goes on. Whatever leaves is
// reported with Sample::dropped, its times those of its rounds so far.
// A point (BenchOptions::round_started) is then one algorithm's call in a
// round or its warm-up. With aa_control, native is timed twice per round,
// the second copy labelled kAaControlLabel ("native:aa"): the A/A control.
// With alltoallv_agreement, an alltoallv kernel's timed call includes the
// agreement that libtopotune-mpi.so adds before it.
//
// Bytes moved per call, the numerator of bytes_per_s (payload between
// distinct ranks; a rank's copy to itself is not counted):
//   alltoall   N x (N-1) x msize
//   allgather  N x (N-1) x msize   (each block reaches N-1 other ranks)
//   alltoallv  sum of sizes[src][dst] over src != dst
// bytes_per_s = bytes per call / mean_s (the mean call, as applications pay).
//
// With a topology, bound_s is the physical lower bound of the call on the
// job's tree (bounds.h: AlltoallBound, AllgatherBound; for alltoallv, the
// same link argument applied to the actual size matrix: max over links and
// directions of the bytes crossing / link speed), and fraction_of_bound is
// bound_s / mean_s (1.0 = at the physical limit).
//
// Thread-safety: RunBench is collective over its communicator and must be
// called by every rank with equal options; it keeps no global state.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_kernels/driver/context.h"
#include "bench_kernels/kernel.h"

namespace topotune::bench {

// The algorithm name of the samples of BenchOptions::via_mpi_label: not a
// kernel of the registry but the MPI library's public entry point, and
// whatever intercepts it.
inline constexpr std::string_view kViaMpiAlgorithm = "mpi";

// A warm-up call faster than this (seconds) never drops its algorithm as
// too slow against native: calls that short cost a size little.
inline constexpr double kSlowWarmupFloorS = 0.05;
// A warm-up call over this (seconds) and over twice slow_warmup_factor
// times native's drops its algorithm at once, without its further warm-up
// calls (at large messages each costs seconds).
inline constexpr double kHopelessWarmupS = 1.0;

// Exit statuses of topotune-bench, also returned by RunBench.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // Bad topology file, verification mismatch, MPI error.
inline constexpr int kExitUsage = 2;    // Unknown algorithm or host, placement/size mismatch, bad option.

// Alltoallv size patterns (sizes[src][dst], mean SIZE per pair, the same
// matrix on every rank for a given seed):
//   uniform  SIZE everywhere;
//   skewed   one pair in eight (chosen by the seed) is heavy and carries 8
//            times as much as a light pair, scaled so that the mean is SIZE;
//   random   independent sizes drawn uniformly from [0, 2 x SIZE];
//   sparse   one pair in four (chosen by the seed, at least one pair) sends,
//            the others send nothing, scaled so that the mean is SIZE.
// uniform, skewed and sparse are the classes the tuner measures and the
// library tells apart (bench_kernels/alltoallv/pattern_class.h).
enum class Pattern { kUniform, kSkewed, kRandom, kSparse };
std::string_view PatternName(Pattern p);
bool ParsePattern(std::string_view name, Pattern* out);
// sizes[src * n + dst] in bytes; diagonal entries included (a rank's copy to
// itself follows the same rule).
std::vector<int64_t> AlltoallvSizes(Pattern pattern, int n, int64_t mean, uint64_t seed);

// 1, 2, 4, ... up to and including max_bytes (powers of two from min_bytes,
// with max_bytes appended when it is not itself on the sweep).
std::vector<int64_t> LogSweep(int64_t min_bytes, int64_t max_bytes);

struct BenchOptions {
  kernels::Collective collective = kernels::Collective::kAlltoall;
  std::vector<std::string> algorithms;  // Registry names; empty: every kernel of the collective.
  std::vector<int64_t> sizes;           // Bytes per block; empty: LogSweep(1, 4 MiB).
  int warmup = 2;
  int iterations = 10;                  // Timed iterations per (algorithm, size), when time_budget_s is 0.
  double time_budget_s = 0;             // > 0: time iterations until their sum reaches this (at least one).
  Pattern pattern = Pattern::kUniform;  // alltoallv only.
  uint64_t seed = 1;
  // interleave, alltoallv with a seeded pattern (skewed, random, sparse):
  // round r runs on the size matrix of seed + (r mod matrices), so that a
  // decision rests on the class's mean over several matrices, not on one.
  int matrices = 1;
  // Topology: the file's contents in topology_text (identical on every rank)
  // or, when that is empty, a path that rank 0 reads. Neither: no context,
  // and topology-aware kernels fall back (counted in Sample::fallbacks).
  std::string topology_file;
  std::string topology_text;
  PlacementSpec placement;
  bool verify = false;
  // topotune-bench-smpi only: every rank's buffers, and the host-combined
  // kernels' shared segments, in SMPI's folded shared memory (see
  // kFoldBuffersHelp); refused with verify.
  bool fold_buffers = false;
  std::string native_label;  // Non-empty: label of the `native` samples (e.g. "ompi:pairwise").
  // Non-empty: also time the public MPI function of the collective
  // (MPI_Alltoall, MPI_Alltoallv, MPI_Allgather; `native` calls PMPI_), as
  // algorithm kViaMpiAlgorithm with this label, first at every size. A PMPI
  // library loaded into the job (libtopotune-mpi.so) then runs what it
  // chooses, so that what a job gets from it is timed like a kernel.
  std::string via_mpi_label;
  bool interleave = false;        // Rounds in random order (see above); needs iterations >= 1.
  double size_budget_s = 0;       // interleave: wall time of a size's rounds beyond which none follow; 0: none.
  int max_rounds = 0;             // interleave: rounds per size at most; below iterations: iterations.
  double margin = 0.01;           // interleave: the stopping rule's decision margin.
  double alpha = 0.05;            // interleave: 1 - the confidence level of the stopping rule.
  bool aa_control = false;        // Also time native a second time, labelled "native:aa".
  bool race = false;              // interleave: successive elimination at the checkpoints (see above).
  double candidate_limit_s = 0;   // interleave, > 0: a call longer than this drops its algorithm from the size.
  double slow_warmup_factor = 0;  // interleave, > 0: a warm-up this many times native's drops its algorithm.
  bool tcp_counters = false;      // Count each algorithm's TCP timeouts and retransmissions (tcp_counters.h).
  // alltoallv: time every kernel but native with the agreement
  // libtopotune-mpi.so makes before a call that runs it (this rank's pattern
  // features, summed by one allreduce of six integers; shim/runtime.h), so
  // that tuning weighs what a job pays. Native calls defer theirs there.
  bool alltoallv_agreement = false;
  uint64_t order_seed = 1;  // interleave: seed of the rounds' orders.
  // Called on rank 0 before each (algorithm, size): done so far, the total,
  // and what runs next ("alltoall ring 64KiB"); after the last, with done == total.
  std::function<void(int done, int total, const std::string& what)> progress;
  // interleave: called on rank 0 as each algorithm's warm-up and each of
  // its calls in a round starts ("alltoall ring in round 12 at 256KiB");
  // progress is called only at the first round and at the stopping rule's
  // checkpoints. A watchdog's point.
  std::function<void(const std::string& what)> round_started;
  // Diagnostics, one line each without a newline: fallback reasons (rank 0,
  // once per reason), verification mismatches and MPI errors (the rank that
  // saw them), usage and setup errors (rank 0). Default: stderr.
  std::function<void(const std::string&)> log;
  // Set (on every rank): the host-combined kernels' step timestamps of every
  // timed call (bench_kernels/phase_trace.h), gathered to rank 0, which
  // passes them here as JSON Lines, one mark per line (see
  // PhaseTraceLines). Unset: nothing is recorded.
  std::function<void(const std::string& line)> phase_trace;
};

// The JSON Lines of one call's marks: `marks` holds (event, value, t) triples
// of every rank, `counts` the number of triples per rank, times relative to
// that rank's start of the call. One line per mark: {"collective",
// "algorithm", "msize", "call", "rank", "event", "value", "t_s"}.
std::vector<std::string> PhaseTraceLines(std::string_view collective, std::string_view algorithm, int64_t msize,
                                         int64_t call, const std::vector<int>& counts,
                                         const std::vector<double>& marks);

struct Sample {
  std::string collective;
  std::string algorithm;  // The registry name, or kViaMpiAlgorithm.
  // algorithm, or BenchOptions::native_label for `native`, or
  // BenchOptions::via_mpi_label for kViaMpiAlgorithm.
  std::string label;
  std::string pattern;  // alltoallv only; empty otherwise.
  int nprocs = 0;
  int ranks_per_node = 0;  // Largest number of ranks on one host.
  int64_t msize = 0;       // Bytes per block (alltoallv: mean per pair).
  int iterations = 0;      // Timed iterations.
  double min_s = 0, median_s = 0, p95_s = 0, max_s = 0;
  double mean_s = 0;        // What an application pays per call.
  uint64_t order_seed = 0;  // With interleaved rounds: BenchOptions::order_seed; else 0.
  int64_t bytes_per_call = 0;
  std::optional<double> bytes_per_s;  // Unset when mean_s is 0.
  std::optional<double> bound_s;      // With a topology only.
  std::optional<double> fraction_of_bound;
  bool verified = false;      // Verification ran on every call and found no mismatch.
  int64_t verify_errors = 0;  // Mismatching blocks, summed over ranks and calls.
  // Timed calls that ran the MPI library's collective instead (max over
  // ranks); always 0 for kViaMpiAlgorithm, whose library keeps its own count.
  int64_t fallbacks = 0;
  // With BenchOptions::tcp_counters: over the timed calls, the TCP
  // retransmission timeouts and retransmitted segments of every host (one
  // rank per host reads its namespace's counters around each call).
  std::optional<int64_t> tcp_timeouts, tcp_retrans_segs;
  std::vector<double> times_s;  // Every timed iteration, in order (max over ranks).
  // Why the algorithm left the size before its last round (racing, the
  // candidate time limit, a slow warm-up); empty: it ran every round.
  std::string dropped;
  double size_seconds = 0;  // Wall time of the whole size, every algorithm (rank 0's clock).
  // Size matrices the rounds cycled through (BenchOptions::matrices); the
  // call of round r ran on matrix r mod matrices, and bytes_per_call and
  // bound_s are the means over them.
  int matrices = 1;
};

// The sample as one JSON object on one line (no newline), keys in the order
// of Sample's fields; times_s only when `with_times`. Unset optionals are null.
std::string SampleToJson(const Sample& s, bool with_times = false);

// Checks the algorithm names of `options` against the registry. On an
// unknown name returns InvalidArgument("unknown alltoall algorithm 'x';
// valid algorithms for alltoall: ..."). No MPI.
Status ValidateAlgorithms(const BenchOptions& options);

// Runs the benchmark on every rank of `comm`. `sink` gets each Sample on
// rank 0 only, as soon as it is measured. Errors are logged (rank 0) and
// returned as an exit status, the same on every rank: kExitOk,
// kExitFailure or kExitUsage.
int RunBench(const BenchOptions& options, MPI_Comm comm, const std::function<void(const Sample&)>& sink);

}  // namespace topotune::bench
