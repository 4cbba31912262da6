// linear
//   Accepts: any intracommunicator MPI_Alltoallv call: any datatypes
//            (derived ones are packed block by block, displacements in units
//            of the type's extent), zero counts, MPI_IN_PLACE (the outgoing
//            blocks are copied to scratch first), one process.
//   Returns: Done with every block delivered, or an MPI error code.
//   Falls back: on an intercommunicator only, a property of the
//            communicator that every rank sees alike, decided before any
//            communication.
//   Algorithm: post a receive from every rank with data for us, then a send
//            to every rank we have data for, in the order me+1, me+2, ...
//            (mod N) so that ranks do not all start on the same destination;
//            then wait for all of them. Zero-byte blocks are not sent.
//   Wins:    small messages and sparse patterns: one round of latency and
//            no synchronisation, so nothing beats it when contention is light.
//   Limits:  no scheduling: with large messages every rank's NIC receives
//            from up to N-1 senders at once and the switch drops and
//            retransmits (CC-MPI §4.2), which is what the phased kernels fix.
//   Example: 3 ranks, rank 0 sends {-, 5 B, 0 B}: rank 0 posts receives from
//            those that send it data, one 5-byte send to rank 1, and waits.
//   Source:  LAM/MPI's linear alltoall (Faraj-Yuan §6), CC-MPI §4.2 method 1
//            ("simple communication ... with point-to-point routines").
#include "bench_kernels/alltoallv/blocks.h"
#include "bench_kernels/alltoallv/kernels.h"

namespace topotune::kernels {

KernelStatus AlltoallvLinear(const AlltoallvArgs& a, const KernelContext& ctx) {
  bool inter = false;
  int rc = alltoallv_detail::IsIntercomm(a.comm, &inter);
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  if (inter) return KernelStatus::Fallback("intercommunicator");
  MPI_Comm comm = ctx.CommFor(a.comm);
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);

  alltoallv_detail::AlltoallvBytes b;
  rc = b.Init(a, n, me, comm);
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  alltoallv_detail::RequestList reqs;
  for (int i = 1; i < n && rc == MPI_SUCCESS; ++i) {
    int src = (me - i + n) % n;
    rc = reqs.Recv(b.recv.data(src), b.recv.bytes(src), src, comm);
  }
  for (int i = 1; i < n && rc == MPI_SUCCESS; ++i) {
    int dst = (me + i) % n;
    rc = reqs.Send(b.send.data(dst), b.send.bytes(dst), dst, comm);
  }
  int wait_rc = reqs.WaitAll();
  if (rc == MPI_SUCCESS) rc = wait_rc;
  if (rc == MPI_SUCCESS) rc = b.recv.Finish();
  return rc == MPI_SUCCESS ? KernelStatus::Done() : KernelStatus::MpiError(rc);
}

}  // namespace topotune::kernels
