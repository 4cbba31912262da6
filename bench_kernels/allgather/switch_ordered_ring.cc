// switch_ordered_ring (SO-R)
//   Accepts: an intracommunicator MPI_Allgather call and a context whose
//            ring_order is a permutation of the communicator's ranks, the
//            same on every rank: SwitchOrderedRing(tree) (tuner/
//            allgather_orders.h), a depth-first walk of the switch tree; any
//            datatypes, zero counts, MPI_IN_PLACE, one process.
//   Returns: Done with every block in place, or an MPI error code.
//   Falls back: on an intercommunicator, or when ctx.ring_order is missing
//            or not a permutation of 0..N-1. Both are decided before any
//            communication, from the communicator and the context; the
//            context is built once per communicator from the same topology
//            and placement on every rank (the driver and the shim broadcast
//            it), so every rank decides alike. A context that differs
//            between ranks is a bug in its builder and is not detected
//            (checking would cost an allreduce per call).
//   Algorithm: the ring of `ring`, over ring_order: the rank at position p
//            sends to order[p+1] and receives from order[p-1], forwarding the
//            block it received in the previous step.
//   Wins:    large messages on multi-switch trees: a depth-first ring loads
//            each link once per direction per step, so it reaches the
//            allgather bound (N-1) x m / B(host link) on any tree.
//   Limits:  N-1 latencies, as any ring; a block takes N-1 hops.
//   Example: ranks 0, 2 on switch s0 and 1, 3 on s1 (interleaved): order
//            0, 2, 1, 3 crosses s0-s1 only at 2->1 and 3->0, once per
//            direction, where the rank-order ring crosses it four times.
//   Source:  Jacunski §4.2 (two switches) and §5.1 (irregular networks);
//            we walk the tree depth-first rather than concatenating BFS
//            lists (allgather_orders.h says why).
#include "bench_kernels/allgather/kernels.h"
#include "bench_kernels/allgather/ring.h"

namespace topotune::kernels {

KernelStatus AllgatherSwitchOrderedRing(const AllgatherArgs& a, const KernelContext& ctx) {
  allgather_detail::KernelComm c;
  if (auto st = allgather_detail::BeginAllgather(a, ctx, &c)) return *st;
  if (ctx.ring_order == nullptr) return KernelStatus::Fallback("no ring order in the context");
  if (!allgather_detail::IsPermutation(*ctx.ring_order, c.n))
    return KernelStatus::Fallback("the context's ring order is not a permutation of the communicator's ranks");
  allgather_detail::GatherBuffer g;
  int rc = g.Init(a, c.n, c.me, c.comm);
  if (rc == MPI_SUCCESS) rc = allgather_detail::RingAllgather(g, ctx.ring_order, c);
  if (rc == MPI_SUCCESS) rc = g.Finish();
  return allgather_detail::StatusFrom(rc);
}

}  // namespace topotune::kernels
