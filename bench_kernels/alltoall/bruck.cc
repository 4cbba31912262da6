// alltoall "bruck": Bruck et al.'s log-round algorithm with local rotation.
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h); declines only on intercommunicators.
// Returns: the completed alltoall.
// Algorithm: (1) rotate locally so that slot j holds the block for rank
//   (i+j) mod N; (2) for k = 1, 2, 4, ... < N, send every slot j with
//   (j & k) != 0 to rank (i+k) mod N in one combined message, and receive
//   the same slots from (i-k) mod N into their places, so the block in slot
//   j travels j ranks ahead in total; (3) slot j then holds the block from
//   rank (i-j) mod N: rotate back into the receive buffer.
// When it wins: small messages and many ranks: ceil(log2 N) messages per
//   rank instead of N-1. It is MPICH's small-message algorithm (the
//   adaptive MPICH of Faraj-Yuan §6) and Open MPI tuned's "modified_bruck".
// Memory: 2 x N blocks of scratch per rank (folded under
//   topotune-bench-smpi --fold-buffers: KernelContext::fold_scratch).
// Limits: each round moves about half of all blocks, so every block crosses
//   the network up to log2 N times and it loses once bandwidth dominates;
//   N local block copies per round.
// Example: N=3, rank 0 rotates to slots {b0->0, b0->1, b0->2}; k=1: sends
//   slot 1 (b0->1) to rank 1 and receives slot 1 from rank 2 (b2->0); k=2:
//   sends slot 2 (b0->2) to rank 2 and receives slot 2 from rank 1 (b1->0,
//   rank 1's rotated slot 2). Slot j then holds the block from (0-j) mod 3.
#include <cstring>

#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/alltoall/alltoall_kernels.h"
#include "bench_kernels/buffers.h"

namespace topotune::kernels {

using alltoall_detail::AlltoallBuffers;

KernelStatus AlltoallBruck(const AlltoallArgs& args, const KernelContext& ctx) {
  AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();
  const int n = b.size();
  const int me = b.rank();
  const size_t bytes = static_cast<size_t>(b.block_bytes());
  FoldableBytes slots(bytes * n, ctx.fold_scratch);
  auto slot = [&](int j) { return slots.data() + bytes * j; };
  for (int j = 0; j < n; ++j) std::memcpy(slot(j), b.send_block((me + j) % n), bytes);

  FoldableBytes out(bytes * (n / 2 + 1), ctx.fold_scratch), in(bytes * (n / 2 + 1), ctx.fold_scratch);
  std::vector<MPI_Request> reqs;
  for (int k = 1; k < n; k <<= 1) {
    size_t count = 0;
    for (int j = 1; j < n; ++j) {
      if (j & k) std::memcpy(out.data() + bytes * count++, slot(j), bytes);
    }
    const int64_t total = static_cast<int64_t>(bytes * count);
    int rc = alltoall_detail::PostRecv(in.data(), total, (me - k + n) % n, kDataTag, b.comm(), &reqs);
    if (rc == MPI_SUCCESS) rc = alltoall_detail::PostSend(out.data(), total, (me + k) % n, kDataTag, b.comm(), &reqs);
    if (rc == MPI_SUCCESS) rc = alltoall_detail::WaitAll(&reqs);
    if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
    count = 0;
    for (int j = 1; j < n; ++j) {
      if (j & k) std::memcpy(slot(j), in.data() + bytes * count++, bytes);
    }
  }
  for (int j = 0; j < n; ++j) std::memcpy(b.recv_block((me - j + n) % n), slot(j), bytes);
  return b.Finish();
}

}  // namespace topotune::kernels
