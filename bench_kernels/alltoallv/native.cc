// native
//   Accepts: any MPI_Alltoallv call, including MPI_IN_PLACE and
//            intercommunicators.
//   Returns: whatever the MPI library's own PMPI_Alltoallv returns; never
//            falls back (it is the fallback).
//   Wins:    the baseline every other kernel is measured against; Open MPI
//            4.1 picks linear or pairwise exchange without knowing the
//            switch tree.
//   Limits:  runs on the caller's communicator, not ctx.private_comm: it is
//            exactly the collective a fallback would run, and a collective
//            cannot match the application's point-to-point traffic anyway.
//   Example: 3 ranks, sendcounts {0, 2, 1} on rank 0: Open MPI moves the
//            same bytes as every other kernel, in its own order.
//   Source:  the "LAM/MPICH" baselines of CC-MPI §5 and Faraj-Yuan §6.
#include "bench_kernels/alltoallv/kernels.h"

namespace topotune::kernels {

KernelStatus AlltoallvNative(const AlltoallvArgs& a, const KernelContext& /*ctx*/) {
  int rc = PMPI_Alltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                          a.recvtype, a.comm);
  return rc == MPI_SUCCESS ? KernelStatus::Done() : KernelStatus::MpiError(rc);
}

}  // namespace topotune::kernels
