// alltoall "native": the MPI library's own MPI_Alltoall (Open MPI's coll
// framework, through PMPI_Alltoall so that the PMPI shim does not recurse).
//
// Accepts: everything MPI_Alltoall accepts, intercommunicators included.
// Returns: whatever the library returns; never declines.
// When it wins: it is the baseline every other kernel is measured against,
//   and Open MPI's tuned component already switches between linear,
//   pairwise and Bruck by size (Faraj-Yuan §6 compares against LAM and MPICH).
// Limits: topology-oblivious.
// Example: 4 ranks, 1 int per block: identical results to MPI_Alltoall,
//   because it is MPI_Alltoall.
// Runs on ctx.CommFor(comm), the private duplicate when there is one.
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {

KernelStatus AlltoallNative(const AlltoallArgs& args, const KernelContext& ctx) {
  int rc = PMPI_Alltoall(args.sendbuf, args.sendcount, args.sendtype, args.recvbuf, args.recvcount, args.recvtype,
                         ctx.CommFor(args.comm));
  return rc == MPI_SUCCESS ? KernelStatus::Done() : KernelStatus::MpiError(rc);
}

}  // namespace topotune::kernels
