// The kernel catalog: every algorithm topotune runs as an MPI kernel
// (bench_kernels/), with what can be said of it without MPI: its collective
// and name, a one-line description, its place in the preference order and
// whether it needs a context piece built from the topology. This table is
// the one place these are written; everything else reads it:
//   * the kernel registry (bench_kernels/kernel.h, Kernels()) joins each row
//     to the kernel's function, in each collective's registry.cc, with a
//     compile-time check that every row has exactly one function and every
//     function a row;
//   * topotuned, which links no MPI code, breaks ties between algorithms in
//     KernelsByPreference order and knows which kernels need a ring order
//     (NeedsRingOrder);
//   * CMake compiles and runs cmake/print_kernel_catalog.cc at configure time
//     for the test matrices of tests/mpi and tests/shim
//     (TOPOTUNE_KERNEL_NAMES, TOPOTUNE_CONTEXT_KERNEL_NAMES).
// The static_asserts at the end check the table when anything includes it:
// names unique per collective; per collective the preferences are 0 to n-1,
// each once, native 0; every kernel of scheduled_kernels.h (the kernels that
// run a compiled schedule) a row that needs a context.
//
// Thread-safety: constant tables and pure functions.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/scheduled_kernels.h"

namespace topotune {

struct CatalogKernel {
  std::string_view collective;   // "alltoall", "alltoallv" or "allgather" (kKernelCollectives).
  std::string_view name;         // Unique per collective.
  std::string_view description;  // One line, for --help.
  // Preference among algorithms that are not significantly slower than the
  // fastest (tuner/crossover.h): lower is preferred. The MPI library's own
  // (native) 0, then the simpler ones, the topology-aware ones (which need
  // libtopotune-mpi.so and a plan) last; per collective 0 to n-1, each once.
  int preference;
  // Needs a KernelContext piece built from the topology (a compiled schedule,
  // a ring order) or from the call's sizes (an alltoallv Level 3 plan).
  bool needs_context;
};

inline constexpr std::string_view kKernelCollectives[] = {"alltoall", "alltoallv", "allgather"};

// In the order --help and the registry list them; preference is the order
// topotuned prefers them in.
inline constexpr CatalogKernel kKernelCatalog[] = {
    {"alltoall", "native", "The MPI library's own MPI_Alltoall (via PMPI_Alltoall)", 0, false},
    {"alltoall", "linear", "Post every receive and send, then wait (LAM/MPI)", 1, false},
    {"alltoall", "pairwise", "N-1 steps: XOR partners when N is a power of two, else the ring (MPICH)", 2, false},
    {"alltoall", "ring",
     "N-1 steps: send to i+j, receive from i-j, for every N (pairwise uses XOR partners for powers of two)", 3, false},
    {"alltoall", "bruck", "log2(N) rounds of combined blocks with local rotation (Bruck); small messages", 4, false},
    {"alltoall", "phased_barrier", "N-1 phases j->(j+i) mod N with a barrier between phases (CC-MPI Figure 2)", 5,
     false},
    {"alltoall", "tree_scheduled", "Contention-free phases for the switch tree, pair-wise synchronised (Faraj-Yuan)", 9,
     true},
    {"alltoall", "capacity_scheduled",
     "Host-combined phases packed up to every link's capacity, through shared memory (many ranks per host, fast "
     "uplinks)",
     10, true},
    {"alltoall", "capacity_lockstep",
     "capacity_scheduled's program with each host's ranks in step, phase by phase (real TCP: no run-ahead onto a busy "
     "host link)",
     11, true},
    {"alltoall", "host_direct",
     "Host-combined in one round: every host pair's blocks in about one message per rank, all at once, through "
     "shared memory (many ranks per host, small blocks)",
     12, true},
    {"alltoall", "mesh", "Message combining along a 2-D mesh, with holes (Kale-Kumar 2.2); small messages", 6, false},
    {"alltoall", "grid3d", "Message combining along a 3-D grid, with holes (Kale-Kumar 2.3); small messages", 7, false},
    {"alltoall", "hypercube",
     "Dimensional exchange on a hypercube, imperfect for any N (Kale-Kumar 2.4); small messages", 8, false},

    {"alltoallv", "native", "The MPI library's own MPI_Alltoallv", 0, false},
    {"alltoallv", "linear", "Post every receive and send, then wait", 1, false},
    {"alltoallv", "greedy_phased",
     "CC-MPI Level 1: allgather the sizes, greedy contention-free phases, barriers between", 2, false},
    {"alltoallv", "a2a_phased",
     "CC-MPI Level 1: allgather the sizes, all-to-all based phases (Fig. 4), barriers between", 3, false},
    {"alltoallv", "greedy_phased_l3", "CC-MPI Level 3: greedy phases precomputed for a fixed pattern", 4, true},
    {"alltoallv", "a2a_phased_l3", "CC-MPI Level 3: all-to-all based phases precomputed for a fixed pattern", 5, true},

    {"allgather", "native", "The MPI library's own MPI_Allgather", 0, false},
    {"allgather", "ring", "Logical ring in rank order, N-1 steps", 1, false},
    {"allgather", "switch_ordered_ring", "Ring in depth-first switch order (Jacunski SO-R)", 4, true},
    {"allgather", "simultaneous_bcast", "Every rank sends its block to all others at once (Jacunski SB)", 3, false},
    {"allgather", "recursive_doubling", "Combining: ceil(log2 N) steps, distance and data doubling", 2, false},
    {"allgather", "link_scheduled", "Switches in a ring forward blocks while distributing locally (Jacunski LS)", 5,
     true},
    {"allgather", "node_aware_ring",
     "Hosts in a switch-ordered ring forward pipelined ranges of a shared-memory stream (many ranks per host)", 6,
     true},
};

// The index in kKernelCatalog of (collective, name), or -1. The checks below
// use indices, not pointers: with the sanitizers (-fno-delete-null-pointer-
// checks) GCC does not take a global's address compared with nullptr as a
// constant expression.
constexpr int CatalogKernelIndex(std::string_view collective, std::string_view name) {
  for (size_t i = 0; i < std::size(kKernelCatalog); ++i)
    if (kKernelCatalog[i].collective == collective && kKernelCatalog[i].name == name) return static_cast<int>(i);
  return -1;
}

// The row of (collective, name), or nullptr.
constexpr const CatalogKernel* FindCatalogKernel(std::string_view collective, std::string_view name) {
  const int i = CatalogKernelIndex(collective, name);
  return i < 0 ? nullptr : &kKernelCatalog[i];
}

// How many kernels `collective` has.
constexpr int CatalogKernelCount(std::string_view collective) {
  int n = 0;
  for (const CatalogKernel& k : kKernelCatalog) n += k.collective == collective ? 1 : 0;
  return n;
}

// The names of `collective`'s kernels, most preferred first (native first);
// empty for an unknown collective.
inline std::vector<std::string> KernelsByPreference(std::string_view collective) {
  std::vector<const CatalogKernel*> rows;
  for (const CatalogKernel& k : kKernelCatalog)
    if (k.collective == collective) rows.push_back(&k);
  std::sort(rows.begin(), rows.end(),
            [](const CatalogKernel* a, const CatalogKernel* b) { return a->preference < b->preference; });
  std::vector<std::string> out;
  for (const CatalogKernel* k : rows) out.emplace_back(k->name);
  return out;
}

// Whether the kernel reads a ring order (and the switch of each rank) from
// its context, which GetPlan then carries: the allgather kernels that need a
// context but run no compiled schedule (switch_ordered_ring, link_scheduled).
constexpr bool NeedsRingOrder(std::string_view collective, std::string_view name) {
  const int i = CatalogKernelIndex(collective, name);
  return i >= 0 && kKernelCatalog[i].needs_context && collective == "allgather" &&
         ScheduledKernelIndex(collective, name) < 0;
}

namespace catalog_detail {

constexpr bool KnownCollective(std::string_view c) {
  for (std::string_view known : kKernelCollectives)
    if (known == c) return true;
  return false;
}

constexpr bool NamesUnique() {
  for (const CatalogKernel& a : kKernelCatalog) {
    if (!KnownCollective(a.collective) || a.name.empty() || a.description.empty()) return false;
    int same = 0;
    for (const CatalogKernel& b : kKernelCatalog) same += a.collective == b.collective && a.name == b.name ? 1 : 0;
    if (same != 1) return false;
  }
  return true;
}

constexpr bool PreferencesArePermutations() {
  for (std::string_view c : kKernelCollectives) {
    const int n = CatalogKernelCount(c);
    for (int p = 0; p < n; ++p) {
      int taken = 0;
      for (const CatalogKernel& k : kKernelCatalog) taken += k.collective == c && k.preference == p ? 1 : 0;
      if (taken != 1) return false;
    }
    const int native = CatalogKernelIndex(c, "native");
    if (native < 0 || kKernelCatalog[native].preference != 0 || kKernelCatalog[native].needs_context) return false;
  }
  // No preference outside 0..n-1: the counts above cover every row.
  return true;
}

constexpr bool ScheduledKernelsAreRows() {
  for (const ScheduledKernel& s : kScheduledKernels) {
    const int k = CatalogKernelIndex(s.collective, s.algorithm);
    if (k < 0 || !kKernelCatalog[k].needs_context) return false;
  }
  return true;
}

}  // namespace catalog_detail

static_assert(catalog_detail::NamesUnique(),
              "kKernelCatalog: every row needs a known collective, a description and a name unique in its collective");
static_assert(catalog_detail::PreferencesArePermutations(),
              "kKernelCatalog: a collective's preferences must be 0 to n-1, each once, with native 0");
static_assert(catalog_detail::ScheduledKernelsAreRows(),
              "kScheduledKernels (tuner/scheduled_kernels.h) names a kernel that is not in kKernelCatalog or that "
              "needs no context");

}  // namespace topotune
