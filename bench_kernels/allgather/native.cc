// native
//   Accepts: any MPI_Allgather call, including MPI_IN_PLACE and
//            intercommunicators.
//   Returns: whatever the MPI library's own PMPI_Allgather returns; never
//            falls back (it is the fallback).
//   Wins:    the baseline: Open MPI 4.1 picks recursive doubling, Bruck,
//            ring or neighbour exchange by size, blind to the switch tree.
//   Limits:  runs on the caller's communicator, not ctx.private_comm: it is
//            exactly the collective a fallback would run, and a collective
//            cannot match the application's point-to-point traffic anyway.
//   Example: 4 ranks, 1 KiB each: every rank ends with the same 4 KiB.
//   Source:  the RO-R baseline (MPICH's default) of Jacunski §5.
#include "bench_kernels/allgather/kernels.h"

namespace topotune::kernels {

KernelStatus AllgatherNative(const AllgatherArgs& a, const KernelContext& /*ctx*/) {
  int rc = PMPI_Allgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype, a.comm);
  return rc == MPI_SUCCESS ? KernelStatus::Done() : KernelStatus::MpiError(rc);
}

}  // namespace topotune::kernels
