#include "tuner/classic_schedules.h"

#include <cassert>
#include <cstdint>

namespace topotune {
namespace {

bool IsPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

// The N-1 shifted-ring phases, phase i-1 holding j -> (j+i) mod N.
Schedule ShiftRing(int num_ranks, const char* algorithm) {
  assert(num_ranks >= 0);
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = algorithm;
  s.num_ranks = num_ranks;
  if (num_ranks < 2) return s;
  s.Reserve(static_cast<int64_t>(num_ranks) * (num_ranks - 1), num_ranks - 1);
  for (int i = 1; i < num_ranks; ++i) {
    s.AddPhase();
    for (int j = 0; j < num_ranks; ++j) s.Add({j, (j + i) % num_ranks});
  }
  return s;
}

}  // namespace

// ring
//   Accepts: the rank count N.
//   Returns: N-1 phases, phase i-1 = {j -> (j+i) mod N | j = 0..N-1}; no
//            syncs, no barrier.
//   Wins:    on a single switch, and for small messages where any
//            synchronisation costs more than contention; every rank sends and
//            receives exactly once per phase, so host links never collide.
//   Limits:  ignores the tree: on several switches most phases push many
//            messages over the same inter-switch link, and free-running ranks
//            drift into each other's phases.
//   Example: N = 3: phase 0 = {0->1, 1->2, 2->0}, phase 1 = {0->2, 1->0, 2->1}.
//   Source:  Faraj-Yuan §6 (MPICH's large-message ring: "at step j, node i
//            sends to node i + j"); CC-MPI §4.2 uses the same phases.
Schedule RingSchedule(int num_ranks) { return ShiftRing(num_ranks, "ring"); }

// pairwise
//   Accepts: the rank count N.
//   Returns: N-1 phases; for N a power of two phase i-1 = {j -> j XOR i}, so
//            each phase is a set of disjoint pairwise exchanges; otherwise the
//            ring's phases. No syncs, no barrier.
//   Wins:    power-of-two jobs on one switch, where each phase is a perfect
//            exchange (a rank sends to the rank it receives from).
//   Limits:  like the ring, blind to the tree; XOR partners of high bits all
//            cross the top of a tree built in rank order in the same phase.
//   Example: N = 4: phases {0<->1, 2<->3}, {0<->2, 1<->3}, {0<->3, 1<->2}
//            (0->1, 1->0, 2->3, 3->2 in phase 0, and so on).
//   Source:  Faraj-Yuan §6 (MPICH's MPI_Alltoall above 32 KiB: "node i sends
//            and receives from node i XOR j at step j").
Schedule PairwiseSchedule(int num_ranks) {
  if (!IsPowerOfTwo(num_ranks)) return ShiftRing(num_ranks, "pairwise");
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "pairwise";
  s.num_ranks = num_ranks;
  if (num_ranks < 2) return s;
  s.Reserve(static_cast<int64_t>(num_ranks) * (num_ranks - 1), num_ranks - 1);
  for (int i = 1; i < num_ranks; ++i) {
    s.AddPhase();
    for (int j = 0; j < num_ranks; ++j) s.Add({j, j ^ i});
  }
  return s;
}

// phased_barrier
//   Accepts: the rank count N.
//   Returns: the ring's N-1 phases with barrier_between_phases = true (N-2
//            barriers).
//   Wins:    large messages on a single switch, where keeping phases apart
//            removes the contention that free-running rings build up.
//   Limits:  N-2 barriers; on a multi-switch tree a phase can still overload
//            an inter-switch link (CC-MPI assumes contention only at host
//            links), and every phase waits for its slowest message.
//   Example: N = 6 gives CC-MPI Figure 2: phase 0 = {0->1, 1->2, 2->3, 3->4,
//            4->5, 5->0}, barrier, phase 1 = {0->2, ...}, ..., phase 4.
//   Source:  CC-MPI (Karwande-Yuan 2003) §4.2, Figure 2.
Schedule PhasedBarrierSchedule(int num_ranks) {
  Schedule s = ShiftRing(num_ranks, "phased_barrier");
  s.barrier_between_phases = true;
  return s;
}

}  // namespace topotune
