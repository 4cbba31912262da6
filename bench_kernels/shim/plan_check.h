// Checks what the daemon sends a job before any rank runs it. A plan comes
// from the network: a malformed one (a table with a gap, an algorithm no
// kernel has, programs that would deadlock or move the wrong blocks) must
// turn into the MPI library's own collectives, never into a hung or wrong
// job. So the shim checks every plan here, on the rank that received it,
// before handing out a byte:
//
//   * CheckPlan: the response matches the request (ranks, collectives) and
//     each decision table (alltoallv's per pattern class too: skewed and
//     sparse, each at most once) is contiguous from 0 and names kernels of
//     the registry; the compiled schedules and ring orders the table's
//     kernels need are there and well formed.
//   * Host programs (capacity_scheduled, node_aware_ring) are decoded by
//     HostTransfersFromProto against the schedule's host layout. Allgather
//     ones are run together by SimulateHostPrograms (tuner/host_program.h),
//     which moves block ids as the kernel moves bytes and fails on any block
//     that ends in the wrong place (at most 4096 ranks); alltoall ones are
//     checked by CheckAlltoallHostPrograms, the same verdict from their
//     structure at any size (O(messages log messages)).
//   * CheckPrograms: an independent verifier of compiled per-rank programs.
//     It runs all programs together in a model of the kernel's execution
//     (tree_scheduled.cc: every receive posted up front; per step, wait for
//     notices, send and complete the send, notify), where a send completes
//     once its receiver has posted the matching receive (rendezvous, the
//     strictest protocol; here always, since receives are posted first),
//     and notices never block. The programs pass when every rank reaches its
//     end, every notice sent is awaited, and every ordered pair of distinct
//     ranks exchanges exactly one block.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench_kernels/alltoallv/pattern_class.h"
#include "bench_kernels/kernel.h"
#include "topotune/v1/plans.pb.h"
#include "tuner/host_program.h"
#include "tuner/rank_program.h"
#include "tuner/status.h"

namespace topotune::shim {

// One row of a checked decision table: `kernel` runs for message sizes from
// min_msize up to the next row's.
struct TableRow {
  int64_t min_msize = 0;
  const kernels::KernelInfo* kernel = nullptr;
};

// The kernel registry's collective of a protocol collective; false for
// UNSPECIFIED or an unknown value.
bool ToKernelCollective(v1::Collective c, kernels::Collective* out);

// The library's class of a protocol alltoallv pattern; false for RANDOM
// (not a class) and UNSPECIFIED or an unknown value.
bool ToPatternClass(v1::AlltoallvPattern p, kernels::PatternClass* out);

// A table as rows: ranges in order, contiguous, the first at 0, the last
// without end, every algorithm a kernel of `collective`.
StatusOr<std::vector<TableRow>> CheckTable(kernels::Collective collective, const v1::DecisionTable& table);

// A program of the wire decoded, with every rank it names in [0, nprocs),
// none equal to its own rank, and phases strictly increasing.
StatusOr<RankProgram> ProgramFromProto(const v1::RankProgram& wire, int nprocs);

// See the header comment. programs[r].rank must be r.
Status CheckPrograms(std::span<const RankProgram> programs);

// A host program of the wire (capacity_scheduled, node_aware_ring) with its
// schedule's host list: hosts numbered by their lowest rank, every peer a
// rank of another host, phases in order, ranges inside the host's segment,
// an allgather stream of one entry per rank.
StatusOr<HostProgram> HostProgramFromProto(const v1::RankProgram& wire,
                                           const google::protobuf::RepeatedField<int32_t>& host_of_rank,
                                           bool allgather);
// The same checks with the layout built once (SetHostLayout), for decoding
// every rank's program: the result has the transfers and the allgather
// stream but no layout of its own (O(program), not O(N)).
StatusOr<HostProgram> HostTransfersFromProto(const v1::RankProgram& wire, const HostProgram& layout, bool allgather);

// A ring order: a permutation of 0..nprocs-1, and one non-negative switch
// index per rank.
Status CheckRing(const v1::RingOrder& ring, int nprocs);

// The whole response to a GetPlan for `nprocs` ranks and `collectives` (in
// request order), programs included (as rank 0 of the job receives it).
// Programs may be absent only with an omitted_reason.
Status CheckPlan(const v1::GetPlanResponse& plan, int nprocs, std::span<const v1::Collective> collectives);

}  // namespace topotune::shim
