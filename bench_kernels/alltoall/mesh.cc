// alltoall "mesh": message combining along a virtual 2-D mesh (Kalé-Kumar
// 2003, §2.2), with holes when N is not a perfect square.
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h); declines only on intercommunicators.
// Returns: the completed alltoall.
// Algorithm: ranks fill a mesh of C = ceil(sqrt(N)) columns row by row
//   (rank = row * C + column), so rows = ceil(N / C) and the holes are at
//   the end of the top row. Phase 1: each rank sends to every other rank of
//   its row one message combining its blocks for all ranks of that rank's
//   column. Phase 2: each rank sends to every other rank of its column one
//   message combining the blocks (from all sources) that it now holds for
//   that rank. A hole's role is shared by the rest of its column: rank
//   (i, j) sends what hole (i, k) would get to (j % (rows-1), k), so those
//   ranks receive one or two extra messages in phase 1 and the total stays
//   2(C-1) messages per rank. Rows without ranks get nothing; an empty
//   message is never sent (both sides know it is empty).
// When it wins: small messages on many ranks: about 2 sqrt(N) messages per
//   rank instead of N-1 (T ~ 2 sqrt(N) alpha + 2 N m beta, equation 2).
// Limits: every block crosses the network twice (twice the bytes of a
//   direct algorithm), plus local copies to combine and split, so it loses
//   once m beta outweighs alpha.
// Example (the paper's Figure 1): N=14, C=4, rows 4, holes (3,2) and (3,3).
//   Rank 12 = (3,0) sends its blocks for column 1 to rank 13 and, for the
//   hole columns 2 and 3, to ranks 2 and 3 (row 0 % 3 = 0); rank 13 = (3,1)
//   sends its column-2 and column-3 blocks to ranks 6 and 7 (row 1 % 3).
//   In phase 2, rank 2 forwards to ranks 6 and 10 their blocks from ranks
//   0, 1, 2, 3 and 12, and keeps its own.
#include "bench_kernels/alltoall/alltoall_kernels.h"
#include "bench_kernels/alltoall/combining.h"

namespace topotune::kernels {
namespace alltoall_detail {

MeshRoute::MeshRoute(int num_ranks, int columns) : n_(num_ranks), cols_(columns) {
  if (cols_ <= 0) {
    cols_ = 1;
    while (static_cast<int64_t>(cols_) * cols_ < n_) ++cols_;
  }
  rows_ = n_ > 0 ? (n_ + cols_ - 1) / cols_ : 0;
}

int MeshRoute::Holder(int phase, int src, int dst) const {
  if (phase <= 0 || src == dst) return src;
  if (phase >= num_phases()) return dst;
  // Phase 1: along src's row to dst's column, or to the rank sharing the
  // role of the hole there.
  const int row = src / cols_;
  const int col = dst % cols_;
  const int at = row * cols_ + col;
  if (at < n_) return at;
  return ((src % cols_) % (rows_ - 1)) * cols_ + col;
}

void MeshRoute::Arrivals(int phase, int rank, std::vector<BlockId>* out) const {
  if (phase >= 2) {
    for (int s = 0; s < n_; ++s) out->push_back({s, rank});
    return;
  }
  // Phase 1: sources in this rank's row, and in the top row (they send here
  // when the top row has a hole in this column); destinations in its column.
  const int row = rank / cols_;
  const int col = rank % cols_;
  auto add_row = [&](int source_row) {
    for (int s = source_row * cols_; s < n_ && s < (source_row + 1) * cols_; ++s)
      for (int d = col; d < n_; d += cols_) out->push_back({s, d});
  };
  add_row(row);
  if (row != rows_ - 1) add_row(rows_ - 1);
}

}  // namespace alltoall_detail

KernelStatus AlltoallMesh(const AlltoallArgs& args, const KernelContext& ctx) {
  alltoall_detail::AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();
  if (KernelStatus st = alltoall_detail::RunCombining(alltoall_detail::MeshRoute(b.size()), &b); !st.done()) return st;
  return b.Finish();
}

}  // namespace topotune::kernels
