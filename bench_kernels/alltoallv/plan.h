// Level 3 plans for the phased alltoallv kernels (CC-MPI, Karwande-Yuan
// §4.2): what the benchmark driver and the PMPI shim call, once per
// persistent pattern, to fill KernelContext::alltoallv_plan.
//
// Level 1 (greedy_phased, a2a_phased): every call allgathers each rank's row
// of send sizes, so that all ranks hold the same N x N pattern, and schedules
// it. Level 3 (greedy_phased_l3, a2a_phased_l3): the schedule is built once
// by BuildAlltoallvPlan and each call only checks that its pattern is still
// the plan's. (CC-MPI's Level 2, a pattern known locally without the
// allgather, has no kernel of its own: it would need the whole pattern in
// the context, and then Level 3 is cheaper.)
//
// Thread-safety: BuildAlltoallvPlan is as thread-safe as the MPI calls it
// makes; the constant is immutable.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "bench_kernels/kernel.h"

namespace topotune::kernels {

// Small-message threshold of the phased schedules, in bytes: once every
// unscheduled message is smaller than this, the rest go into one final phase
// without node-contention avoidance (CC-MPI: "If the sizes of the remaining
// messages are less than a threshold value, all messages are put in one
// phase"). 1 KiB is below one Ethernet frame's payload, where a message costs
// about its latency and a barrier (tens of microseconds over TCP) costs more
// than the contention it would prevent.
inline constexpr int64_t kAlltoallvSmallThreshold = 1024;

// Builds, collectively over shape.comm, the Level 3 plan for the size
// pattern of `shape`: each rank contributes its sendcounts x type size (or
// recvcounts x recvtype size under MPI_IN_PLACE); buffers are not touched.
// greedy picks greedy_phased, else a2a_phased, with kAlltoallvSmallThreshold.
// Every rank gets the same plan. Returns MPI_SUCCESS, MPI_ERR_COMM on an
// intercommunicator, MPI_ERR_COUNT when a count is negative (on every rank
// alike, since all see the whole pattern), or the error of the allgather.
// *out is owned by the caller and left unchanged on error.
int BuildAlltoallvPlan(const AlltoallvArgs& shape, bool greedy, AlltoallvPlan* out);

}  // namespace topotune::kernels
