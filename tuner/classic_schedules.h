// Classic all-to-all phase patterns expressed as Schedules, so that the
// verifier can score their link contention on a real switch tree and the
// tuner can compare them with tree_scheduled.
//
// Each generator depends on the rank count only (not on the tree): these are
// the topology-oblivious algorithms that MPI libraries ship. The three live
// in one file because they share the ring loop and differ in one line each;
// each function's block in classic_schedules.cc says where it comes from.
//
// Preconditions: num_ranks >= 0 (a negative count is a programmer error).
// A communicator of 0 or 1 ranks gets a schedule with no phases.
//
// Thread-safety: pure functions; safe to call from any thread.
#pragma once

#include "tuner/schedule.h"

namespace topotune {

// "ring": N-1 phases; in phase i (1..N-1, stored as phase i-1) rank j sends
// to (j+i) mod N. No syncs and no barriers: ranks run freely, so a fast rank
// may be several phases ahead of a slow one.
Schedule RingSchedule(int num_ranks);

// "pairwise" (MPICH): when N is a power of two, phase i has j -> j XOR i;
// otherwise the same phases as the ring. Free-running like the ring.
Schedule PairwiseSchedule(int num_ranks);

// "phased_barrier" (CC-MPI Figure 2): the ring's N-1 phases with a barrier
// between consecutive phases.
Schedule PhasedBarrierSchedule(int num_ranks);

}  // namespace topotune
