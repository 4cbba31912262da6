// Shared machinery of the phased alltoallv kernels (CC-MPI Level 1 and
// Level 3, Karwande-Yuan §4.2); see plan.h for the public part.
//
// Phases are separated by barriers, as in CC-MPI, whose measurements and
// small-message trade-off assume them. Ordering by point-to-point completion
// alone (a rank starts phase p+1 once its own phase-p messages are done)
// would not keep phases apart: a rank done early would send its phase-p+1
// message into a NIC still receiving a phase-p one. Pair-wise
// synchronisation that does keep them apart (Faraj-Yuan §5, as the alltoall
// tree_scheduled kernel does) needs a synchronisation plan per pattern:
// affordable at Level 3, a per-call cost at Level 1; it is a possible
// variant, not implemented here. A barrier costs about log2(N) latencies;
// the small-message threshold keeps their number down when the tail of the
// pattern is small.
//
// Thread-safety: as the MPI calls they make.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_kernels/alltoallv/plan.h"
#include "bench_kernels/kernel.h"
#include "tuner/alltoallv_schedules.h"
#include "tuner/status.h"

namespace topotune::kernels::alltoallv_detail {

// Allgathers each rank's send row: (*pattern)[src * n + dst] = bytes.
int GatherSizePattern(const AlltoallvArgs& a, MPI_Comm comm, int n, std::vector<int64_t>* pattern);

// Schedules a flat n x n pattern (greedy_phased or a2a_phased).
StatusOr<PhasedAlltoallv> SchedulePattern(const std::vector<int64_t>& pattern, int n, bool greedy);

// Why `plan` cannot serve this rank's part of the call `a` ("" when it
// can): missing, built by the other scheduler, for another rank count, or
// for a pattern whose row `me` (what we send) or column `me` (what we
// receive) differs from this call's, off the diagonal. A local answer: the
// kernels combine it over all ranks before deciding.
std::string PlanMismatch(const AlltoallvPlan* plan, bool greedy, const AlltoallvArgs& a, int n, int me);

// Runs the phases of `phased` on comm: this rank's copy to itself first,
// then per phase its sends and receives (at most one of each, except in a
// final small-message phase), waited for, and a barrier before the next
// phase. Returns an MPI error code.
int ExecutePhased(const PhasedAlltoallv& phased, const AlltoallvArgs& a, MPI_Comm comm);

// The Level 1 and Level 3 kernels, parameterised by the scheduler.
KernelStatus PhasedLevel1(const AlltoallvArgs& a, const KernelContext& ctx, bool greedy);
KernelStatus PhasedLevel3(const AlltoallvArgs& a, const KernelContext& ctx, bool greedy);

}  // namespace topotune::kernels::alltoallv_detail
