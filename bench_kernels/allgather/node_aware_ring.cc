// node_aware_ring
//   Accepts: an intracommunicator MPI_Allgather call and a context with
//            HostProgramOf("node_aware_ring"): the HostProgram that CompileHostProgram(
//            NodeAwareRing(tree), HostIndexOfRanks(tree), rank) made for this
//            rank (tuner/node_aware_ring.h, tuner/host_program.h), and
//            host_segments for its host's memory; any datatypes, zero counts,
//            MPI_IN_PLACE, one process.
//   Returns: Done with every block in place, or an MPI error code.
//   Falls back: on an intercommunicator, without a program, when the program
//            does not fit the communicator, or when the ranks the plan puts
//            on one host do not share memory (decided once per communicator
//            and agreed by all ranks; host_segments.h).
//   Algorithm: each host keeps one stream of N blocks in shared memory, in
//            the order of schedule.h's allgather rule: each rank copies its
//            block to its local index; host barrier; every receive posted up
//            front, then per phase the host's lowest rank sends the next
//            range of the stream to the next host of the switch-ordered host
//            ring and waits for that phase's messages (it forwards only
//            blocks it received itself, so no rank waits on another);
//            host barrier; each rank copies the stream into its receive
//            buffer by origin; host barrier before the stream is reused.
//   Wins:    many ranks per host: a host's blocks cross each link as a few
//            large messages, one per link direction per phase, where the
//            rank-level switch-ordered ring sends N-1 small ones
//            (2 x 16 x 16 at 64 KiB: 31 phases and 0.944 of the bound, against
//            511 phases and 0.497).
//   Limits:  a block takes H-1 host hops; three host barriers per call; one
//            rank per host drives the network.
//   Example: hosts A = {0, 2}, B = {1}: A's stream is 0, 2, 1; A sends B
//            blocks 0, 2 in one message; B sends A block 1.
//   Source:  Jacunski §4.2, §5.1 for the switch-ordered ring, here over hosts.
#include <cstring>

#include "bench_kernels/allgather/gather_buffer.h"
#include "bench_kernels/allgather/kernels.h"
#include "bench_kernels/host_segments.h"
#include "bench_kernels/phase_trace.h"

namespace topotune::kernels {

KernelStatus AllgatherNodeAwareRing(const AllgatherArgs& a, const KernelContext& ctx) {
  allgather_detail::KernelComm c;
  if (auto st = allgather_detail::BeginAllgather(a, ctx, &c)) return *st;
  const HostProgram* program = ctx.HostProgramOf("node_aware_ring");
  if (program == nullptr || !program->allgather || ctx.host_segments == nullptr)
    return KernelStatus::Fallback("no node_aware_ring host program for this communicator");
  const HostProgram& prog = *program;
  HostSegments& seg = *ctx.host_segments;
  if (KernelStatus st = seg.Prepare(c.comm, prog); !st.done()) return st;
  allgather_detail::GatherBuffer g;
  int rc = g.Init(a, c.n, c.me, c.comm);
  if (rc != MPI_SUCCESS || g.block_bytes() == 0) return allgather_detail::StatusFrom(rc);

  const int64_t bytes = static_cast<int64_t>(g.block_bytes());
  PhaseTrace* trace = ctx.phase_trace;
  Mark(trace, TraceEvent::kEnter, prog.host_of_rank[c.me]);
  if (rc = seg.Reserve(c.n * bytes); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  char* stream = seg.base();
  std::memcpy(stream + prog.local_index[c.me] * bytes, g.block(c.me), g.block_bytes());
  Mark(trace, TraceEvent::kCopiedIn);
  rc = seg.Barrier();
  Mark(trace, TraceEvent::kGathered);
  if (rc == MPI_SUCCESS) rc = RunHostTransfers(prog, stream, stream, bytes, c.comm, HostSegments::Pace{}, trace);
  if (rc == MPI_SUCCESS) rc = seg.Barrier();
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  Mark(trace, TraceEvent::kExchanged);
  for (int k = 0; k < c.n; ++k) std::memcpy(g.block(prog.stream_origin[k]), stream + k * bytes, g.block_bytes());
  Mark(trace, TraceEvent::kCopiedOut);
  if (rc = seg.Barrier(); rc == MPI_SUCCESS) {
    Mark(trace, TraceEvent::kDone);
    rc = g.Finish();
  }
  return allgather_detail::StatusFrom(rc);
}

}  // namespace topotune::kernels
