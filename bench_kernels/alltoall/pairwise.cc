// alltoall "pairwise" (MPICH): N-1 exchange steps with one partner each.
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h); declines only on intercommunicators.
// Returns: the completed alltoall.
// Algorithm (Faraj-Yuan §6, MPICH for messages > 32 KB): when N is a power
//   of two, at step j (1 <= j < N) rank i exchanges with i XOR j, so every
//   step is a perfect pairing; otherwise it is the ring: at step j rank i
//   sends to (i+j) mod N and receives from (i-j) mod N. The steps are not
//   separated by barriers: a fast pair may run ahead.
// When it wins: large messages on one switch; each rank has one send and one
//   receive in flight, so no NIC is oversubscribed.
// Limits: N-1 latencies; on a multi-switch tree the steps still contend on
//   inter-switch links (that is what tree_scheduled fixes).
// Example: N=4, rank 1 exchanges with 0 (j=1), 3 (j=2), 2 (j=3); N=3, rank 1
//   sends to 2 and receives from 0 (j=1), then sends to 0 and receives from
//   2 (j=2).
#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {

using alltoall_detail::AlltoallBuffers;

KernelStatus AlltoallPairwise(const AlltoallArgs& args, const KernelContext& ctx) {
  AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();
  const int n = b.size();
  const int me = b.rank();
  const bool power_of_two = (n & (n - 1)) == 0;
  b.CopyOwnBlock();
  for (int j = 1; j < n; ++j) {
    const int to = power_of_two ? me ^ j : (me + j) % n;
    const int from = power_of_two ? me ^ j : (me - j + n) % n;
    if (int rc = alltoall_detail::ExchangeBlocks(&b, to, from); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  }
  return b.Finish();
}

}  // namespace topotune::kernels
