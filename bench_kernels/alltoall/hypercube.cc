// alltoall "hypercube": dimensional exchange over a virtual hypercube
// (Kalé-Kumar 2003, §2.4), imperfect when N is not a power of two.
//
// Accepts: any intracommunicator, datatypes, MPI_IN_PLACE (see
//   alltoall_buffers.h); declines only on intercommunicators.
// Returns: the completed alltoall.
// Algorithm: Q = the largest power of two <= N, log2 Q phases. In the phase
//   for bit b, rank r < Q sends to r XOR 2^b, in one message, every block it
//   holds whose destination differs from r in bit b (the destination's
//   partner dst - Q standing in for a destination outside the cube); after
//   the last bit every block sits at its destination or that partner. When
//   N > Q, the ranks e >= Q first send all their blocks (except their own)
//   to their partner e - Q in the lower cube, take no part in the exchange,
//   and at the end get from e - Q every block for them.
// When it wins: the smallest messages on many ranks: log2 N messages per
//   rank (T = log2 N (alpha + N/2 m beta), equation 5).
// Limits: each phase moves half of everything a rank holds, so the network
//   carries log2(N)/2 times the data of a direct algorithm; in an imperfect
//   cube the partners of extra ranks carry twice the data and the extras
//   add two phases (equation 6).
// Example (the paper's Figure 3): N=9, Q=8: rank 8 sends its 8 blocks for
//   ranks 0..7 to rank 0; ranks 0..7 run 3 exchange phases (bit 0 first: rank
//   0 sends rank 1 its blocks, and rank 8's, for ranks 1, 3, 5 and 7), in
//   which rank 8's blocks travel with rank 0's and the blocks for rank 8
//   gather at rank 0; then rank 0 sends rank 8 the 8 blocks from ranks 0..7.
#include "bench_kernels/alltoall/alltoall_kernels.h"
#include "bench_kernels/alltoall/combining.h"

namespace topotune::kernels {
namespace alltoall_detail {

HypercubeRoute::HypercubeRoute(int num_ranks) : n_(num_ranks), q_(1), dims_(0), extra_(0) {
  while (static_cast<int64_t>(q_) * 2 <= n_) {
    q_ *= 2;
    ++dims_;
  }
  extra_ = n_ > q_ ? 1 : 0;
}

int HypercubeRoute::Holder(int phase, int src, int dst) const {
  if (phase <= 0 || src == dst) return src;
  if (phase >= num_phases()) return dst;
  const int in_cube_src = src < q_ ? src : src - q_;
  const int in_cube_dst = dst < q_ ? dst : dst - q_;
  const int bits_done = phase - extra_;  // Exchange phases completed.
  if (bits_done <= 0) return in_cube_src;
  const int mask = (1 << bits_done) - 1;
  return (in_cube_src & ~mask) | (in_cube_dst & mask);
}

void HypercubeRoute::Arrivals(int phase, int rank, std::vector<BlockId>* out) const {
  if (extra_ && phase == 1) {
    // Extra rank rank + Q hands over all its blocks.
    if (rank + q_ < n_)
      for (int d = 0; d < n_; ++d) out->push_back({rank + q_, d});
    return;
  }
  if (extra_ && phase == num_phases()) {
    if (rank >= q_)
      for (int s = 0; s < n_; ++s) out->push_back({s, rank});
    return;
  }
  if (rank >= q_) return;
  // Exchange of bit b with partner p: the blocks p holds (its high bits from
  // the source, bits below b from the destination) whose destination has
  // this rank's bit b.
  const int b = phase - extra_ - 1;
  const int bit = 1 << b;
  const int partner = rank ^ bit;
  const int low = bit - 1;
  for (int lo = 0; lo <= low; ++lo) {
    const int cube_src = (partner & ~low) | lo;
    for (int s = cube_src; s < n_; s += q_) {
      for (int hi = 0; hi < (1 << (dims_ - b - 1)); ++hi) {
        const int cube_dst = (hi << (b + 1)) | (rank & bit) | (partner & low);
        for (int d = cube_dst; d < n_; d += q_) out->push_back({s, d});
      }
    }
  }
}

}  // namespace alltoall_detail

KernelStatus AlltoallHypercube(const AlltoallArgs& args, const KernelContext& ctx) {
  alltoall_detail::AlltoallBuffers b;
  if (KernelStatus st = b.Init(args, ctx); !st.done()) return st;
  if (b.empty()) return KernelStatus::Done();
  if (KernelStatus st = alltoall_detail::RunCombining(alltoall_detail::HypercubeRoute(b.size()), &b); !st.done())
    return st;
  return b.Finish();
}

}  // namespace topotune::kernels
