// alltoall "ring": N-1 steps; at step j rank i sends to (i+j) mod N and
// receives from (i-j) mod N.
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h); declines only on intercommunicators.
// Returns: the completed alltoall.
// Algorithm (Faraj-Yuan §6, MPICH's choice when N is not a power of two):
//   one algorithm for every N. It differs from "pairwise" only when N is a
//   power of two, where pairwise pairs i with i XOR j instead (a
//   symmetric exchange; the ring's partners in one step are two different
//   ranks). Steps are free-running, with no barriers (compare
//   phased_barrier, the same steps separated by barriers).
// When it wins: large messages on one switch, any N: one send and one
//   receive in flight per rank.
// Limits: N-1 latencies; contends on inter-switch links of a tree.
// Example: N=4, rank 1: step 1 sends to 2, receives from 0; step 2 sends to
//   3, receives from 3; step 3 sends to 0, receives from 2.
#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {

using alltoall_detail::AlltoallBuffers;

KernelStatus AlltoallRing(const AlltoallArgs& args, const KernelContext& ctx) {
  AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();
  const int n = b.size();
  const int me = b.rank();
  b.CopyOwnBlock();
  for (int j = 1; j < n; ++j) {
    int rc = alltoall_detail::ExchangeBlocks(&b, (me + j) % n, (me - j + n) % n);
    if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  }
  return b.Finish();
}

}  // namespace topotune::kernels
