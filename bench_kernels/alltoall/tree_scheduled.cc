// alltoall "tree_scheduled": runs this rank's compiled program of the
// contention-free phases for the job's switch tree (Faraj-Yuan 2005, §4),
// kept apart by pair-wise synchronisation instead of barriers (§5).
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h), and ctx.tree_program: the RankProgram that
//   CompileRankProgram(TreeScheduled(tree), rank) made for this rank, where
//   the tree is the communicator's placement on the topology.
// Returns: the completed alltoall.
// Declines (before any message) on an intercommunicator, when
//   ctx.tree_program is null, or when the program does not fit the
//   communicator: its rank is not this rank, a peer is outside 0..N-1 or is
//   this rank, or it does not send to and receive from every other rank
//   exactly once. The context is built collectively, from one schedule
//   broadcast to every rank, so these checks give the same answer on every
//   rank: a program compiled for another communicator fails them
//   everywhere. (Only a schedule that is itself incomplete, a tuner bug the
//   verifier rejects, could fail on some ranks and not others.)
// Algorithm: every receive of the program is posted up front (tag
//   kDataTag), so that no send ever waits for its receiver to arrive; then,
//   per RankStep in phase order: wait for one zero-byte notice (tag
//   kSyncTag) from each rank in wait_for; post the send to send_to and wait
//   for it alone; then send a zero-byte notice to each rank in notify
//   (completed at the end), "after message a->b" as in Faraj-Yuan §5 (the
//   planner orders edges by send completion, Schedule::receives_up_front).
//   No barriers. The own block is copied locally; the receives are waited
//   for at the end. (Waiting for the receive too in each step, as this
//   kernel once did, ran the ranks in lock-step: 0.76-0.83 of the bound at
//   >= 64 KiB on the testbed where the links carried 0.86-0.90.)
// When it wins: large messages on multi-switch trees, where unscheduled
//   algorithms collide on inter-switch links: Faraj-Yuan §6 measured
//   1.15-1.3x over LAM and MPICH at >= 64KB on 32 nodes; the phase count
//   equals the bottleneck link's load, the lower bound.
// Limits: one message per rank per phase and the notices' latency, so it
//   loses for small messages (56.5 ms vs 29.7 ms for LAM at 8KB in §6).
// Example (Faraj-Yuan Figure 1, Table 4): 6 ranks, 9 phases; rank 0's step
//   for phase 0 sends to rank 4 and receives from rank 1 (the local message
//   n1->n0), then notifies whichever ranks the planner says must wait for
//   it before reusing a link it used.
#include <fmt/format.h>

#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {
namespace {

// Why `program` cannot run an alltoall as `rank` of `size` ranks; empty when
// it can.
std::string ProgramMismatch(const RankProgram& program, int rank, int size) {
  if (program.rank != rank)
    return fmt::format("tree_scheduled program is for rank {}, not for rank {}", program.rank, rank);
  auto bad_peer = [&](int32_t peer) { return peer < 0 || peer >= size || peer == rank; };
  std::vector<int> sends(size, 0), recvs(size, 0);
  for (const RankStep& step : program.steps) {
    if ((step.send_to != -1 && bad_peer(step.send_to)) || (step.recv_from != -1 && bad_peer(step.recv_from)))
      return fmt::format("tree_scheduled program has a message with a rank outside 0..{} in phase {}", size - 1,
                         step.phase);
    for (const auto* peers : {&step.wait_for, &step.notify})
      for (int32_t peer : *peers)
        if (bad_peer(peer))
          return fmt::format("tree_scheduled program synchronises with rank {} outside 0..{} in phase {}", peer,
                             size - 1, step.phase);
    if (step.send_to != -1) ++sends[step.send_to];
    if (step.recv_from != -1) ++recvs[step.recv_from];
  }
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    if (sends[peer] != 1 || recvs[peer] != 1)
      return fmt::format(
          "tree_scheduled program of rank {} is not an alltoall of {} ranks (sends {} and receives {} "
          "messages with rank {})",
          rank, size, sends[peer], recvs[peer], peer);
  }
  return {};
}

}  // namespace

using alltoall_detail::AlltoallBuffers;

KernelStatus AlltoallTreeScheduled(const AlltoallArgs& args, const KernelContext& ctx) {
  AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (ctx.tree_program == nullptr) return KernelStatus::Fallback("no tree_scheduled program for this communicator");
  if (std::string why = ProgramMismatch(*ctx.tree_program, b.rank(), b.size()); !why.empty())
    return KernelStatus::Fallback(why);
  if (b.empty()) return KernelStatus::Done();

  const MPI_Comm comm = b.comm();
  const int64_t bytes = b.block_bytes();
  std::vector<MPI_Request> recvs, send, notices;
  b.CopyOwnBlock();
  for (const RankStep& step : ctx.tree_program->steps) {
    if (step.recv_from == -1) continue;
    int rc = alltoall_detail::PostRecv(b.recv_block(step.recv_from), bytes, step.recv_from, kDataTag, comm, &recvs);
    if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  }
  for (const RankStep& step : ctx.tree_program->steps) {
    for (int32_t peer : step.wait_for) {
      int rc = MPI_Recv(nullptr, 0, MPI_BYTE, peer, kSyncTag, comm, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
    }
    int rc = MPI_SUCCESS;
    if (step.send_to != -1)
      rc = alltoall_detail::PostSend(b.send_block(step.send_to), bytes, step.send_to, kDataTag, comm, &send);
    if (rc == MPI_SUCCESS) rc = alltoall_detail::WaitAll(&send);
    if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
    for (int32_t peer : step.notify) {
      MPI_Request r;
      if (rc = MPI_Isend(nullptr, 0, MPI_BYTE, peer, kSyncTag, comm, &r); rc != MPI_SUCCESS)
        return KernelStatus::MpiError(rc);
      notices.push_back(r);
    }
  }
  if (int rc = alltoall_detail::WaitAll(&recvs); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  if (int rc = alltoall_detail::WaitAll(&notices); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  return b.Finish();
}

}  // namespace topotune::kernels
