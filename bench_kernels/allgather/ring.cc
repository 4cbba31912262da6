// ring (rank-ordered logical ring, RO-R)
//   Accepts: any intracommunicator MPI_Allgather call: any datatypes
//            (derived ones through a packed scratch), zero counts,
//            MPI_IN_PLACE, one process.
//   Returns: Done with every block in place, or an MPI error code.
//   Falls back: on an intercommunicator only, which every rank sees alike;
//            decided before any communication.
//   Algorithm: N-1 steps; in step i rank r sends block (r - i) mod N to
//            r + 1 and receives block (r - i - 1) mod N from r - 1, waiting
//            for both before the next step.
//   Wins:    large messages on one switch: every NIC sends and receives one
//            block per step, which reaches the bound (N-1) x m / B.
//   Limits:  N-1 latencies. Blind to placement: with ranks interleaved
//            across switches each step can cross an inter-switch link in
//            both directions several times (use switch_ordered_ring).
//   Example: 3 ranks: step 0 rank 0 sends block 0 to 1 and gets block 2
//            from 2; step 1 it forwards block 2 to 1 and gets block 1.
//   Source:  Jacunski §3.1.1 (LR, Figure 3); MPICH's ring (§5, RO-R).
#include "bench_kernels/allgather/ring.h"

#include "bench_kernels/allgather/kernels.h"

namespace topotune::kernels {

KernelStatus AllgatherRing(const AllgatherArgs& a, const KernelContext& ctx) {
  allgather_detail::KernelComm c;
  if (auto st = allgather_detail::BeginAllgather(a, ctx, &c)) return *st;
  allgather_detail::GatherBuffer g;
  int rc = g.Init(a, c.n, c.me, c.comm);
  if (rc == MPI_SUCCESS) rc = allgather_detail::RingAllgather(g, nullptr, c);
  if (rc == MPI_SUCCESS) rc = g.Finish();
  return allgather_detail::StatusFrom(rc);
}

}  // namespace topotune::kernels
