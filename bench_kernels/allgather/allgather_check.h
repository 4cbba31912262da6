// Byte-for-byte correctness check of one allgather kernel on one case, for
// the hand-built allgather_check_test and the ctest MPI matrix (tests/mpi).
// Not part of the kernel library: compile allgather_check.cc into the test
// program.
//
// A case fixes the block size in units, the datatypes (alltoallv/
// check_types.h, shared with the alltoallv checker) and MPI_IN_PLACE. The
// receive buffer starts filled with a sentinel (except this rank's own block
// under MPI_IN_PLACE), and after the call every byte is checked: each block's
// payload against its expected values, all other bytes (gaps of the vector
// type, the guard after the last block) against the sentinel; the send
// buffer must not change.
//
// Topology-aware kernels get their context from a test topology built in
// code (RingContext below), so the check needs no topology file.
//
// Thread-safety: collective over `comm`; one thread per rank.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench_kernels/alltoallv/check_types.h"
#include "bench_kernels/kernel.h"

namespace topotune::kernels::check {

struct AllgatherCase {
  int units = 1;  // Block size, in units (check_types.h).
  TypeCase type = TypeCase::kByte;
  bool in_place = false;
  uint64_t seed = 1;
};

// "13u/int/in_place/seed=3".
std::string Describe(const AllgatherCase& c);

// The standard matrix: block sizes {0, 1, 3, 13, 1031, 9001} units (bytes 0,
// 1, 3, 13, ... for kByte) x every type case x in-place or not.
std::vector<AllgatherCase> DefaultAllgatherCases();

struct AllgatherCheckResult {
  bool ok = true;          // Every byte right on every rank (the same on all ranks).
  bool fell_back = false;  // The kernel declined (then PMPI_Allgather ran); the same on all ranks, else !ok.
  std::string error;       // This rank's first problem, "" when none here.
};

// Collective over comm: runs kernel.allgather once on the case with `ctx`
// (running PMPI_Allgather instead when it declines, as RunAllgather does)
// and checks every byte.
AllgatherCheckResult CheckAllgather(const KernelInfo& kernel, const AllgatherCase& c, MPI_Comm comm,
                                    const KernelContext& ctx = {});

// Collective over comm (N >= 2): calls the kernel on an intercommunicator
// made from comm's two halves with `ctx`; it must decline (or, for native,
// complete). Returns "" or what went wrong.
std::string CheckAllgatherIntercomm(const KernelInfo& kernel, MPI_Comm comm, const KernelContext& ctx = {});

// A test layout of n ranks on hosts under switches, built in code with
// tuner/test_trees.h, and the allgather context pieces it induces.
struct RingLayout {
  std::string name;             // "2 switches, interleaved", ...
  std::vector<int> ring_order;  // SwitchOrderedRing of the rank tree.
  std::vector<int> switch_of_rank;
};

// Layouts for n ranks (n >= 1), each built with RankTree::Build and
// SwitchOrderedRing: two switches with ranks interleaved (one host each),
// three switches in a chain with ranks dealt round-robin, a hub switch
// without hosts and three leaf switches, two-slot hosts whose two ranks are
// not consecutive, and two unbalanced ones (two ranks on the second switch;
// a lone rank on the middle switch of a chain). switch_of_rank numbers the switch of each rank's host in the order
// the ring meets them. The same on every rank.
std::vector<RingLayout> TestRingLayouts(int n);

}  // namespace topotune::kernels::check
