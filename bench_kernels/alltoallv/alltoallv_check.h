// Byte-for-byte correctness check of one alltoallv kernel on one case, for
// the hand-built alltoallv_check_test and the ctest MPI matrix (tests/mpi).
// Not part of the kernel library: compile alltoallv_check.cc into the test
// program.
//
// A case fixes the count pattern (the same on every rank, derived from the
// case and the communicator size), the datatypes (check_types.h), MPI_IN_PLACE
// and, for the Level 3 kernels, which plan the context carries. Buffers use
// non-trivial displacements (blocks in reverse or rotated order with gaps
// between them), start filled with a sentinel, and every byte is checked
// after the call: payload bytes against their expected values, all other
// bytes (gaps in the vector type, between and after blocks) against the
// sentinel.
//
// Thread-safety: collective over `comm`; one thread per rank.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_kernels/alltoallv/check_types.h"
#include "bench_kernels/kernel.h"

namespace topotune::kernels::check {

enum class Pattern {
  kUniform,  // Every entry max_units, diagonal included.
  kRandom,   // Entries uniform in [0, max_units], about a third of them 0.
  kSkewed,   // Rank 0 sends max_units to all, all send max_units to rank N-1,
             // the rest 1 unit or 0; a wide spread of sizes with zeros.
};
std::string_view PatternName(Pattern p);

// What a Level 3 kernel finds in its context.
enum class PlanMode {
  kAsGiven,   // The caller's ctx, untouched (e.g. from the driver's ContextHolder).
  kMatching,  // A plan built with BuildAlltoallvPlan for this case (greedy iff
              // the kernel's name starts with "greedy"): must not fall back.
  kStale,     // A plan for the same pattern with one entry (rank N-1 -> rank 0)
              // one unit larger: only ranks N-1 and 0 can see the difference,
              // yet every rank must fall back (N >= 2).
  kNone,      // ctx.alltoallv_plan = nullptr: must fall back.
};

struct AlltoallvCase {
  Pattern pattern = Pattern::kUniform;
  int max_units = 1;
  TypeCase type = TypeCase::kByte;
  bool in_place = false;  // Symmetrises the pattern, as MPI_IN_PLACE requires.
  uint64_t seed = 1;
  PlanMode plan = PlanMode::kMatching;  // Only for kernels with needs_context.
};

// "random/13u/int/in_place/seed=3/plan=matching".
std::string Describe(const AlltoallvCase& c);

// units[src][dst] for a case on n ranks; the same on every rank.
std::vector<std::vector<int>> AlltoallvUnits(const AlltoallvCase& c, int n);

struct CheckResult {
  bool ok = true;          // Every byte right on every rank (the same on all ranks).
  bool fell_back = false;  // The kernel declined (then PMPI_Alltoallv ran); the same on all ranks, else !ok.
  std::string error;       // This rank's first problem, "" when none here.
};

// Collective over comm: runs kernel.alltoallv once on the case (running
// PMPI_Alltoallv instead when it declines, as RunAlltoallv does) and checks
// every byte. `ctx` is the context to use; for kernels with needs_context
// the case's PlanMode may replace its alltoallv_plan.
CheckResult CheckAlltoallv(const KernelInfo& kernel, const AlltoallvCase& c, MPI_Comm comm,
                           const KernelContext& ctx = {});

// The standard matrix: every pattern x sizes {0, 1, 13, 1031, 9001} units
// (so bytes 0, 1, 13, 1031, ... for kByte, across the 1 KiB small-message
// threshold) x every type case x in-place or not; plus, for Level 3 kernels,
// stale and missing plans on a few cases.
std::vector<AlltoallvCase> DefaultAlltoallvCases(const KernelInfo& kernel);

// Whether the kernel must decline the case (the test asserts it does exactly
// then): Level 3 kernels with a stale or missing plan, when N >= 2 for stale.
bool ExpectAlltoallvFallback(const KernelInfo& kernel, const AlltoallvCase& c, int n);

// Collective over comm (N >= 2): calls the kernel on an intercommunicator
// made from comm's two halves; it must decline without communicating (or,
// for native, complete). Returns "" or what went wrong.
std::string CheckAlltoallvIntercomm(const KernelInfo& kernel, MPI_Comm comm);

}  // namespace topotune::kernels::check
