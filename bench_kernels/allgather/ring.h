// The ring allgather over a rank order, shared by ring (rank order) and
// switch_ordered_ring (a depth-first order of the switch tree).
//
// In step i = 0..N-2, the rank at ring position p sends block
// order[(p - i) mod N] to order[p + 1] and receives block
// order[(p - i - 1) mod N] from order[p - 1]: the block it received in the
// previous step, as in Jacunski Figure 3.
//
// Thread-safety: as the MPI calls it makes.
#pragma once

#include <mpi.h>

#include <vector>

#include "bench_kernels/allgather/gather_buffer.h"

namespace topotune::kernels::allgather_detail {

// `order` must be a permutation of 0..n-1, the same on every rank; nullptr
// means rank order. Returns an MPI error code; the caller calls Finish().
inline int RingAllgather(GatherBuffer& g, const std::vector<int>* order, const KernelComm& c) {
  const int n = c.n;
  if (n == 1 || g.block_bytes() == 0) return MPI_SUCCESS;
  auto at = [&](int pos) { return order ? (*order)[pos] : pos; };
  int p = c.me;
  if (order) {
    for (int i = 0; i < n; ++i)
      if ((*order)[i] == c.me) p = i;
  }
  const int next = at((p + 1) % n), prev = at((p - 1 + n) % n);
  RequestList reqs;
  for (int i = 0; i < n - 1; ++i) {
    int rc = reqs.Recv(g.block(at((p - i - 1 + 2 * n) % n)), g.block_bytes(), prev, c.comm);
    if (rc == MPI_SUCCESS) rc = reqs.Send(g.block(at((p - i + n) % n)), g.block_bytes(), next, c.comm);
    int wait_rc = reqs.WaitAll();
    if (rc == MPI_SUCCESS) rc = wait_rc;
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace topotune::kernels::allgather_detail
