// alltoall "grid3d": message combining along a virtual 3-D grid (Kalé-Kumar
// 2003, §2.3), with holes when N is not a perfect cube.
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h); declines only on intercommunicators.
// Returns: the completed alltoall.
// Algorithm: side D = ceil(cbrt(N)), rank = x + D*y + D*D*z, planes
//   z = 0 .. ceil(N / D^2) - 1, so the holes are at the end of the last
//   plane. Phase 1 (X): each rank sends to each other rank of its X line the
//   blocks for the plane x = that rank's x. Phase 2 (Y): along the Y line,
//   the blocks for the Z column (x, y') of that rank. Phase 3 (Z): along the
//   Z column, each rank its own blocks. A hole is played by the rank below
//   it in the penultimate plane: whatever would go to the hole in phases 1
//   and 2 goes there, and that rank forwards it in the next phase as the
//   hole would. Planes without ranks get nothing, and an empty message is
//   never sent. With a single plane (N <= D^2: N = 2, 3, 4, 9) the grid is
//   a 2-D mesh and holes are handled as in the mesh (the paper's rule; the
//   mesh's column count ceil(sqrt(N)) is then D).
// When it wins: small messages on many ranks, between mesh and hypercube:
//   about 3 cbrt(N) messages per rank (T ~ 3 cbrt(N) alpha + 3 N m beta,
//   equation 3; plus one alpha and 2 N m beta with holes, equation 4).
// Limits: every block crosses the network up to three times.
// Example: N=10: D=3, planes 2 (ranks 0-8 in plane 0, rank 9 = (0,0,1) in
//   plane 1). Rank 9's X line is all holes, so in phase 1 it sends its
//   blocks for x=1 to rank 1 and for x=2 to rank 2 (the ranks below the
//   holes (1,0,1) and (2,0,1)); rank 1 forwards them in phase 2 as hole
//   (1,0,1) would, to ranks 4 and 7 (below holes (1,1,1) and (1,2,1)), which
//   are those blocks' destinations. A block for rank 9 from rank 5 = (2,1,0)
//   goes to rank 3 = (0,1,0), then rank 0 = (0,0,0), then up to rank 9.
#include "bench_kernels/alltoall/alltoall_kernels.h"
#include "bench_kernels/alltoall/combining.h"

namespace topotune::kernels {
namespace alltoall_detail {
namespace {

int CubeSide(int n) {
  int d = 1;
  while (static_cast<int64_t>(d) * d * d < n) ++d;
  return d;
}

}  // namespace

GridRoute::GridRoute(int num_ranks)
    : n_(num_ranks),
      d_(CubeSide(num_ranks)),
      planes_(num_ranks > 0 ? (num_ranks + d_ * d_ - 1) / (d_ * d_) : 0),
      flat_(num_ranks, d_) {}

int GridRoute::num_phases() const {
  if (n_ <= 1) return 0;
  return planes_ == 1 ? flat_.num_phases() : 3;
}

int GridRoute::Host(int x, int y, int z) const {
  const int at = x + d_ * y + d_ * d_ * z;
  return at < n_ ? at : x + d_ * y + d_ * d_ * (planes_ - 2);
}

int GridRoute::Holder(int phase, int src, int dst) const {
  if (planes_ == 1) return flat_.Holder(phase, src, dst);
  if (phase <= 0 || src == dst) return src;
  if (phase >= 3) return dst;
  const int sy = (src / d_) % d_, sz = src / (d_ * d_);
  const int dx = dst % d_, dy = (dst / d_) % d_;
  return phase == 1 ? Host(dx, sy, sz) : Host(dx, dy, sz);
}

void GridRoute::Arrivals(int phase, int rank, std::vector<BlockId>* out) const {
  if (planes_ == 1) return flat_.Arrivals(phase, rank, out);
  if (phase >= 3) {
    for (int s = 0; s < n_; ++s) out->push_back({s, rank});
    return;
  }
  const int plane = d_ * d_;
  const int gx = rank % d_, gy = (rank / d_) % d_, gz = rank / plane;
  // The positions this rank plays: itself, and the hole above it.
  int zs[2] = {gz, -1};
  if (gz == planes_ - 2 && gx + d_ * gy + plane * (planes_ - 1) >= n_) zs[1] = planes_ - 1;
  for (int z : zs) {
    if (z < 0) continue;
    if (phase == 1) {
      // Sources on the X line (., gy, z); destinations in the plane x = gx.
      for (int sx = 0; sx < d_; ++sx) {
        const int s = sx + d_ * gy + plane * z;
        if (s >= n_) continue;
        for (int d = gx; d < n_; d += d_) out->push_back({s, d});
      }
    } else {
      // Sources in plane z; destinations in the Z column (gx, gy).
      for (int s = plane * z; s < n_ && s < plane * (z + 1); ++s)
        for (int d = gx + d_ * gy; d < n_; d += plane) out->push_back({s, d});
    }
  }
}

}  // namespace alltoall_detail

KernelStatus AlltoallGrid3d(const AlltoallArgs& args, const KernelContext& ctx) {
  alltoall_detail::AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();
  if (KernelStatus st = alltoall_detail::RunCombining(alltoall_detail::GridRoute(b.size()), &b); !st.done()) return st;
  return b.Finish();
}

}  // namespace topotune::kernels
