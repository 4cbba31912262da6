// alltoall "linear" (LAM/MPI): post every receive and every send, then wait.
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h); declines only on intercommunicators.
// Returns: the completed alltoall.
// Algorithm (Faraj-Yuan §6, LAM/MPI 6.5): rank i posts receives from every
//   other rank, then sends in the order i->0, i->1, ..., i->N-1 (skipping
//   itself), copies its own block, and waits for all 2(N-1) requests.
// When it wins: small and medium messages on one switch, where the network
//   absorbs the burst and one round of latency beats N-1 steps.
// Limits: 2(N-1) outstanding requests per rank; with large messages every
//   rank starts with rank 0, so early ranks are hot spots and inter-switch
//   links see uncontrolled contention (Faraj-Yuan §6: 468.8 ms vs 217.7 ms
//   for tree_scheduled at 64KB on 32 nodes).
// Example: N=3, rank 1 posts receives from 0 and 2, sends to 0 then 2, and
//   copies send block 1 into receive block 1.
#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {

using alltoall_detail::AlltoallBuffers;

KernelStatus AlltoallLinear(const AlltoallArgs& args, const KernelContext& ctx) {
  AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();
  const int n = b.size();
  const int me = b.rank();
  std::vector<MPI_Request> reqs;
  reqs.reserve(2 * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (i == me) continue;
    int rc = alltoall_detail::PostRecv(b.recv_block(i), b.block_bytes(), i, kDataTag, b.comm(), &reqs);
    if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  }
  for (int i = 0; i < n; ++i) {
    if (i == me) continue;
    int rc = alltoall_detail::PostSend(b.send_block(i), b.block_bytes(), i, kDataTag, b.comm(), &reqs);
    if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  }
  b.CopyOwnBlock();
  if (int rc = alltoall_detail::WaitAll(&reqs); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  return b.Finish();
}

}  // namespace topotune::kernels
