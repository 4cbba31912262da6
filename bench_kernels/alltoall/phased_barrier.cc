// alltoall "phased_barrier" (CC-MPI, Karwande-Yuan 2003, Figure 2): N-1
// phases, phase i holding j -> (j+i) mod N for every j, with a barrier
// between consecutive phases (N-2 barriers).
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h); declines only on intercommunicators.
// Returns: the completed alltoall.
// Algorithm: in phase i (1 <= i < N) rank j sends to (j+i) mod N and
//   receives from (j-i) mod N; then every rank enters PMPI_Barrier before
//   phase i+1, so no message of a later phase can overlap this one. Each
//   rank sends and receives exactly one message per phase, so under CC-MPI's
//   model (contention only on host links: one switch, or fast uplinks) no
//   phase has contention.
// When it wins: large messages on a single switch with many ranks, where
//   free-running steps drift into each other.
// Limits: N-2 barriers (about 1 ms each on 16 nodes in the paper), so it
//   loses for small messages; on multi-switch trees the phases still share
//   inter-switch links (on the two-switch testbed at 64 KiB per block it took
//   395 ms, against 125 ms for Open MPI's own; see DESIGN.md).
// Example (Figure 2, N=6): phase 0 {0->1, 1->2, ..., 5->0}, barrier,
//   phase 1 {0->2, 1->3, ...}, ..., phase 4 {0->5, 1->0, ...}.
#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {

using alltoall_detail::AlltoallBuffers;

KernelStatus AlltoallPhasedBarrier(const AlltoallArgs& args, const KernelContext& ctx) {
  AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();
  const int n = b.size();
  const int me = b.rank();
  b.CopyOwnBlock();
  for (int i = 1; i < n; ++i) {
    if (i > 1) {
      if (int rc = PMPI_Barrier(b.comm()); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
    }
    int rc = alltoall_detail::ExchangeBlocks(&b, (me + i) % n, (me - i + n) % n);
    if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  }
  return b.Finish();
}

}  // namespace topotune::kernels
