// alltoall "capacity_scheduled": runs the host-combined, capacity-respecting
// schedule of tuner/capacity_scheduled.h (Faraj-Yuan §4-§5 extended to many
// ranks per host and links of any speed) through shared memory.
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h), and ctx.HostProgramOf("capacity_scheduled"): the
//   HostProgram that CompileHostProgram(CapacityScheduled(tree),
//   HostIndexOfRanks(tree), rank) made for this rank, with
//   ctx.host_segments to hold its host's memory.
// Returns: the completed alltoall.
// Declines (before touching a buffer) on an intercommunicator, without a
//   program, when the program does not fit the communicator (another rank,
//   size, or a message outside the host layout), or when the ranks the plan
//   puts on one host do not share memory (decided once per communicator and
//   agreed by all ranks; host_segments.h).
// Algorithm (tuner/host_program.h gives the layout): each rank copies its N
//   blocks into its host's send segment (one section per destination host,
//   origin-major); host barrier; every receive posted up front, then per
//   phase this rank's sends of whole ranges of the segment (several blocks
//   and several messages per phase), waiting for the phase's sends and
//   receives; host barrier; each rank copies its N blocks out (its own
//   host's straight from the send segment); host barrier, so that the next
//   call does not overwrite what a slower rank still reads.
// Pace: between hosts, and inside a host too, each rank keeps its own pace:
//   a rank with nothing to do in a phase goes on to its next one, so a
//   phase's messages may overlap the next phase's on a host's link.
//   capacity_lockstep (capacity_lockstep.cc) runs the same program with the
//   host's ranks in step; the tuner measures both.
// When it wins: many ranks per host and uplinks faster than host links: a
//   host pair's r_H x r_G blocks travel as a few large messages, packed up to
//   every link's capacity, where rank-level algorithms send N^2 small ones
//   and overrun the uplinks (the 2 x 16 x 16 example: 0.13 of the
//   bound for tree_scheduled, 64x overruns for ring and pairwise).
// Limits: shared segments of 2 x r_H x N blocks per host; three host
//   barriers per call, so small messages are better served by bruck.
// Example: ranks 0, 2 on host 0 and 1 on host 1: host 0's send segment holds
//   section 0 (0->0, 0->2, 2->0, 2->2) then section 1 (0->1, 2->1); one
//   message carries both blocks of section 1 to rank 1.
#include <fmt/format.h>

#include <cstring>

#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/alltoall/alltoall_kernels.h"
#include "bench_kernels/host_segments.h"

namespace topotune::kernels {

using alltoall_detail::AlltoallBuffers;

KernelStatus AlltoallCapacityScheduled(const AlltoallArgs& args, const KernelContext& ctx) {
  return alltoall_detail::RunCapacityProgram(args, ctx, "capacity_scheduled", /*lockstep=*/false);
}

namespace alltoall_detail {

KernelStatus RunCapacityProgram(const AlltoallArgs& args, const KernelContext& ctx, std::string_view kernel,
                                bool lockstep) {
  AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  const HostProgram* program = ctx.HostProgramOf(kernel);
  if (program == nullptr || program->allgather || ctx.host_segments == nullptr)
    return KernelStatus::Fallback(fmt::format("no {} host program for this communicator", kernel));
  const HostProgram& prog = *program;
  HostSegments& seg = *ctx.host_segments;
  if (KernelStatus st = seg.Prepare(b.comm(), prog); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();

  const int n = b.size(), me = b.rank();
  const int64_t bytes = b.block_bytes();
  const int h = prog.host_of_rank[me];
  PhaseTrace* trace = ctx.phase_trace;
  Mark(trace, TraceEvent::kEnter, h);
  const int64_t rh = prog.host_size(h), l = prog.local_index[me];
  const int64_t segment = rh * n * bytes;
  if (int rc = seg.Reserve(2 * segment); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  char* send = seg.base();
  char* recv = send + segment;
  for (int d = 0; d < n; ++d) {
    const int g = prog.host_of_rank[d];
    const int64_t at = rh * prog.first_rank_of_host[g] + l * prog.host_size(g) + prog.local_index[d];
    std::memcpy(send + at * bytes, b.send_block(d), static_cast<size_t>(bytes));
  }
  Mark(trace, TraceEvent::kCopiedIn);
  int rc = seg.Barrier();
  Mark(trace, TraceEvent::kGathered);
  if (rc == MPI_SUCCESS)
    rc = RunHostTransfers(prog, send, recv, bytes, b.comm(), lockstep ? seg.Together(prog) : HostSegments::Pace{},
                          trace);
  if (rc == MPI_SUCCESS) rc = seg.Barrier();
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  Mark(trace, TraceEvent::kExchanged);
  for (int o = 0; o < n; ++o) {
    const int g = prog.host_of_rank[o];
    const int64_t at = rh * prog.first_rank_of_host[g] + prog.local_index[o] * rh + l;
    std::memcpy(b.recv_block(o), (g == h ? send : recv) + at * bytes, static_cast<size_t>(bytes));
  }
  Mark(trace, TraceEvent::kCopiedOut);
  if (rc = seg.Barrier(); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  Mark(trace, TraceEvent::kDone);
  return b.Finish();
}

}  // namespace alltoall_detail

}  // namespace topotune::kernels
