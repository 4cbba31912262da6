// simultaneous_bcast (SB)
//   Accepts: any intracommunicator MPI_Allgather call: any datatypes
//            (derived ones through a packed scratch), zero counts,
//            MPI_IN_PLACE, one process.
//   Returns: Done with every block in place, or an MPI error code.
//   Falls back: on an intercommunicator only, which every rank sees alike;
//            decided before any communication.
//   Algorithm: N simultaneous broadcasts: post a receive from every other
//            rank straight into its block, then send this rank's block to
//            r+1, r+2, ..., r+N-1 (mod N), and wait for everything. The send
//            order makes step i a permutation (r -> r+i), so no NIC is the
//            target of two senders that keep pace with each other.
//   Wins:    medium messages on one switch: sends of the same block follow
//            each other without waiting for a forward, so start-up costs
//            overlap transmission (Jacunski §3.2: SB always beats the ring
//            on one switch).
//   Limits:  N-1 sends per rank in flight; across switches every block
//            crosses each inter-switch link once per remote destination, so
//            the links carry |M_a| x |M_b| blocks (Jacunski Table 2: SB is
//            5x slower than SO-R on two switches).
//   Example: 3 ranks: rank 1 receives from 0 and 2, and sends its block to
//            2 and then to 0.
//   Source:  Jacunski §3.1.2, Figure 4. Where the paper alternates sends
//            with probing for arrivals, we post every receive first and let
//            MPI's progress engine interleave them.
#include "bench_kernels/allgather/gather_buffer.h"
#include "bench_kernels/allgather/kernels.h"

namespace topotune::kernels {

KernelStatus AllgatherSimultaneousBcast(const AllgatherArgs& a, const KernelContext& ctx) {
  allgather_detail::KernelComm c;
  if (auto st = allgather_detail::BeginAllgather(a, ctx, &c)) return *st;
  allgather_detail::GatherBuffer g;
  int rc = g.Init(a, c.n, c.me, c.comm);
  if (rc == MPI_SUCCESS && c.n > 1 && g.block_bytes() > 0) {
    allgather_detail::RequestList reqs;
    for (int i = 1; i < c.n && rc == MPI_SUCCESS; ++i) {
      int src = (c.me - i + c.n) % c.n;
      rc = reqs.Recv(g.block(src), g.block_bytes(), src, c.comm);
    }
    for (int i = 1; i < c.n && rc == MPI_SUCCESS; ++i)
      rc = reqs.Send(g.block(c.me), g.block_bytes(), (c.me + i) % c.n, c.comm);
    int wait_rc = reqs.WaitAll();
    if (rc == MPI_SUCCESS) rc = wait_rc;
  }
  if (rc == MPI_SUCCESS) rc = g.Finish();
  return allgather_detail::StatusFrom(rc);
}

}  // namespace topotune::kernels
